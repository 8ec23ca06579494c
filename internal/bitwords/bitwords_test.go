package bitwords

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"
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

// A word set through Bit holds, in memory, exactly data byte p/8 under
// mask 0x80>>(p%8), whatever this machine's byte order; ByteShift finds
// each byte in its word's value.
func TestBit(t *testing.T) {
	for p := range uint64(64) {
		words := make([]uint32, 2)
		w, m := Bit(p)
		words[w] |= m
		data := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 8)
		for i, c := range data {
			want := byte(0)
			if uint64(i) == p/8 {
				want = 0x80 >> (p % 8)
			}
			if c != want {
				t.Fatalf("bit %d: byte %d is %#02x, want %#02x", p, i, c, want)
			}
			if got := byte(words[i/4] >> ByteShift(uint64(i))); got != c {
				t.Fatalf("bit %d: ByteShift finds byte %d as %#02x, memory has %#02x", p, i, got, c)
			}
		}
	}
}

// Count counts the bits of every length, in the last bytes too.
func TestCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := range 40 {
		b := make([]byte, n)
		want := uint64(0)
		for i := range b {
			b[i] = byte(rng.Uint32())
			for c := b[i]; c != 0; c &= c - 1 {
				want++
			}
		}
		if got := Count(b); got != want {
			t.Fatalf("Count of %d bytes = %d, want %d", n, got, want)
		}
	}
}

// Lost counts the bits old has and b lacks, and no other, at every length.
func TestLost(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for n := range 40 {
		old, b := make([]byte, n), make([]byte, n)
		want := uint64(0)
		for i := range old {
			old[i], b[i] = byte(rng.Uint32()), byte(rng.Uint32())
			for bit := range 8 {
				if old[i]>>bit&1 == 1 && b[i]>>bit&1 == 0 {
					want++
				}
			}
		}
		if got := Lost(old, b); got != want {
			t.Fatalf("Lost of %d bytes = %d, want %d", n, got, want)
		}
		if got := Lost(old, old); got != 0 {
			t.Fatalf("Lost of %d bytes from themselves = %d", n, got)
		}
	}
}
