package pkbf

import (
	"runtime/debug"
	"sync/atomic"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// hashes returns the two base hashes of a key: h1 = XXH64(spki, seed 0) and
// h2 = XXH64(spki, seed 1), made odd.
func hashes(spki []byte) (h1, h2 uint64) {
	return xxhash.Sum64(spki), seededHash(spki)
}

// Positions appends to dst the k bit positions of spki in a filter with
// 2^hashLength bits, in probe order, and returns the extended slice:
// f_i = (h1 + i·h2 + (i³-i)/6) mod 2^L for i = 0..k-1. It is the
// definition behind [Filter.Probably], for tools and tests that inspect a
// filter bit by bit. Bit p is data byte p/8 under mask 0x80>>(p%8).
// hashLength must be at most 63.
func Positions(dst []uint64, spki []byte, hashCount, hashLength uint8) []uint64 {
	h1, h2 := hashes(spki)
	mask := uint64(1)<<(hashLength&63) - 1
	x, y := h1, h2
	for i := range uint64(hashCount) {
		dst = append(dst, x&mask)
		x, y = step(x, y, i)
	}
	return dst
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
// On a filter from [Open] or [OpenFile] whose file was cut short while in
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
	defer f.mapped.catchFault(debug.SetPanicOnFault(true))
	return f.probably(spki)
}

func (f *Filter) probably(spki []byte) bool {
	data, mask := f.data, f.mask
	if data == nil {
		panic("pkbf: query on a closed Filter")
	}
	if f.words != nil { // writable: Add may be setting bits right now
		return f.probablyAtomic(spki)
	}
	h1 := xxhash.Sum64(spki)
	if f.large {
		// Out of cache, the k loads should overlap in one memory round
		// trip: compute both hashes, then probe.
		return f.probe(h1, seededHash(spki), 0)
	}
	// In cache, the first position (h1 itself) is tested before the second
	// hash: when its bit is clear, half the time in a half-full filter, the
	// answer costs half the hashing. (Out of cache this would put a memory
	// round trip before the second hash and another after it.)
	pos := h1 & mask
	if data[pos>>3]&(0x80>>(pos&7)) == 0 {
		return false
	}
	x, y := step(h1, seededHash(spki), 0)
	return f.probe(x, y, 1)
}

// seededHash returns h2: XXH64 with seed 1, made odd.
func seededHash(spki []byte) uint64 {
	var d xxhash.Digest
	d.ResetWithSeed(1)
	d.Write(spki)
	return d.Sum64() | 1
}

// probe tests positions i to k-1 of a key, where x is position i before
// the reduction mod m and y the difference to the next (see step). The
// positions depend only on the hashes, never on a loaded bit, and the
// branch on each bit is predicted taken, so the CPU issues the k loads
// together: on a filter far larger than the caches they overlap instead of
// waiting one after another.
func (f *Filter) probe(x, y, i uint64) bool {
	data, mask, k := f.data, f.mask, f.k
	if len(data) == 0 {
		return false
	}
	last := uint64(len(data) - 1) // == mask>>3; masking the index with it
	for ; i < k; i++ {            // lets the compiler drop bounds checks
		pos := x & mask
		if data[pos>>3&last]&(0x80>>(pos&7)) == 0 {
			return false
		}
		x, y = step(x, y, i)
	}
	return true
}

// Writable filters: Add may set bits while queries read them, so their
// words are loaded atomically, as Add stores them.

// wordBit returns the index of the word holding bit p of the data, and the
// bit's mask within that word (bit p is data byte p/8 under 0x80>>(p%8)).
// Where a byte sits in its word depends on the machine's byte order:
// byteInWord is 0 on little-endian machines and 3 on big-endian ones.
func wordBit(p uint64) (uint64, uint32) {
	b := p >> 3
	shift := ((b & 3) ^ byteInWord) * 8
	return b >> 2, uint32(0x80>>(p&7)) << shift
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
// ProbablyBatch hashes many keys before it tests any, asking the CPU to
// fetch each key's lines as soon as their positions are known, so that
// the misses of many keys overlap with each other and with the hashing.

// batchBlock is the number of keys in each stage of ProbablyBatch: enough
// for the lines of one block to arrive while the next is hashed, few
// enough that their prefetches fit what the CPU can have outstanding.
const batchBlock = 16

// maxPrefetch bounds the lines prefetched for one key; past it, the rest
// of a key's probes load as Probably's do.
const maxPrefetch = 16

// ProbablyBatch sets out[i] = f.Probably(spkis[i]) for every i: exactly the
// same answers, computed together. On a filter larger than the CPU caches
// it overlaps the memory latency of many keys (one key cannot: see
// [Filter.Probably]): it works on blocks of keys in three stages (hash a
// block, prefetching the line of each key's first bit; test those bits,
// noting the other lines of the keys whose first bit is set; test the
// rest), prefetching a block's other lines during the hashing of the next
// and testing them after it, so that they have arrived by then. In cache it is Probably in a
// loop. out must be at least as long as spkis; ProbablyBatch panics
// otherwise. It does not allocate, is safe for concurrent use, and panics
// as Probably does on a closed filter or a file cut short.
func (f *Filter) ProbablyBatch(spkis [][]byte, out []bool) {
	if len(out) < len(spkis) {
		panic("pkbf: ProbablyBatch: out is shorter than spkis")
	}
	if f.data == nil {
		panic("pkbf: query on a closed Filter")
	}
	if f.mapped != nil {
		defer f.mapped.catchFault(debug.SetPanicOnFault(true))
	}
	switch {
	case f.words != nil: // writable: Add may be setting bits right now
		for i, s := range spkis {
			out[i] = f.probablyAtomic(s)
		}
	case !f.large:
		for i, s := range spkis {
			out[i] = f.probably(s)
		}
	default:
		f.probeBlocks(spkis, out)
	}
}

// A probeBlock is the state of one block of keys between the stages.
type probeBlock struct {
	x, y  [batchBlock]uint64 // each key's next position and step
	live  [batchBlock]uint8  // the keys whose first bit is set
	n     int                // how many live
	start int                // the block's first key in the batch
	keys  int                // how many keys in the block
	lines [batchBlock * maxPrefetch]uintptr
	nl    int // lines of the live keys, to prefetch
}

// probeBlocks is ProbablyBatch on a large filter: while one block's lines
// are on their way, the next block is hashed; the prefetches of the one
// are spread over the hashing of the next, a few after each key, so that
// they never outrun what the CPU can have in flight.
func (f *Filter) probeBlocks(spkis [][]byte, out []bool) {
	var blocks [2]probeBlock
	prev := (*probeBlock)(nil)
	for start, b := 0, 0; start < len(spkis); start, b = start+batchBlock, b^1 {
		end := min(len(spkis), start+batchBlock)
		cur := &blocks[b]
		cur.start, cur.keys = start, end-start
		f.hashAndPrefetch(cur, spkis[start:end], prev)
		if prev != nil {
			f.testRest(prev, out[prev.start:])
		}
		f.testFirst(cur, out[start:end])
		prev = cur
	}
	if prev != nil {
		prefetch(&prev.lines[0], prev.nl)
		f.testRest(prev, out[prev.start:])
	}
}

// hashAndPrefetch is the first stage: hash the keys and prefetch the line
// of each key's first bit, and after each key a share of the lines prev
// (if any) asks for.
func (f *Filter) hashAndPrefetch(blk *probeBlock, spkis [][]byte, prev *probeBlock) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(f.data)))
	mask := f.mask
	var line [1]uintptr
	done, share := 0, 0
	if prev != nil {
		share = (prev.nl + len(spkis) - 1) / len(spkis)
	}
	for j, s := range spkis {
		blk.x[j], blk.y[j] = hashes(s)
		line[0] = base + uintptr(blk.x[j]&mask>>3)
		prefetch(&line[0], 1)
		if prev != nil && done < prev.nl {
			c := min(share, prev.nl-done)
			prefetch(&prev.lines[done], c)
			done += c
		}
	}
	if prev != nil && done < prev.nl {
		prefetch(&prev.lines[done], prev.nl-done)
	}
}

// testFirst is the second stage: test each key's first bit; a key whose
// bit is clear is answered, the others have their other lines queued for
// prefetching.
func (f *Filter) testFirst(blk *probeBlock, out []bool) {
	data, mask, k := f.data, f.mask, f.k
	last := uint64(len(data) - 1) // == mask>>3, as in probe
	base := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	blk.n, blk.nl = 0, 0
	for j := range blk.keys {
		pos := blk.x[j] & mask
		if data[pos>>3&last]&(0x80>>(pos&7)) == 0 {
			out[j] = false
			continue
		}
		x, y := step(blk.x[j], blk.y[j], 0)
		blk.x[j], blk.y[j] = x, y
		for i := uint64(1); i < k && i <= maxPrefetch; i++ {
			blk.lines[blk.nl] = base + uintptr(x&mask>>3)
			blk.nl++
			x, y = step(x, y, i)
		}
		blk.live[blk.n] = uint8(j)
		blk.n++
	}
}

// testRest is the last stage: test the other bits of the live keys.
func (f *Filter) testRest(blk *probeBlock, out []bool) {
	for _, j := range blk.live[:blk.n] {
		out[j] = f.probe(blk.x[j], blk.y[j], 1)
	}
}
