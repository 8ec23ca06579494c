package pkbf

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/probe"
)

// batchQuerier is a Filter or a Writable, for the tests that run on both.
type batchQuerier interface {
	Probably(spki []byte) bool
	ProbablyBatch(spkis [][]byte, out []bool)
	state() *core
}

func (c *core) state() *core { return c }

// randomKeys returns n distinct keys of 30 to 300 bytes.
func randomKeys(n int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 7))
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = make([]byte, 30+r.IntN(270))
		for j := range keys[i] {
			keys[i][j] = byte(r.Uint32())
		}
		binary.LittleEndian.PutUint32(keys[i], uint32(i))
	}
	return keys
}

// ProbablyBatch answers exactly as Probably, on every kind of filter and
// batch length, half of the keys added and half not.
func TestProbablyBatch(t *testing.T) {
	keys := randomKeys(1000, 1)
	type kind struct {
		name string
		make func(t *testing.T, k, l uint8) batchQuerier
	}
	kinds := []kind{
		{"parsed", func(t *testing.T, k, l uint8) batchQuerier {
			f, err := Parse(buildFilter(t, k, l, keys[:500]...))
			if err != nil {
				t.Fatal(err)
			}
			return f
		}},
		{"parsed, large path", func(t *testing.T, k, l uint8) batchQuerier {
			f, err := Parse(buildFilter(t, k, l, keys[:500]...))
			if err != nil {
				t.Fatal(err)
			}
			f.large = true // the out-of-cache paths, on a small filter
			return f
		}},
		{"writable", func(t *testing.T, k, l uint8) batchQuerier {
			f, _ := New(int(k), int(l))
			for _, key := range keys[:500] {
				f.Add(key)
			}
			return f
		}},
		{"writable, large path", func(t *testing.T, k, l uint8) batchQuerier {
			f, _ := New(int(k), int(l))
			for _, key := range keys[:500] {
				f.Add(key)
			}
			f.large = true
			return f
		}},
		{"mapped, large path", func(t *testing.T, k, l uint8) batchQuerier {
			path := filepath.Join(t.TempDir(), "f.pkbf")
			if err := os.WriteFile(path, buildFilter(t, k, l, keys[:500]...), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			f.large = true
			return f
		}},
	}
	for _, kd := range kinds {
		for _, p := range []struct{ k, l uint8 }{{1, 12}, {3, 10}, {12, 14}, {40, 16}} {
			t.Run(fmt.Sprintf("%s/k%d/L%d", kd.name, p.k, p.l), func(t *testing.T) {
				f := kd.make(t, p.k, p.l)
				for _, n := range []int{0, 1, minBatch, probe.RoundKeys - 1, probe.RoundKeys + 1, probe.LiveKeys + 1, probe.HashRun - 1, probe.HashRun + 1, 3*probe.HashRun + 5} {
					// Depths a large filter's batches fetch after the
					// second hash: the running mean of visits picks them
					// (0: one line at a time; 2k: all of a key's lines
					// at once, up to probe.MaxDepth).
					for _, mean := range []uint32{0, 5 * 16, uint32(p.k) * 32} {
						out := make([]bool, n+3)
						for i := range out {
							out[i] = i%2 == 0 // garbage that must be overwritten
						}
						f.state().batchVisits.Store(mean)
						f.ProbablyBatch(keys[:n], out)
						for i := range n {
							if want := f.Probably(keys[i]); out[i] != want {
								t.Fatalf("batch of %d, mean visits %d/16: out[%d] = %v, Probably = %v", n, mean, i, out[i], want)
							}
							if i < 500 && !out[i] {
								t.Fatalf("batch of %d, mean visits %d/16: added key %d answers no", n, mean, i)
							}
						}
						if out[n] != (n%2 == 0) {
							t.Fatalf("batch of %d wrote past its keys", n)
						}
					}
				}
			})
		}
	}
}

// Both ways of probing count the bits their keys need tested in turn (up
// to the first clear one) exactly, and ProbablyBatch learns from the count:
// it goes on probing a half-full filter bit by bit, and turns to fetching
// every line at once for keys that have all their bits set.
func TestProbablyBatchVisits(t *testing.T) {
	keys := randomKeys(600, 5)
	for _, k := range []uint8{1, 3, 12, 20} {
		f, err := Parse(buildFilter(t, k, 14, keys[:300]...))
		if err != nil {
			t.Fatal(err)
		}
		f.large = true
		var want uint64
		for _, key := range keys {
			for _, p := range (Header{HashCount: k, HashLength: 14}).positions(nil, key) {
				want++
				if f.data[p/8]&(0x80>>(p%8)) == 0 {
					break
				}
			}
		}
		out := make([]bool, len(keys))
		for _, depth := range []int{1, 2, 5, probe.MaxDepth} {
			if got := f.probeRounds(keys, out, min(depth, int(k))); got != want {
				t.Errorf("k %d, depth %d: probeRounds counts %d bits, want %d", k, depth, got, want)
			}
		}
	}

	half := benchFilter(t, 12, 20, false)
	full := benchFilter(t, 12, 20, true)
	for _, f := range []*Filter{half, full} {
		f.large = true
	}
	out := make([]bool, 256)
	batch := randomKeys(256, 6)
	for range 3 {
		half.ProbablyBatch(batch, out)
		full.ProbablyBatch(batch, out)
	}
	if m := half.batchVisits.Load(); m < 24 || m > 40 {
		t.Errorf("half-full filter: mean visits %d/16, want about 2 (depth %d)", m, probe.Depth(m, 12))
	}
	if m := full.batchVisits.Load(); m != 12*16 {
		t.Errorf("full filter: mean visits %d/16, want 12", m)
	}
	// A batch of n keys moves the mean by n/256 of the difference, and a
	// batch of 256 or more replaces it.
	for _, c := range []struct {
		visits uint64
		keys   int
		want   uint32
	}{{4 * 12, 4, 32 + (192-32)*4/256}, {300 * 12, 300, 192}, {256 * 1, 256, 16}, {0, 0, 32}} {
		m := uint32(32)
		if c.keys > 0 {
			m = probe.Mean(32, c.visits, c.keys)
		}
		if m != c.want {
			t.Errorf("mean 2, then %d keys needing %d bits: mean %d/16, want %d/16", c.keys, c.visits, m, c.want)
		}
	}
	// A filter whose keys all had their bits set probes them as Probably
	// does; one batch of keys it lacks brings back the rounds.
	half.batchVisits.Store(12 * 16)
	half.ProbablyBatch(batch, out)
	if m := half.batchVisits.Load(); m < 24 || m > 40 {
		t.Errorf("half-full filter after a mean of 12: mean visits %d/16 after one batch, want about 2", m)
	}
	// Fewer than minBatch keys are Probably's: nothing to learn.
	half.batchVisits.Store(32)
	full.batchVisits.Store(32)
	full.ProbablyBatch(batch[:minBatch-1], out)
	if m := full.batchVisits.Load(); m != 32 {
		t.Errorf("a batch of %d keys changed the mean to %d/16", minBatch-1, m)
	}
}

// A writable filter answers batches while keys are being added: the keys
// added before are found, both ways of probing, and the race detector
// sees every load of a word Add may be storing to made atomically.
func TestProbablyBatchWhileAdding(t *testing.T) {
	keys := randomKeys(2000, 8)
	before, during := keys[:1000], keys[1000:]
	f, _ := New(4, 16)
	for _, key := range before {
		f.Add(key)
	}
	f.large = true
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, key := range during {
			f.Add(key)
		}
	}()
	out := make([]bool, len(keys))
	for round := 0; ; round++ {
		f.batchVisits.Store(uint32(round%2) * 4 * 32) // depth 1, depth 4
		f.ProbablyBatch(keys, out)
		for i := range before {
			if !out[i] {
				t.Fatalf("round %d: key %d, added before, answers no", round, i)
			}
		}
		select {
		case <-done:
			if round > 0 {
				f.ProbablyBatch(keys, out)
				for i := range keys {
					if !out[i] {
						t.Fatalf("after the adds: key %d answers no", i)
					}
				}
				return
			}
		default:
		}
	}
}

