package bitwords

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// Or ORs every byte, whatever the length and the words' alignment.
func TestOr(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 100 {
		for off := range 3 {
			a, b := make([]byte, n+off), make([]byte, n+off)
			for i := range a {
				a[i], b[i] = byte(rng.Uint32()), byte(rng.Uint32())
			}
			want := bytes.Clone(a)
			for i := off; i < len(want); i++ {
				want[i] |= b[i]
			}
			Or(a[off:], b[off:])
			if !bytes.Equal(a, want) {
				t.Fatalf("Or of %d bytes at offset %d: wrong result", n, off)
			}
		}
	}
}
