package pkbf

import (
	"runtime/debug"

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