func TestProbablyBatchMisuse(t *testing.T) {
	f, _ := Parse(buildFilter(t, 3, 10))
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "out is shorter") {
			t.Errorf("short out: recover() = %v", r)
		}
	}()
	f.ProbablyBatch(randomKeys(3, 2), make([]bool, 2))
}

func TestProbablyBatchAllocs(t *testing.T) {
	keys := randomKeys(256, 3)
	out := make([]bool, len(keys))
	f, _ := Parse(buildFilter(t, 12, 16, keys[:100]...))
	for _, c := range []struct {
		large bool
		mean  uint32 // visits per key, in 16ths: depth 1 (0) or 12 (12*32)
	}{{false, 0}, {true, 0}, {true, 12 * 32}} {
		f.large = c.large
		if a := testing.AllocsPerRun(20, func() {
			f.batchVisits.Store(c.mean)
			f.ProbablyBatch(keys, out)
		}); a != 0 {
			t.Errorf("large %v, mean visits %d/16: %v allocations per batch", c.large, c.mean, a)
		}
	}
}

// A batch's depth is half the mean visits per key, rounded up, within 1
// and min(k, probe.MaxDepth).
func TestDepthFor(t *testing.T) {
	for _, c := range []struct {
		mean uint32
		k    uint64
		want int
	}{
		{0, 12, 1}, {16, 12, 1}, {32, 12, 1}, {33, 12, 2}, {64, 12, 2}, {65, 12, 3},
		{12 * 16, 12, 6}, {12 * 32, 12, 12}, {255 * 16, 12, 12}, {255 * 16, 255, probe.MaxDepth},
		{40 * 16, 3, 3}, {1 << 31, 1, 1},
	} {
		if got := probe.Depth(c.mean, c.k); got != c.want {
			t.Errorf("probe.Depth(%d/16, k %d) = %d, want %d", c.mean, c.k, got, c.want)
		}
	}
}

// ProbablyBatch allocates nothing, even for a caller whose keys and
// answers live on its stack, on a large filter (rounds, and whole) and a
// small one (found on review: the rounds kept the caller's slices, and a
// function value took them, which moved them to the heap: 4 allocations).
func TestProbablyBatchStackAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	small, _ := New(4, 16)
	for _, large := range []bool{false, true} {
		f := readOnly(t, small)
		f.large = large
		allocs := testing.AllocsPerRun(50, func() {
			var buf [4 * 256]byte
			var keys [256][]byte
			var out [256]bool
			for i := range keys {
				buf[4*i] = byte(i)
				keys[i] = buf[4*i : 4*i+4]
			}
			f.ProbablyBatch(keys[:], out[:])
		})
		if allocs != 0 {
			t.Errorf("large %v: %v allocations", large, allocs)
		}
	}
}
