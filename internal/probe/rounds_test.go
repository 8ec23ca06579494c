package probe

import (
	"math/rand/v2"
	"testing"

	"github.com/pkbf/pkbf/internal/xxh64"
)

// HashBlock gives every key of the block both of its hashes, whatever the
// block's place and length and however near the end of the keys it asks
// for lines ahead, on both ways of hashing.
func TestHashBlock(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 40)
	for i := range keys {
		keys[i] = make([]byte, r.IntN(1500)) // some longer than the 16 lines asked for
		for j := range keys[i] {
			keys[i][j] = byte(r.Uint32())
		}
	}
	for _, vector := range []bool{true, false} {
		restore := xxh64.Use(vector)
		PrefetchFirst(keys)
		PrefetchFirst(nil)
		for i := range len(keys) {
			for n := range min(RoundKeys, len(keys)-i) + 1 {
				var h1, h2 [RoundKeys]uint64
				HashBlock(keys, i, n, h1[:], h2[:])
				for j := range n {
					if w1, w2 := xxh64.Sum2(keys[i+j]); h1[j] != w1 || h2[j] != w2 {
						t.Fatalf("vector %v: block at %d of %d keys: key %d hashes %x %x, want %x %x", vector, i, n, j, h1[j], h2[j], w1, w2)
					}
				}
			}
		}
		restore()
	}
}
