package pkbf

import (
	"runtime/debug"
	"sync/atomic"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/pkbf/pkbf/internal/prefetch"
	"github.com/pkbf/pkbf/internal/xxh64"
	"golang.org/x/sys/cpu"
)

// hashes returns the two base hashes of a key: h1 = XXH64(spki, seed 0) and
// h2 = XXH64(spki, seed 1), made odd. Where the CPU allows, both come from
// one pass over the key (internal/xxh64).
func hashes(spki []byte) (h1, h2 uint64) {
	h1, h2 = xxh64.Sum2(spki)
	return h1, h2 | 1
}

// step advances the probe sequence from position i to i+1. Consecutive
// positions differ by h2 + i(i+1)/2, so with x = f_i and y = that
// difference, f_{i+1} = x + y and the next difference is y + i + 1: the
// enhanced double hashing of Dillinger and Manolios in two additions. All
// arithmetic wraps mod 2^64, which is exact before the reduction mod 2^L.
func step(x, y, i uint64) (uint64, uint64) { return x + y, y + i + 1 }

// Probably reports whether spki, a DER SubjectPublicKeyInfo, is probably in
// the filter. False is definite: the key was never added. True means the key
// was added or is a false positive; confirm it online.
//
// Probably does not allocate and is safe for concurrent use.
//
// On a filter from [Open] or [Edit] whose file was cut short while in
// use (copied over, truncated, or on a file system too full to back it),
// a query that touches the lost part of the file panics with an error
// wrapping [ErrFileChanged], which names the file and says to replace
// filters by renaming; a caller that wants to go on may recover it. The
// Go runtime would otherwise end the program on that memory fault.
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
	data := f.data
	if data == nil {
		panic("pkbf: query on a closed Filter")
	}
	if f.words != nil { // writable: Add may be setting bits right now
		return f.probablyAtomic(spki)
	}
	// Both hashes first, then the k loads with no test between them: the
	// loads overlap one another (out of cache, in one round trip to
	// memory) and the next key's hashing. Testing h1's bit before the
	// second hash would save a key not in the filter half the hashing
	// half the time, but would cost every key in the filter a branch
	// between the hashes; keys in the filter are the ones that matter
	// most, as every one is confirmed online (docs/performance.md has
	// both ways measured).
	h1, h2 := hashes(spki)
	return f.probe(h1, h2)
}

