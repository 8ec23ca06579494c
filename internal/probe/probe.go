// Package probe computes where a pkbfv1 filter keeps a key's bits, and
// runs the rounds in which a batch of keys is hashed and its bits fetched
// ahead of their tests. It never reads a filter's bits itself: the filter
// types at the root load them, each in its own way (plain loads, or atomic
// ones where keys may be added meanwhile), so each has one straight path.
package probe

import (
	"github.com/cespare/xxhash/v2"
	"github.com/pkbf/pkbf/internal/xxh64"
)

// Hashes returns the two base hashes of a key: h1 = XXH64(spki, seed 0) and
// h2 = XXH64(spki, seed 1), made odd. Where the CPU allows, both come from
// one pass over the key (internal/xxh64).
func Hashes(spki []byte) (h1, h2 uint64) {
	h1, h2 = xxh64.Sum2(spki)
	return h1, h2 | 1
}

// SeededHash returns h2 alone: XXH64 with seed 1, made odd, for a batch
// whose two hashes of a key do not come from one pass.
func SeededHash(spki []byte) uint64 {
	var d xxhash.Digest
	d.ResetWithSeed(1)
	d.Write(spki)
	return d.Sum64() | 1
}

// Step advances the probe sequence from position i to i+1. Consecutive
// positions differ by h2 + i(i+1)/2, so with x = f_i and y = that
// difference, f_{i+1} = x + y and the next difference is y + i + 1: the
// enhanced double hashing of Dillinger and Manolios in two additions. All
// arithmetic wraps mod 2^64, which is exact before the reduction mod 2^L.
func Step(x, y, i uint64) (uint64, uint64) { return x + y, y + i + 1 }
