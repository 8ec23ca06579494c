package pkbf

import (
	"runtime/debug"
	"sync/atomic"

	"github.com/pkbf/pkbf/internal/probe"
	"github.com/pkbf/pkbf/internal/xxh64"
	"golang.org/x/sys/cpu"
)

// Probably reports whether spki, a DER SubjectPublicKeyInfo, is probably in
// the filter. False is definite: the key was never added. True means the key
// was added or is a false positive; confirm it online.
//
// Probably does not allocate and is safe for concurrent use.
//
// On a filter from [Open] whose file was cut short while in use (copied
// over, truncated, or on a file system too full to back it), a query that
// touches the lost part of the file panics with an error wrapping
// [ErrFileChanged], which names the file and says to replace filters by
// renaming; a caller that wants to go on may recover it. The Go runtime
// would otherwise end the program on that memory fault.
func (f *Filter) Probably(spki []byte) bool {
	if f.mapped != nil {
		return f.probablyMapped(spki)
	}
	return f.probably(spki)
}

// probablyMapped is probably on a file's mapping: a fault there becomes a
// panic with an ErrFileChanged error instead of the end of the program.
func (f *Filter) probablyMapped(spki []byte) bool {
	defer f.mapped.CatchFault(debug.SetPanicOnFault(true))
	return f.probably(spki)
}

func (f *Filter) probably(spki []byte) bool {
	if f.data == nil {
		panic("pkbf: query on a closed Filter")
	}
	// Both hashes first, then the k loads with no test between them: the
	// loads overlap one another (out of cache, in one round trip to
	// memory) and the next key's hashing. Testing h1's bit before the
	// second hash would save a key not in the filter half the hashing
	// half the time, but would cost every key in the filter a branch
	// between the hashes; keys in the filter are the ones that matter
	// most, as every one is confirmed online (docs/performance.md has
	// both ways measured).
	h1, h2 := probe.Hashes(spki)
	return f.probe(h1, h2)
}

// probe tests the k positions of a key with base hashes h1 and h2. The
// positions depend only on the hashes, never on a loaded bit, so the CPU
// issues the loads together: on a filter far larger than the caches they
// overlap instead of waiting one after another. It tests the bits four at
// a time, with one branch for the four: a key whose bits are all set (a
// key in the filter) costs k/4 branches instead of k, and a key not in it
// at most three loads more than it needed, which a mispredicted branch a
// bit would cost more than. A bit costs four instructions beyond its load
// (see shiftedBit).
func (f *Filter) probe(h1, h2 uint64) bool {
	data, k := f.data, f.k
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
		if shiftedBit(data, last, x0)&shiftedBit(data, last, x1)&shiftedBit(data, last, x2)&shiftedBit(data, last, x3)&0x80 == 0 {
			return false
		}
	}
	for ; i < k; i++ {
		if shiftedBit(data, last, x)&0x80 == 0 {
			return false
		}
		x, y = probe.Step(x, y, i)
	}
	return true
}

// shiftedBit returns the byte holding bit x mod m of the data, shifted
// left to put that bit at 0x80; the bits above it mean nothing, so the
// caller tests shiftedBit(...)&0x80, once for several bits ANDed
// together. last is len(data)-1, which is (m-1)>>3 for every filter with
// data (L >= 3): x>>3&last is the byte of x mod m and x&7 the bit's place
// in it, whatever x's high bits, with no reduction mod m first. Masking
// with last also lets the compiler drop the bounds check.
func shiftedBit(data []byte, last, x uint64) uint32 {
	return uint32(data[x>>3&last]) << (x & 7)
}

// plainBit returns bit p of data, 0 or 1; last is len(data)-1.
func plainBit(data []byte, last, p uint64) uint64 {
	return uint64(data[p>>3&last]>>(7-p&7)) & 1
}

// Probably is [Filter.Probably] on the filter being written: it sees every
// key whose Add has returned, and is safe to call while others are added.
func (w *Writable) Probably(spki []byte) bool {
	if w.mapped != nil {
		return w.probablyMapped(spki)
	}
	return w.probably(spki)
}

// probablyMapped is Filter.probablyMapped for a file edited in place.
func (w *Writable) probablyMapped(spki []byte) bool {
	defer w.mapped.CatchFault(debug.SetPanicOnFault(true))
	return w.probably(spki)
}

// probably loads the words atomically, as Add stores them.
func (w *Writable) probably(spki []byte) bool {
	words, mask := w.words, w.mask
	if words == nil {
		panic("pkbf: query on a closed Filter")
	}
	x, y := probe.Hashes(spki)
	for i := range w.k {
		wd, m := wordBit(x & mask)
		if atomic.LoadUint32(&words[wd])&m == 0 {
			return false
		}
		x, y = probe.Step(x, y, i)
	}
	return true
}

// loadAll loads the word of every position of a key, with no branch
// between the loads, and reports whether all its bits are set.
func (w *Writable) loadAll(x, y uint64) bool {
	words, mask := w.words, w.mask
	var missing uint32
	for i := range w.k {
		wd, m := wordBit(x & mask)
		missing |= m &^ atomic.LoadUint32(&words[wd])
		x, y = probe.Step(x, y, i)
	}
	return missing == 0
}

// wordBit returns the index of the word holding bit p of the data, and the
// bit's mask within that word (bit p is data byte p/8 under 0x80>>(p%8)).
func wordBit(p uint64) (uint64, uint32) {
	w, shift := wordShift(p)
	return w, 1 << shift
}

