package pkbf

import (
	"runtime/debug"

	"github.com/pkbf/pkbf/internal/probe"
	"github.com/pkbf/pkbf/internal/xxh64"
)

// Probably reports whether spki, a DER SubjectPublicKeyInfo, is probably in
// the filter. False is definite: those bytes were never added. True means
// they were added or are a false positive; confirm it online. It does not
// allocate, is safe for concurrent use, and on a Writable sees every key
// whose Add has returned.
//
// On a filter from [Open] or [Edit] whose file was cut short while in use
// (copied over, truncated, or on a file system too full to back it), a
// query that touches the lost part panics with an error wrapping
// [ErrFileChanged], which a caller may recover, where the Go runtime would
// end the program on the memory fault.
func (c *core) Probably(spki []byte) bool {
	if c.mapped != nil {
		return c.probablyMapped(spki)
	}
	return c.probably(spki)
}

// probablyMapped is probably on a file's mapping: a fault there becomes a
// panic with an ErrFileChanged error instead of the end of the program.
func (c *core) probablyMapped(spki []byte) bool {
	defer c.mapped.CatchFault(debug.SetPanicOnFault(true))
	return c.probably(spki)
}

func (c *core) probably(spki []byte) bool {
	if c.data == nil {
		panic("pkbf: query on a closed Filter")
	}
	// Both hashes first, then the k loads with no test between them: the
	// loads overlap one another (out of cache, in one round trip to
	// memory) and the next key's hashing. Testing h1's bit before the
	// second hash would save a key not in the filter half the hashing
	// half the time, but would cost every key in the filter a branch
	// between the hashes; keys in the filter are the ones that matter
	// most, as every one is confirmed online.
	h1, h2 := probe.Hashes(spki)
	return c.probe(h1, h2)
}

// One query path serves a Filter and a Writable: plain loads of the data,
// also while Add sets a Writable's bits with atomic ORs of 32-bit words.
// Under Go's memory model a read of a location no larger than a machine
// word observes some value written to it, never a torn one: a byte reads
// as before or after an OR, and a bit once set stays set, so a key whose
// Add happened before the query is seen whole. The race detector would
// report those loads: in its builds a Writable's are atomic (race.go).

// probe tests the k positions of a key with base hashes h1 and h2. The
// positions depend only on the hashes, never on a loaded bit, so the CPU
// issues the loads together: on a filter far larger than the caches they
// overlap instead of waiting one after another. It tests the bits four at
// a time, with one branch for the four: a key whose bits are all set (a
// key in the filter) costs k/4 branches instead of k, and a key not in it
// at most three loads more than it needed, which a mispredicted branch a
// bit would cost more than. A bit costs four instructions beyond its load
// (see shiftedBit).
func (c *core) probe(h1, h2 uint64) bool {
	data, k, shared := c.data, c.k, c.shared
	if len(data) == 0 {
		return false
	}
	last := uint64(len(data) - 1)
	x, y, i := h1, h2, uint64(0) // position i before the reduction mod m, the step to the next (see probe.Step)
	for ; i+4 <= k; i += 4 {
		x0 := x
		x, y = probe.Step(x, y, i)
		x1 := x
		x, y = probe.Step(x, y, i+1)
		x2 := x
		x, y = probe.Step(x, y, i+2)
		x3 := x
		x, y = probe.Step(x, y, i+3)
		if shiftedBit(data, last, x0, shared)&shiftedBit(data, last, x1, shared)&shiftedBit(data, last, x2, shared)&shiftedBit(data, last, x3, shared)&0x80 == 0 {
			return false
		}
	}
	for ; i < k; i++ {
		if shiftedBit(data, last, x, shared)&0x80 == 0 {
			return false
		}
		x, y = probe.Step(x, y, i)
	}
	return true
}

// minBatch is the smallest batch probed as a batch (a key alone would wait
// a round a bit), twice it the smallest hashed as a run in the caches; there
// without the vector hashes, rounds pay only from 64 keys.
const minBatch, minRoundsInCache = 4, 64

// rounds reports whether ProbablyBatch answers n keys in rounds.
func (c *core) rounds(n int) bool {
	return n >= minBatch && c.large || n >= minRoundsInCache && !xxh64.Vector()
}

// ProbablyBatch sets out[i] = Probably(spkis[i]) for every i: exactly the
// same answers, computed together. Most batches read their keys in runs,
// one stretch each, so that keys not in the caches (a large slice, a page
// just read) stream in from memory. On a filter past 4 MiB it overlaps
// the memory latency of many keys (one key cannot: see Probably),
// fetching their bits in bursts, more at once the more bits earlier
// batches' keys needed, and hashes a key the second time only if its
// first bit is set; batches of a few hundred keys or more gain the most.
// out must be at least as long as spkis; ProbablyBatch panics otherwise.
// It does not allocate, is safe for concurrent use, and panics as
// Probably does on a closed filter or a file cut short.
func (c *core) ProbablyBatch(spkis [][]byte, out []bool) {
	if len(out) < len(spkis) {
		panic("pkbf: ProbablyBatch: out is shorter than spkis")
	}
	if c.data == nil {
		panic("pkbf: query on a closed Filter")
	}
	if c.mapped != nil {
		defer c.mapped.CatchFault(debug.SetPanicOnFault(true))
	}
	if c.rounds(len(spkis)) {
		// Written out here, not given to a function per filter type: a
		// function value would move the caller's slices to the heap.
		for len(spkis) > 0 {
			n := min(len(spkis), probe.MaxKeys)
			mean := c.batchVisits.Load()
			whole, depth := probe.Plan(mean, c.k)
			var visits uint64
			if whole {
				for i, s := range spkis[:n] {
					out[i] = c.probably(s)
				}
				visits = probe.WholeVisits(out[:n], c.k)
			} else {
				visits = c.probeRounds(spkis[:n], out[:n], depth)
			}
			probe.Fold(&c.batchVisits, mean, visits, n)
			spkis, out = spkis[n:], out[n:]
		}
		return
	}
	if !xxh64.Vector() || len(spkis) < 2*minBatch { // a run's arrays cost more
		for i, s := range spkis {
			out[i] = c.probably(s)
		}
		return
	}
	// In cache, with the vector hashes: a run hashed four keys abreast, then probed.
	var h1, h2 [probe.HashRun]uint64
	probe.PrefetchFirst(spkis)
	for i := 0; i < len(spkis); i += probe.HashRun {
		n := min(len(spkis)-i, probe.HashRun)
		probe.HashBlock(spkis, i, n, h1[:], h2[:])
		for j := range n {
			out[i+j] = c.probe(h1[j], h2[j]|1)
		}
	}
}

// probeRounds is ProbablyBatch's rounds (internal/probe); it returns the
// bits the keys needed tested in turn.
func (c *core) probeRounds(spkis [][]byte, out []bool, depth int) uint64 {
	data, shared := c.data, c.shared
	last := uint64(len(data) - 1) // == mask>>3, as in probe
	var r probe.Rounds
	r.Start(spkis, c.mask, c.k, depth, probe.Base(data))
	for {
		bits := r.Bits[:]
		for i, p := range r.Hash(spkis) {
			bits[i] = bit(data, last, p, shared)
		}
		if !r.Next(spkis, out) {
			return r.Visits
		}
	}
}
