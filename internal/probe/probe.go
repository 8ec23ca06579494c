// Package probe computes where a pkbfv1 filter keeps a key's bits, and
// runs the rounds in which a batch of keys is hashed and its bits fetched
// ahead of their tests (the prefetch instruction in assembly on amd64 and
// arm64; the purego build tag, or any other architecture, gives functions
// that do nothing). It never reads a filter's bits itself: the root's
// query core loads them.
package probe

import (
	"sync/atomic"

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

// Plan says, from the running mean of visits per key (in 16ths), how a
// batch on a large filter is answered: whole, each key's k loads at once
// as Probably issues them, when nearly every key had all its bits set
// (they overlap better then); else in rounds of depth (Depth).
func Plan(mean uint32, k uint64) (whole bool, depth int) {
	if k >= 4 && uint64(mean) >= (k-1)*16 {
		return true, 0
	}
	return false, Depth(mean, k)
}

// WholeVisits counts the visits of a batch answered whole: a key without
// all its bits counts as two, so that a change of load brings the rounds
// back.
func WholeVisits(out []bool, k uint64) (visits uint64) {
	for _, o := range out {
		visits += 2
		if o {
			visits += k - 2
		}
	}
	return visits
}

// Fold folds a batch's visits into the running mean v, read as mean
// before the batch; only a change is stored, so that small batches from
// many goroutines do not fight over the line.
func Fold(v *atomic.Uint32, mean uint32, visits uint64, n int) {
	if next := Mean(mean, visits, n); next != mean {
		v.Store(next)
	}
}