// seededHash returns h2: XXH64 with seed 1, made odd, alone: for
// ProbablyBatch where the two hashes of a key do not come from one pass.
func seededHash(spki []byte) uint64 {
	var d xxhash.Digest
	d.ResetWithSeed(1)
	d.Write(spki)
	return d.Sum64() | 1
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
	x, y, i := h1, h2, uint64(0) // position i before the reduction mod m, the step to the next (see step)
	for ; i+4 <= k; i += 4 {
		x0 := x
		x, y = step(x, y, i)
		x1 := x
		x, y = step(x, y, i+1)
		x2 := x
		x, y = step(x, y, i+2)
		x3 := x
		x, y = step(x, y, i+3)
		if shiftedBit(data, last, x0)&shiftedBit(data, last, x1)&shiftedBit(data, last, x2)&shiftedBit(data, last, x3)&0x80 == 0 {
			return false
		}
	}
	for ; i < k; i++ {
		if shiftedBit(data, last, x)&0x80 == 0 {
			return false
		}
		x, y = step(x, y, i)
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

// Writable filters: Add may set bits while queries read them, so their
// words are loaded atomically, as Add stores them.

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
// big-endian ones. cpu.IsBigEndian is a constant, so this is one too once
// inlined.
func byteInWord() uint64 {
	if cpu.IsBigEndian {
		return 3
	}
	return 0
}

// bitOf returns bit p of the data, 0 or 1, for the batch probes: loaded
// atomically from words on a writable filter (Add may be setting bits),
// else from data; last is len(data)-1. The branch goes the same way for
// every bit of a batch.
func bitOf(data []byte, words []uint32, last, p uint64) uint64 {
	if words != nil {
		return atomicBit(words, p)
	}
	return plainBit(data, last, p)
}

func atomicBit(words []uint32, p uint64) uint64 {
	w, shift := wordShift(p)
	return uint64(atomic.LoadUint32(&words[w])>>shift) & 1
}

func plainBit(data []byte, last, p uint64) uint64 {
	return uint64(data[p>>3&last]>>(7-p&7)) & 1
}

// probablyAtomic is Probably for writable filters: it loads the words
// atomically, as Add stores them.
func (f *Filter) probablyAtomic(spki []byte) bool {
	h1, h2 := hashes(spki)
	return f.probeAtomic(h1, h2)
}

func (f *Filter) probeAtomic(x, y uint64) bool {
	words, mask := f.words, f.mask
	for i := range f.k {
		w, m := wordBit(x & mask)
		if atomic.LoadUint32(&words[w])&m == 0 {
			return false
		}
		x, y = step(x, y, i)
	}
	return true
}

// loadAll loads the word of every position of a key, with no branch
// between the loads, and reports whether all its bits are set.
func (f *Filter) loadAll(x, y uint64) bool {
	words, mask := f.words, f.mask
	var missing uint32
	for i := range f.k {
		w, m := wordBit(x & mask)
		missing |= m &^ atomic.LoadUint32(&words[w])
		x, y = step(x, y, i)
	}
	return missing == 0
}

// Batches: out of cache, every probe of Probably is a cache miss (and a
// TLB miss), and a negative answer's branch waits for its load.
// ProbablyBatch keeps many keys in flight so that their misses overlap
// with each other. It works in rounds, and each round has separate
// passes: it hashes a block of new keys (no filter memory touched), tests
// what the previous round fetched, and asks the CPU in one burst for the
// lines of the new block's first positions and the next line of every
// key still alive. A line is thus tested a whole block of hashing after
// it was asked for. Prefetches go in a burst after the hashing, never
// between two keys' hashes: a prefetch that misses the TLB holds the core
// until its page walk ends, which stalls hashing issued behind it. A
// key's first position needs only its first hash, so a round hashes new
// keys with seed 0 alone and gives a key its second hash only once its
// first bit is found set: a key not in a half-full filter needs three
// quarters of the hashing on average.
//
// How many positions a key fetches after its second hash (its depth) is
// the other choice: fetched one at a time, a key not in a half-full
// filter touches two lines on average instead of k, but needs a round
// for each; a key with all its bits set gains from having several
// fetched at once. Each batch counts how many bits its keys needed
// tested in turn (up to the first clear one), the filter keeps a running
// mean (batchVisits), and the next batch's depth is half that mean,
// rounded up: the best depth in BenchmarkBatchDepth at every share of
// bits set, within its noise. BenchmarkBatch and BenchmarkBatchPasses
// measure the rounds against the hashing and memory floors;
// docs/performance.md has the figures.

// roundKeys is the number of keys hashed in a round: a block whose
// hashing outlasts a round trip to memory (16 first hashes and the
// second hashes of the block before take longer than a random read of
// memory takes), few enough that the lines of a round fit in the CPU's
// miss buffers as they arrive. maxDepth bounds the positions fetched
// after the second hash; liveKeys bounds the keys being tested one line
// a round.
const (
	roundKeys = 16
	maxDepth  = 16
	liveKeys  = 4 * roundKeys
)

// minBatch is the smallest batch probed as a batch: a key alone would
// wait for its bits one round after another, where Probably waits for all
// of them at once.
const minBatch = 4

// maxRounds is the most keys probeRounds takes in one call: their index
// fits in a probeEntry's uint32.
const maxRounds = 1 << 30

// ProbablyBatch sets out[i] = f.Probably(spkis[i]) for every i: exactly the
// same answers, computed together. On a filter larger than the CPU caches
// it overlaps the memory latency of many keys (one key cannot: see
// [Filter.Probably]): it hashes keys in blocks and fetches their bits in
// bursts between the blocks, more of a key's bits at once the more bits
// the keys of earlier batches needed, and hashes a key the second time
// only if its first bit is set. Batches of a few hundred keys or
// more get the most from it. In cache, and for fewer than four keys, it
// is Probably in a loop. out must be at least as long as spkis;
// ProbablyBatch panics otherwise. It does not allocate, is safe for
// concurrent use (with Add too, on a writable filter), and panics as
// Probably does on a closed filter or a file cut short.
func (f *Filter) ProbablyBatch(spkis [][]byte, out []bool) {
	if len(out) < len(spkis) {
		panic("pkbf: ProbablyBatch: out is shorter than spkis")
	}
	if f.data == nil {
		panic("pkbf: query on a closed Filter")
	}
	if f.mapped != nil {
		defer f.mapped.CatchFault(debug.SetPanicOnFault(true))
	}
	if !f.large || len(spkis) < minBatch {
		if f.words == nil && xxh64.Vector() {
			f.probeInCache(spkis, out)
			return
		}
		for i, s := range spkis {
			out[i] = f.probably(s)
		}
		return
	}
	for len(spkis) > 0 {
		n := min(len(spkis), maxRounds)
		mean := f.batchVisits.Load() // visits per key, in 16ths
		var visits uint64
		if f.k >= 4 && uint64(mean) >= (f.k-1)*16 {
			// Nearly every key has all its bits set: each key's k
			// loads at once, as Probably issues them, overlap better
			// than rounds do. A key without counts as two visits, so
			// that a change of load brings the rounds back.
			for i, s := range spkis[:n] {
				out[i] = f.probably(s)
				visits += 2
				if out[i] {
					visits += f.k - 2
				}
			}
		} else {
			visits = f.probeRounds(spkis[:n], out[:n], depthFor(mean, f.k))
		}
		f.learnVisits(mean, visits, n)
		spkis, out = spkis[n:], out[n:]
	}
}

// probeInCache is ProbablyBatch on a read-only filter in the caches, with
// the vector hashes: keys hashed several at a time (their chains of
// multiplies side by side), then probed.
func (f *Filter) probeInCache(spkis [][]byte, out []bool) {
	var h1, h2 [roundKeys]uint64
	for len(spkis) > 0 {
		n := min(len(spkis), roundKeys)
		xxh64.Sum2Batch(spkis[:n], h1[:], h2[:])
		for i := range n {
			out[i] = f.probe(h1[i], h2[i]|1)
		}
		spkis, out = spkis[n:], out[n:]
	}
}

// depthFor returns the number of positions a key fetches after its second
// hash, given the mean visits per key in 16ths: half the mean rounded up,
// at least 1, at most k and maxDepth (probeRounds fetches at most the k-1
// positions after the first).
func depthFor(mean uint32, k uint64) int {
	d := (uint64(mean) + 31) / 32
	return int(max(1, min(d, k, maxDepth)))
}

// learnVisits moves the filter's running mean of visits per key (in
// 16ths) towards this batch's, by as much as the batch's size warrants
// (a batch of 256 keys or more replaces it). It stores only a change, so
// that small batches from many goroutines do not fight over the line.
func (f *Filter) learnVisits(mean uint32, visits uint64, keys int) {
	batch := int64(visits * 16 / uint64(keys))
	w := int64(min(keys, 256))
	next := uint32(int64(mean) + (batch-int64(mean))*w/256)
	if next != mean {
		f.batchVisits.Store(next)
	}
}

// A probeEntry is a key being tested one line a round: x is the position
// of its bit i before the reduction mod m, y the step to the next (see
// step).
type probeEntry struct {
	x, y   uint64
	i, key uint32
}

// probeRounds is ProbablyBatch on a large filter. A key's first position
// is h1 mod m, which needs only the first hash: a key whose first bit is
// clear (half the keys not in a half-full filter) is answered without the
// second. After the second hash, a key fetches its next depth positions
// at once (see the comment above roundKeys). A round:
//
//  1. hashes up to roundKeys new keys with seed 0 (h1), storing their
//     first positions;
//  2. tests the first bits of the keys hashed the round before; a key
//     whose bit is set and has bits left gets its second hash now, and its
//     next depth positions are stored;
//  3. tests the depth bits of the keys of the round before's step 2, with
//     no branch between them; a key with all of them set and bits left
//     joins the live keys;
//  4. tests one bit of each live key fetched the round before; a key whose
//     bit is set and has bits left stays live, at its next position;
//  5. fetches in one burst the lines of steps 1 and 2 and the next line of
//     every live key.
//
// The live keys are compacted with no branch on the bits (which a
// half-full filter makes unpredictable): each is written at the end of
// the next list, which grows only if the key goes on. A key joins them
// two rounds after its first hash, and they grow by at most a block a
// round, so hashing a block only while there are at most liveKeys keeps
// them under liveKeys + 3 × roundKeys. It returns the number of bits the
// keys needed tested in turn, up to the first clear one.
func (f *Filter) probeRounds(spkis [][]byte, out []bool, depth int) (visits uint64) {
	data, words, mask, k := f.data, f.words, f.mask, uint32(f.k)
	last := uint64(len(data) - 1) // == mask>>3, as in probe
	base := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	depth = min(depth, int(k)-1) // positions after the first
	// With the vector hashes, a block gets both hashes at once, for about
	// what one costs; else the second waits for the first bit.
	both := xxh64.Vector()
	var (
		firsts [2]struct {
			h1   [roundKeys]uint64
			h2   [roundKeys]uint64 // with both
			n    int
			next int // the index of the block's first key
		}
		seconds [2]struct {
			pos  [roundKeys * maxDepth]uint64
			rest [roundKeys]probeEntry // position depth+1, for keys that go on
			n    int
		}
		lives [2][liveKeys + 3*roundKeys]probeEntry
		lines [roundKeys + roundKeys*maxDepth + liveKeys + 3*roundKeys]uintptr
	)
	live, nLive := &lives[0], 0
	next := 0
	for r := 0; ; r++ {
		// 1. Hash a block with seed 0, unless the live keys could
		// overflow; its lines are fetched in step 5's burst.
		fst := &firsts[r&1]
		fst.n, fst.next = 0, next
		if nLive <= liveKeys {
			fst.n = min(roundKeys, len(spkis)-next)
		}
		block := spkis[next : next+fst.n]
		if both {
			xxh64.Sum2Batch(block, fst.h1[:], fst.h2[:])
		} else {
			for j, s := range block {
				fst.h1[j] = xxhash.Sum64(s)
			}
		}
		for j, h1 := range fst.h1[:fst.n] {
			lines[j] = base + uintptr(h1&mask>>3)
		}
		nLines := fst.n
		next += fst.n

		// 2. Test the previous block's first bits; a key whose bit is
		// set gets its second hash and its next depth positions.
		snd := &seconds[r&1]
		snd.n = 0
		prev := &firsts[(r-1)&1]
		visits += uint64(prev.n)
		for j, h1 := range prev.h1[:prev.n] {
			key := prev.next + j
			set := bitOf(data, words, last, h1&mask) != 0
			out[key] = set
			if !set || depth == 0 {
				continue
			}
			var h2 uint64
			if both {
				h2 = prev.h2[j] | 1
			} else {
				h2 = seededHash(spkis[key])
			}
			x, y := step(h1, h2, 0)
			pos := snd.pos[snd.n*depth : snd.n*depth+depth]
			for i := range pos {
				p := x & mask
				pos[i] = p
				lines[nLines+i] = base + uintptr(p>>3)
				x, y = step(x, y, uint64(i+1))
			}
			nLines += depth
			snd.rest[snd.n] = probeEntry{x: x, y: y, i: uint32(depth + 1), key: uint32(key)}
			snd.n++
		}

		// 3. Test the depth bits of the previous round's step 2; its
		// survivors join the live keys.
		nextLive := &lives[(r+1)&1]
		n := 0
		done := &seconds[(r-1)&1]
		for j := range done.n {
			alive, run := uint64(1), uint64(0)
			for _, p := range done.pos[j*depth : j*depth+depth] {
				alive &= bitOf(data, words, last, p)
				run += alive
			}
			visits += run + 1 - alive // run if all were set, else run+1
			e := done.rest[j]
			out[e.key] = alive != 0
			if e.i == k {
				alive = 0
			}
			nextLive[n] = e
			n += int(alive)
		}

		// 4. Test one bit of each live key.
		visits += uint64(nLive)
		for _, e := range live[:nLive] {
			bit := bitOf(data, words, last, e.x&mask)
			out[e.key] = bit != 0
			x, y := step(e.x, e.y, uint64(e.i))
			if e.i+1 == k {
				bit = 0
			}
			nextLive[n] = probeEntry{x: x, y: y, i: e.i + 1, key: e.key}
			n += int(bit)
		}

		// 5. Fetch the lines of steps 1 and 2 and the next line of
		// every live key, after them.
		for j, e := range nextLive[:n] {
			lines[nLines+j] = base + uintptr(e.x&mask>>3)
		}
		prefetch.Lines(&lines[0], nLines+n)
		live, nLive = nextLive, n
		if nLive == 0 && fst.n == 0 && snd.n == 0 && next == len(spkis) {
			return visits
		}
	}
}
