package xxh64

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// reference is XXH64 with seeds 0 and 1 as github.com/cespare/xxhash/v2
// computes them.
func reference(b []byte) (uint64, uint64) {
	d := xxhash.NewWithSeed(1)
	d.Write(b)
	return xxhash.Sum64(b), d.Sum64()
}

// bothPaths runs f with the vector path, where this machine has it, and
// with the scalar path, which every machine has.
func bothPaths(t *testing.T, f func(t *testing.T)) {
	defer func(was bool) { vector = was }(vector)
	for _, v := range []bool{true, false} {
		if v && !canVector() {
			t.Log("no AVX-512 here: the vector path is not tested")
			continue
		}
		vector = v
		t.Run(map[bool]string{true: "vector", false: "scalar"}[v], f)
	}
}

// Every length from 0 to 4096, at every alignment from 0 to 63.
func TestEveryLengthAndAlignment(t *testing.T) {
	buf := randomBytes(rand.New(rand.NewPCG(1, 2)), 4096+64)
	bothPaths(t, func(t *testing.T) {
		for n := 0; n <= 4096; n++ {
			for align := range 64 {
				if n > 300 && align%8 != 0 && align != 63 { // past the keys pkbf sees, fewer alignments
					continue
				}
				b := buf[align : align+n]
				w0, w1 := reference(b)
				if g0, g1 := Sum2(b); g0 != w0 || g1 != w1 {
					t.Fatalf("length %d, alignment %d: %x %x, want %x %x", n, align, g0, g1, w0, w1)
				}
			}
		}
	})
}

// Batches of keys of mixed lengths, at mixed alignments, of every size
// from 0 to 40 keys: the lockstep groups, the keys left over, keys with
// no whole stripe beside keys with many.
func TestBatches(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	buf := randomBytes(r, 1<<16)
	bothPaths(t, func(t *testing.T) {
		for trial := range 2000 {
			keys := make([][]byte, trial%41)
			for i := range keys {
				n := r.IntN(600)
				if trial%3 == 0 {
					n = 294 // all one length
				}
				at := r.IntN(len(buf) - n)
				keys[i] = buf[at : at+n : at+n]
			}
			s0, s1 := make([]uint64, len(keys)), make([]uint64, len(keys))
			Sum2Batch(keys, s0, s1)
			for i, k := range keys {
				if w0, w1 := reference(k); s0[i] != w0 || s1[i] != w1 {
					t.Fatalf("trial %d, key %d of %d (length %d): %x %x, want %x %x", trial, i, len(keys), len(k), s0[i], s1[i], w0, w1)
				}
			}
		}
	})
}

// A key at the very end of a page that is followed by none: the vector
// path reads nothing past a key's last byte.
func TestNoReadPastTheEnd(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		for _, n := range []int{0, 1, 7, 31, 32, 33, 63, 64, 65, 294, 4095, 4096} {
			b := pageEnd(t, n)
			w0, w1 := reference(b)
			if g0, g1 := Sum2(b); g0 != w0 || g1 != w1 {
				t.Fatalf("length %d at a page's end: wrong hashes", n)
			}
			keys := [][]byte{b, b, b, b, b}
			s0, s1 := make([]uint64, 5), make([]uint64, 5)
			Sum2Batch(keys, s0, s1)
			if s0[4] != w0 || s1[0] != w1 {
				t.Fatalf("batch of length %d at a page's end: wrong hashes", n)
			}
		}
	})
}

func FuzzSum2(f *testing.F) {
	f.Add([]byte{}, 0)
	f.Add(make([]byte, 294), 3)
	f.Add([]byte("pkbfv1 keys"), 5)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		w0, w1 := reference(b)
		if g0, g1 := Sum2(b); g0 != w0 || g1 != w1 {
			t.Fatalf("Sum2(%x) = %x %x, want %x %x", b, g0, g1, w0, w1)
		}
		// A batch of b's prefixes, so that lengths differ.
		keys := [][]byte{b}
		for i := 1; i < 6; i++ {
			keys = append(keys, b[:len(b)*i/6])
		}
		if cut > 0 {
			keys = append(keys, b[len(b)-min(len(b), cut%64):])
		}
		s0, s1 := make([]uint64, len(keys)), make([]uint64, len(keys))
		Sum2Batch(keys, s0, s1)
		for i, k := range keys {
			if w0, w1 := reference(k); s0[i] != w0 || s1[i] != w1 {
				t.Fatalf("batch key %d (%x): wrong hashes", i, k)
			}
		}
	})
}

// BenchmarkSum2 sets both seeds of one key, and a batch of keys, against
// two xxhash calls on the same keys, for the SPKIs of an Ed25519 (44
// bytes), a P-256 (91) and an RSA-2048 key (294), reporting x-two: the
// time over the two calls'. The scalar case is the path machines without
// the vector one take.
//
//	go test -run '^$' -bench BenchmarkSum2 -count 3 ./internal/xxh64
func BenchmarkSum2(b *testing.B) {
	for _, n := range []int{44, 91, 294} {
		keys := make([][]byte, 256)
		r := rand.New(rand.NewPCG(uint64(n), 5))
		for i := range keys {
			keys[i] = randomBytes(r, n)
		}
		s0, s1 := make([]uint64, len(keys)), make([]uint64, len(keys))
		var sink uint64
		two := func() float64 { // ns a key
			return timePerKey(b, len(keys), func() {
				for _, k := range keys {
					d := xxhash.NewWithSeed(1)
					d.Write(k)
					sink += xxhash.Sum64(k) ^ d.Sum64()
				}
			})
		}
		for _, path := range []string{"vector", "scalar"} {
			if path == "vector" && !canVector() {
				continue
			}
			for _, mode := range []string{"one", "batch"} {
				b.Run(fmt.Sprintf("%dB/%s/%s", n, path, mode), func(b *testing.B) {
					defer func(was bool) { vector = was }(vector)
					vector = path == "vector"
					one := func() {
						for _, k := range keys {
							h0, h1 := Sum2(k)
							sink += h0 ^ h1
						}
					}
					batch := func() { Sum2Batch(keys, s0, s1) }
					f := map[string]func(){"one": one, "batch": batch}[mode]
					var ours, ref float64
					for b.Loop() {
						ours += timePerKey(b, len(keys), f)
						ref += two()
					}
					b.ReportMetric(ours/float64(b.N), "ns/key")
					b.ReportMetric(ref/float64(b.N), "two-ns/key")
					b.ReportMetric(ours/ref, "x-two")
				})
			}
		}
		_ = sink
	}
}

// timePerKey runs f (over n keys) a few times and returns the fastest run's
// time a key, in ns: interleaved with the reference's, so that both see
// the machine in the same state.
func timePerKey(b *testing.B, n int, f func()) float64 {
	best := 0.0
	for i := range 5 {
		start := nanotime()
		f()
		if d := float64(nanotime()-start) / float64(n); i == 0 || d < best {
			best = d
		}
	}
	return best
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