// wordShift returns the index of the word holding bit p of the data, and
// the bit's place in that word, 0 for the least significant. Where a byte
// sits in its word depends on the machine's byte order: see byteInWord.
func wordShift(p uint64) (uint64, uint64) {
	b := p >> 3
	return b >> 2, (b&3^byteInWord())*8 + 7 - p&7
}

// byteInWord maps a byte's index within a 32-bit word to its position in
// the word's value: the identity on little-endian machines, reversed on
// big-endian ones (a constant once inlined).
func byteInWord() uint64 {
	if cpu.IsBigEndian {
		return 3
	}
	return 0
}

// atomicBit returns bit p of the data as words, 0 or 1, loaded atomically.
func atomicBit(words []uint32, p uint64) uint64 {
	w, shift := wordShift(p)
	return uint64(atomic.LoadUint32(&words[w])>>shift) & 1
}

// minBatch is the smallest batch probed as a batch (a key alone would wait
// a round a bit), twice it the smallest hashed as a run in the caches; there
// without the vector hashes, rounds pay only from 64 keys.
const minBatch, minRoundsInCache = 4, 64

// rounds reports whether ProbablyBatch answers n keys in rounds.
func (c *core) rounds(n int) bool {
	return n >= minBatch && c.large || n >= minRoundsInCache && !xxh64.Vector()
}

// ProbablyBatch sets out[i] = f.Probably(spkis[i]) for every i: exactly the
// same answers, computed together. Most batches read their keys in runs,
// one stretch each, so that keys not in the caches (a large slice, a page
// just read) stream in from memory. On a filter past 4 MiB it overlaps
// the memory latency of many keys (one key cannot: see
// [Filter.Probably]), fetching their bits in bursts, more at once the more
// bits earlier batches' keys needed, and hashes a key the second time only
// if its first bit is set. Batches of a few hundred keys or more get the
// most from it; it is never slower than Probably in a loop.
// out must be at least as long as spkis; ProbablyBatch panics otherwise.
// It does not allocate, is safe for concurrent use, and panics as
// Probably does on a closed filter or a file cut short.
func (f *Filter) ProbablyBatch(spkis [][]byte, out []bool) {
	checkBatch(f.data, spkis, out)
	if f.mapped != nil {
		defer f.mapped.CatchFault(debug.SetPanicOnFault(true))
	}
	if f.rounds(len(spkis)) {
		for len(spkis) > 0 {
			n := min(len(spkis), probe.MaxKeys)
			mean := f.batchVisits.Load()
			whole, depth := probe.Plan(mean, f.k)
			var visits uint64
			if whole {
				for i, s := range spkis[:n] {
					out[i] = f.probably(s)
				}
				visits = probe.WholeVisits(out[:n], f.k)
			} else {
				visits = f.probeRounds(spkis[:n], out[:n], depth)
			}
			probe.Fold(&f.batchVisits, mean, visits, n)
			spkis, out = spkis[n:], out[n:]
		}
		return
	}
	if !xxh64.Vector() || len(spkis) < 2*minBatch { // a run's arrays cost more
		for i, s := range spkis {
			out[i] = f.probably(s)
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
			out[i+j] = f.probe(h1[j], h2[j]|1)
		}
	}
}

// probeRounds is ProbablyBatch's rounds (internal/probe), with plain
// loads; it returns the bits the keys needed tested in turn.
func (f *Filter) probeRounds(spkis [][]byte, out []bool, depth int) uint64 {
	data := f.data
	last := uint64(len(data) - 1) // == mask>>3, as in probe
	var r probe.Rounds
	r.Start(spkis, f.mask, f.k, depth, probe.Base(data))
	for {
		bits := r.Bits[:]
		for i, p := range r.Hash(spkis) {
			bits[i] = plainBit(data, last, p)
		}
		if !r.Next(spkis, out) {
			return r.Visits
		}
	}
}

// ProbablyBatch is [Filter.ProbablyBatch] with [Writable.Probably]'s
// answers: safe to call while keys are added.
func (w *Writable) ProbablyBatch(spkis [][]byte, out []bool) {
	checkBatch(w.data, spkis, out)
	if w.mapped != nil {
		defer w.mapped.CatchFault(debug.SetPanicOnFault(true))
	}
	if w.rounds(len(spkis)) {
		for len(spkis) > 0 {
			n := min(len(spkis), probe.MaxKeys)
			mean := w.batchVisits.Load()
			whole, depth := probe.Plan(mean, w.k)
			var visits uint64
			if whole {
				for i, s := range spkis[:n] {
					out[i] = w.probably(s)
				}
				visits = probe.WholeVisits(out[:n], w.k)
			} else {
				visits = w.probeRounds(spkis[:n], out[:n], depth)
			}
			probe.Fold(&w.batchVisits, mean, visits, n)
			spkis, out = spkis[n:], out[n:]
		}
		return
	}
	for i, s := range spkis {
		out[i] = w.probably(s)
	}
}

// probeRounds is Filter.probeRounds with atomic loads.
func (w *Writable) probeRounds(spkis [][]byte, out []bool, depth int) uint64 {
	words := w.words
	var r probe.Rounds
	r.Start(spkis, w.mask, w.k, depth, probe.Base(w.data))
	for {
		bits := r.Bits[:]
		for i, p := range r.Hash(spkis) {
			bits[i] = atomicBit(words, p)
		}
		if !r.Next(spkis, out) {
			return r.Visits
		}
	}
}

// checkBatch panics on a batch ProbablyBatch cannot answer.
func checkBatch(data []byte, spkis [][]byte, out []bool) {
	if len(out) < len(spkis) {
		panic("pkbf: ProbablyBatch: out is shorter than spkis")
	}
	if data == nil {
		panic("pkbf: query on a closed Filter")
	}
}
