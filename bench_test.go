package pkbf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/probe"
	"github.com/pkbf/pkbf/internal/testkit"
)

// benchKeys returns a function giving the key for iteration i: the SPKI in
// file with its last four bytes (inside the key) set to i, so every query
// probes fresh positions. The keys live in a ring of 64 buffers, each
// rewritten 32 iterations before it is used: a key written just before it
// is hashed would make the hash wait for that store behind the previous
// query's cache misses, which real callers, hashing bytes parsed earlier,
// never do. The hash baseline uses the same keys.
func benchKeys(b *testing.B, file string) func(i int) []byte {
	spki := testkit.ReadFile(b, filepath.Join(keysDir, file)) // a DER SPKI
	const ring, ahead = 64, 32
	var keys [ring][]byte
	for i := range keys {
		keys[i] = bytes.Clone(spki)
		binary.LittleEndian.PutUint32(keys[i][len(spki)-4:], uint32(i))
	}
	return func(i int) []byte {
		next := keys[(i+ahead)%ring]
		binary.LittleEndian.PutUint32(next[len(next)-4:], uint32(i+ahead))
		return keys[i%ring]
	}
}

// benchFilter returns a filter of 2^l bits with k hashes whose data is all
// ones (fill 1) or random bytes (fill 0.5).
func benchFilter(b testing.TB, k, l uint8, full bool) *Filter {
	h := Header{HashCount: k, HashLength: l}
	buf, _ := h.AppendBinary(make([]byte, 0, h.FileSize()))
	data := make([]byte, h.dataSize())
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		if full {
			data[i] = 0xff
		} else {
			data[i] = byte(r.Uint32())
		}
	}
	f, err := Parse(append(buf, data...))
	if err != nil {
		b.Fatal(err)
	}
	return f
}

var sink uint64

// BenchmarkHashes is the floor: the two XXH64 hashes alone (cespare Sum64
// plus a reused seeded Digest), over the same keys as the query benchmarks.
func BenchmarkHashes(b *testing.B) {
	for _, kt := range []struct{ name, file string }{{"RSA2048", "rsa2048.spki.der"}, {"P256", "p256.spki.der"}} {
		b.Run(kt.name, func(b *testing.B) {
			keys := benchKeys(b, kt.file)
			d := xxhash.NewWithSeed(1)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				key := keys(i)
				d.ResetWithSeed(1)
				d.Write(key)
				sink += xxhash.Sum64(key) ^ d.Sum64()
			}
		})
	}
}

func BenchmarkProbably(b *testing.B) {
	cases := []struct {
		name string
		k, l uint8
		full bool
		file string
	}{
		{"InCache/HalfSet/RSA2048", 12, 20, false, "rsa2048.spki.der"},
		{"InCache/AllSet/RSA2048", 12, 20, true, "rsa2048.spki.der"},
		{"InCache/HalfSet/P256", 12, 20, false, "p256.spki.der"},
		{"InCache/AllSet/P256", 12, 20, true, "p256.spki.der"},
		{"Large128MiB/AllSet/RSA2048", 12, 30, true, "rsa2048.spki.der"},
		{"Large128MiB/AllSet/RSA2048/K1", 1, 30, true, "rsa2048.spki.der"},
		{"Large128MiB/AllSet/P256", 12, 30, true, "p256.spki.der"},
		{"Large128MiB/HalfSet/RSA2048", 12, 30, false, "rsa2048.spki.der"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			f := benchFilter(b, c.k, c.l, c.full)
			keys := benchKeys(b, c.file)
			b.ReportAllocs()
			hits := 0
			for i := 0; b.Loop(); i++ {
				if f.Probably(keys(i)) {
					hits++
				}
			}
			if c.full && hits != b.N {
				b.Fatalf("%d of %d hits in a full filter", hits, b.N)
			}
		})
	}
	// Negative queries: an empty filter answers after the first four bits.
	b.Run("Negative/Empty/RSA2048", func(b *testing.B) {
		h := Header{HashCount: 12, HashLength: 20}
		buf, _ := h.AppendBinary(nil)
		f, _ := Parse(append(buf, make([]byte, h.dataSize())...))
		keys := benchKeys(b, "rsa2048.spki.der")
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if f.Probably(keys(i)) {
				b.Fatal("hit in an empty filter")
			}
		}
	})
}

// BenchmarkMemoryLatency is the floor under queries on a large filter: one
// dependent random read in 128 MiB (a pointer chase, one line at a time).
// A query that hashes and then needs even one such read cannot cost less
// than BenchmarkHashes plus this.
func BenchmarkMemoryLatency(b *testing.B) {
	mem := make([]uint64, 128<<20/8)
	perm := rand.New(rand.NewPCG(3, 4)).Perm(len(mem) / 8) // one per 64-byte line
	for i, p := range perm {
		mem[p*8] = uint64(perm[(i+1)%len(perm)] * 8)
	}
	p := uint64(perm[0] * 8)
	for b.Loop() {
		p = mem[p]
	}
	sink += p
}

// BenchmarkOpen1GiB opens and closes a 1 GiB (sparse) filter file.
func BenchmarkOpen1GiB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "1g.pkbf")
	if err := Create(path, 3, 33); err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkProbablyMapped queries filters from Open, whose queries guard
// against a file cut short (see ErrFileChanged): the cost of that guard is
// the difference to BenchmarkProbably's filters from Parse.
func BenchmarkProbablyMapped(b *testing.B) {
	for _, c := range []struct {
		name string
		l    uint8
		full bool
	}{
		{"InCache/HalfSet/RSA2048", 20, false},
		{"InCache/AllSet/RSA2048", 20, true},
		{"Large128MiB/HalfSet/RSA2048", 30, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := reopen(b, benchFilter(b, 12, c.l, c.full), "Open")
			keys := benchKeys(b, "rsa2048.spki.der")
			b.ReportAllocs()
			hits := 0
			for i := 0; b.Loop(); i++ {
				if f.Probably(keys(i)) {
					hits++
				}
			}
			sink += uint64(hits)
		})
	}
}

// BenchmarkBatch times ProbablyBatch, and Probably in a loop, on batches
// of 256 fresh RSA-2048 SPKIs against the floors of the machine it runs
// on, measured in the same run and on the same filter memory:
//
//   - hash: the two hashes of a key (BenchmarkBatch/Hashes);
//   - load: one independent random 1-byte load from the filter's data,
//     with as many in flight as the CPU overlaps (addresses from a cheap
//     mix of a counter);
//   - dep: one dependent random read from it (each address from the byte
//     read before).
//
// A batch cannot beat max(hash, lines × load) per key, where lines is the
// number of a key's lines it must read: 12 when every bit is set (k 12),
// about 2 for a key not in a half-full filter, its bits tested in turn.
// Each query benchmark reports ns/key, x-hashes (its time over the hashes'
// of a fresh batch, timed side by side in every iteration: this machine's
// speed drifts) and x-floor (its ns/key over max(hash, lines × load), from
// the floors timed just before it on the same memory), with the floors
// themselves as hash-ns, load-ns and dep-ns. Where the machine cannot
// hide memory work under hashing (see the comment above probe.RoundKeys), the
// floor is their sum: x-sum is ns/key over hash + lines × load.
//
// The filters are 256 MiB (k 12) from Parse (heap memory), Open (the
// file's mapping) and ReadFilter (huge pages where Linux gives them), 1 MiB
// (in the L3) and 128 KiB (in the L2): there ProbablyBatch is Probably in
// a loop, and x-hashes is Probably's in-cache figure measured side by side
// with the hashes.
func BenchmarkBatch(b *testing.B) {
	keys := make([][]byte, 256)
	out := make([]bool, len(keys))
	run := batchRunner(b, keys)
	b.Run("Hashes", func(b *testing.B) { run(b, func() { hashAll(keys) }) })
	for _, c := range []struct {
		name string
		l    uint8
		full bool   // all bits set, else random bytes
		from string // "": Parse of heap memory; else Open or ReadFilter of a file
	}{
		{"256MiB/HalfSet", 31, false, ""},
		{"256MiB/AllSet", 31, true, ""},
		{"256MiB/HalfSet/Open", 31, false, "Open"},
		{"256MiB/AllSet/Open", 31, true, "Open"},
		{"256MiB/HalfSet/ReadFilter", 31, false, "ReadFilter"},
		{"256MiB/AllSet/ReadFilter", 31, true, "ReadFilter"},
		{"1MiB/HalfSet", 23, false, ""},
		{"1MiB/AllSet", 23, true, ""},
		{"128KiB/HalfSet", 20, false, ""},
		{"128KiB/AllSet", 20, true, ""},
	} {
		// The filter is made only when a benchmark under c.name runs.
		b.Run(c.name, func(b *testing.B) {
			f := benchFilter(b, 12, c.l, c.full)
			if c.from != "" {
				f = reopen(b, f, c.from)
			}
			lines := 2.0 // a key not in a half-full filter, bits in turn
			if c.full {
				lines = 12
			}
			query := func(name string, q func()) {
				b.Run(name, func(b *testing.B) {
					fl := measureFloors(keys, f.data)
					run(b, q)
					ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N*len(keys))
					b.ReportMetric(ns/max(fl.hash, lines*fl.load), "x-floor")
					b.ReportMetric(ns/(fl.hash+lines*fl.load), "x-sum")
					b.ReportMetric(fl.hash, "hash-ns")
					b.ReportMetric(fl.load, "load-ns")
					b.ReportMetric(fl.dep, "dep-ns")
				})
			}
			query("Probably", func() {
				for i, k := range keys {
					out[i] = f.Probably(k)
				}
			})
			query("ProbablyBatch", func() { f.ProbablyBatch(keys, out) })
		})
	}
	b.Run("KeySet", benchmarkKeySet)
}

// benchmarkKeySet (BenchmarkBatch/KeySet) times ProbablyBatch and
// Probably in a loop on batches of 256 keys taken in turn from a set of
// distinct RSA-2048 SPKIs (each its own allocation, as keys a program
// holds in a slice): 1,024 (300 KB, in the caches), 65,536 (19 MB) and
// 262,144 (77 MB, more than this machine's caches hold). Each iteration times the hashes alone
// of the next 256 keys of the set, outside the benchmark's timer, then
// the query of the 256 after them, so that neither finds its keys in the
// caches unless the whole set fits: x-hashes is the query's time over
// those hashes', side by side; x-floor is ns/key over max(hash, lines ×
// load), with hash that time per key and load, dep as in BenchmarkBatch.
// keys-MB is the set's total size. The filters are 128 KiB (in the L2),
// 4 MiB (the largest ProbablyBatch takes as in the caches), 16 MiB and
// 256 MiB (from Parse, Open and ReadFilter), half their bits set: the
// keys are absent from them.
func benchmarkKeySet(b *testing.B) {
	spki := testkit.ReadFile(b, filepath.Join(keysDir, "rsa2048.spki.der")) // a DER SPKI
	sets := map[int][][]byte{}
	keySet := func(n int) [][]byte {
		if sets[n] == nil {
			set := make([][]byte, n)
			for i := range set {
				set[i] = bytes.Clone(spki)
				binary.LittleEndian.PutUint32(set[i][len(spki)-4:], uint32(i))
			}
			sets[n] = set
		}
		return sets[n]
	}
	out := make([]bool, 256)
	for _, c := range []struct {
		name string
		l    uint8
		from string // as in BenchmarkBatch
	}{
		{"128KiB", 20, ""},
		{"4MiB", 25, ""},
		{"16MiB", 27, ""},
		{"256MiB", 31, ""},
		{"256MiB/Open", 31, "Open"},
		{"256MiB/ReadFilter", 31, "ReadFilter"},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := benchFilter(b, 12, c.l, false)
			if c.from != "" {
				f = reopen(b, f, c.from)
			}
			for _, n := range []int{1 << 10, 1 << 16, 1 << 18} {
				set := keySet(n)
				query := func(name string, q func(keys [][]byte)) {
					b.Run(fmt.Sprintf("Keys%d/%s", n, name), func(b *testing.B) {
						fl := measureFloors(set[:256], f.data)
						b.ReportAllocs()
						var hashing time.Duration
						next := 0
						window := func() [][]byte {
							if next+256 > len(set) {
								next = 0
							}
							next += 256
							return set[next-256 : next]
						}
						for b.Loop() {
							b.StopTimer()
							start := time.Now()
							hashAll(window())
							hashing += time.Since(start)
							keys := window()
							b.StartTimer()
							q(keys)
						}
						keysN := float64(b.N * 256)
						ns := float64(b.Elapsed().Nanoseconds()) / keysN
						hash := float64(hashing.Nanoseconds()) / keysN
						b.ReportMetric(ns, "ns/key")
						b.ReportMetric(float64(b.Elapsed())/float64(hashing), "x-hashes")
						b.ReportMetric(ns/max(hash, 2*fl.load), "x-floor")
						b.ReportMetric(hash, "hash-ns")
						b.ReportMetric(fl.load, "load-ns")
						b.ReportMetric(fl.dep, "dep-ns")
						b.ReportMetric(float64(n*len(spki))/1e6, "keys-MB")
					})
				}
				query("Probably", func(keys [][]byte) {
					for i, k := range keys {
						out[i] = f.Probably(k)
					}
				})
				query("ProbablyBatch", func(keys [][]byte) { f.ProbablyBatch(keys, out) })
			}
		})
	}
}

// floors are a machine's costs under a batch, in ns: see BenchmarkBatch.
type floors struct{ hash, load, dep float64 }

// measureFloors times the floors on keys' copies and on data, taking the
// fastest of several tries of each (each try long enough to swamp the
// clock's cost), so that a moment's noise does not lower the bar.
func measureFloors(keys [][]byte, data []byte) floors {
	const tries = 5
	best := func(n int, f func()) float64 {
		t := math.Inf(1)
		for range tries {
			start := time.Now()
			f()
			t = min(t, float64(time.Since(start).Nanoseconds())/float64(n))
		}
		return t
	}
	const loads = 1 << 14
	var seed uint64
	return floors{
		hash: best(16*len(keys), func() {
			for range 16 {
				hashAll(keys)
			}
		}),
		load: best(loads, func() { seed++; sink += independentLoads(data, loads, seed) }),
		dep:  best(loads/16, func() { seed++; sink += dependentLoads(data, loads/16, seed) }),
	}
}

// mix is a cheap bijective scramble of a counter (the murmur3 finalizer's
// first half).
func mix(v uint64) uint64 {
	v ^= v >> 33
	v *= 0xff51afd7ed558ccd
	return v ^ v>>33
}

// independentLoads reads n random bytes of data (whose length is a power
// of two, as a filter's is) at addresses that depend on nothing loaded:
// the CPU overlaps as many as it can.
func independentLoads(data []byte, n int, seed uint64) uint64 {
	last := uint64(len(data) - 1)
	var s uint64
	for i := range uint64(n) {
		s += uint64(data[mix(seed<<32+i)&last])
	}
	return s
}

// dependentLoads reads n random bytes of data, each address made from the
// byte read before: one round trip at a time.
func dependentLoads(data []byte, n int, seed uint64) uint64 {
	last := uint64(len(data) - 1)
	p := seed
	for range n {
		p = mix(p + uint64(data[p&last]))
	}
	return p
}

// batchRunner fills keys with copies of an RSA-2048 SPKI and returns a
// function that benchmarks a query of all of them: each iteration gives
// the keys a new counter in their last bytes and times the hashes alone of
// them, outside the benchmark's timer, then gives them another and runs
// the query. It reports ns/key and x-hashes, the query's time over the
// hashes', measured side by side.
func batchRunner(b *testing.B, keys [][]byte) func(b *testing.B, query func()) {
	spki := testkit.ReadFile(b, filepath.Join(keysDir, "rsa2048.spki.der")) // a DER SPKI
	for i := range keys {
		keys[i] = bytes.Clone(spki)
	}
	counter := uint32(0)
	refresh := func() {
		for _, k := range keys {
			counter++
			binary.LittleEndian.PutUint32(k[len(k)-4:], counter)
		}
	}
	return func(b *testing.B, query func()) {
		b.ReportAllocs()
		var hashing time.Duration
		for b.Loop() {
			b.StopTimer()
			refresh()
			start := time.Now()
			hashAll(keys)
			hashing += time.Since(start)
			refresh()
			b.StartTimer()
			query()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
		b.ReportMetric(float64(b.Elapsed())/float64(hashing), "x-hashes")
	}
}

// hashAll is the hashes' floor the benchmarks judge queries against: two
// calls of github.com/cespare/xxhash/v2 a key (seed 0, seed 1), the
// reference, whatever path the queries' own hashes take.
func hashAll(keys [][]byte) {
	var d xxhash.Digest
	for _, k := range keys {
		d.ResetWithSeed(1)
		d.Write(k)
		sink += xxhash.Sum64(k) ^ d.Sum64()
	}
}

// reopen writes f to a file and returns the filter from Open or
// ReadFilter (into huge pages: mapfile.AllocHuge) of that file.
func reopen(b *testing.B, f *Filter, from string) *Filter {
	path := filepath.Join(b.TempDir(), "f.pkbf")
	file, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.WriteTo(file); err != nil {
		b.Fatal(err)
	}
	file.Close()
	if from == "Open" {
		f, err = Open(path)
		b.Cleanup(func() { f.Close() })
	} else {
		file, err = os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer file.Close()
		f, err = ReadFilter(file)
	}
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// BenchmarkBatchDepth times ProbablyBatch's rounds at each depth (the
// positions a key fetches after its second hash), forced, on 256 MiB
// filters in huge pages (k 12) with a share of 1-2^-j of their bits set:
// the figures behind fetching as many as the keys needed on average (bits
// in turn: the mean for a key not in the filter: 2.0, 3.9, 6.4, 8.6 and
// 12).
func BenchmarkBatchDepth(b *testing.B) {
	keys := make([][]byte, 256)
	out := make([]bool, len(keys))
	run := batchRunner(b, keys)
	for _, j := range []int{1, 2, 3, 4, 64} {
		b.Run(fmt.Sprintf("Set%.4f", 1-math.Ldexp(1, -j)), func(b *testing.B) {
			h := Header{HashCount: 12, HashLength: 31}
			buf := mapfile.AllocHuge(int(h.FileSize()))
			h.AppendBinary(buf[:0])
			r := rand.New(rand.NewPCG(uint64(j), 2))
			for i := headerSize; i+8 <= len(buf); i += 8 {
				v := ^uint64(0) // each bit set with probability 1-2^-j
				if j < 64 {
					v = 0
					for range j {
						v |= r.Uint64()
					}
				}
				binary.LittleEndian.PutUint64(buf[i:], v)
			}
			mapfile.SettleHuge(buf)
			f, err := Parse(buf)
			if err != nil {
				b.Fatal(err)
			}
			for _, depth := range []int{1, 2, 4, 8, 12} {
				b.Run(fmt.Sprint("Depth", depth), func(b *testing.B) {
					run(b, func() { f.probeRounds(keys, out, depth) })
				})
			}
		})
	}
}

// BenchmarkBatchPasses takes ProbablyBatch's rounds apart, on a half-set
// filter of 256 MiB (every line a miss) on the heap and in huge pages
// (ReadFilter), and of 1 MiB (every line in the caches), each case timed
// against the hashes of the same keys side by side (x-hashes):
//
//   - HashStore: the two hashes of each key, stored: the floor;
//   - PrefetchEach: one prefetch of a random line of the filter after
//     each key's hashes;
//   - PrefetchSameLine: one prefetch after each key's hashes, of the same
//     line every time, always in the cache: what the prefetch instruction
//     costs the core apart from any memory traffic;
//   - LoadSameLine: a plain load of that line instead;
//   - PrefetchBlock: hashing 16 keys, then one burst of the 16 prefetches;
//   - PrefetchBlockTest: the same, then testing the bits the burst before
//     fetched (a round of depth 1 without the live keys);
//   - PrefetchBlockTestLater: testing them four bursts later instead;
//   - LoadBlock: no prefetch, 64 keys hashed and then their 64 bits
//     loaded, independent of each other;
//   - Pipeline/KeysN: the simplest pipeline, two lines a key: hashing N
//     keys, testing both bits of each key of the block before, then one
//     burst of the 2N prefetches; what a burst's size changes;
//   - Rounds: ProbablyBatch's rounds at depth 1.
//
// The figures behind the design are in the comment above probe.RoundKeys (internal/probe).
func BenchmarkBatchPasses(b *testing.B) {
	const block = 16
	keys := make([][]byte, 256)
	out := make([]bool, len(keys))
	run := batchRunner(b, keys)
	var xs, xs2 [256]uint64
	var lines [512]uintptr
	hash := func(j int) uint64 {
		h1, h2 := probe.Hashes(keys[j])
		xs[j], xs2[j] = h1, h1+h2
		return h1 ^ h2
	}
	for _, c := range []struct {
		name string
		l    uint8
		from string // as in BenchmarkBatch
	}{{"256MiB", 31, ""}, {"256MiB/ReadFilter", 31, "ReadFilter"}, {"1MiB", 23, ""}} {
		b.Run(c.name, func(b *testing.B) {
			f := benchFilter(b, 12, c.l, false)
			if c.from != "" {
				f = reopen(b, f, c.from)
			}
			data, mask, last := f.data, f.mask, uint64(len(f.data)-1)
			base := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
			line := func(j int) { lines[j] = base + uintptr(xs[j]&mask>>3) }
			var acc uint64
			pipeline := func(n int) func() {
				return func() {
					for s := 0; s < len(keys)+n; s += n {
						if s < len(keys) {
							for j := s; j < s+n; j++ {
								acc += hash(j)
								lines[2*j] = base + uintptr(xs[j]&mask>>3)
								lines[2*j+1] = base + uintptr(xs2[j]&mask>>3)
							}
						}
						for j := max(s-n, 0); j < s; j++ {
							out[j] = plainBit(data, last, xs[j]&mask)&plainBit(data, last, xs2[j]&mask) != 0
						}
						if s < len(keys) {
							probe.PrefetchLines(&lines[2*s], 2*n)
						}
					}
				}
			}
			for _, v := range []struct {
				name  string
				query func()
			}{
				{"HashStore", func() {
					for j := range keys {
						acc += hash(j)
					}
				}},
				{"PrefetchEach", func() {
					for j := range keys {
						acc += hash(j)
						line(j)
						probe.PrefetchLines(&lines[j], 1)
					}
				}},
				{"PrefetchSameLine", func() {
					for j := range keys {
						acc += hash(j)
						lines[j] = base
						probe.PrefetchLines(&lines[j], 1)
					}
				}},
				{"LoadSameLine", func() {
					for j := range keys {
						acc += hash(j) + uint64(data[0])
					}
				}},
				{"PrefetchBlock", func() {
					for s := 0; s < len(keys); s += block {
						for j := s; j < s+block; j++ {
							acc += hash(j)
							line(j)
						}
						probe.PrefetchLines(&lines[s], block)
					}
				}},
				{"PrefetchBlockTest", func() {
					for s := 0; s <= len(keys); s += block {
						if s < len(keys) {
							for j := s; j < s+block; j++ {
								acc += hash(j)
								line(j)
							}
							probe.PrefetchLines(&lines[s], block)
						}
						for j := max(s-block, 0); j < s; j++ {
							out[j] = plainBit(data, last, xs[j]&mask) != 0
						}
					}
				}},
				{"PrefetchBlockTestLater", func() {
					// Testing four blocks after the burst: long after
					// its lines have arrived.
					const lag = 4 * block
					for s := 0; s < len(keys)+lag; s += block {
						if s < len(keys) {
							for j := s; j < s+block; j++ {
								acc += hash(j)
								line(j)
							}
							probe.PrefetchLines(&lines[s], block)
						}
						for j := max(s-lag, 0); j < min(s-lag+block, len(keys)); j++ {
							out[j] = plainBit(data, last, xs[j]&mask) != 0
						}
					}
				}},
				{"LoadBlock", func() {
					// No prefetch: 64 keys hashed, then their 64
					// independent loads.
					for s := 0; s < len(keys); s += 4 * block {
						for j := s; j < s+4*block; j++ {
							acc += hash(j)
						}
						for j := s; j < s+4*block; j++ {
							out[j] = plainBit(data, last, xs[j]&mask) != 0
						}
					}
				}},
				{"Pipeline/Keys4", pipeline(4)},
				{"Pipeline/Keys16", pipeline(16)},
				{"Pipeline/Keys64", pipeline(64)},
				{"Rounds", func() { f.probeRounds(keys, out, 1) }},
			} {
				b.Run(v.name, func(b *testing.B) { run(b, v.query) })
			}
			sink += acc
		})
	}
}

// plainBit returns bit p of data, 0 or 1; last is len(data)-1.
func plainBit(data []byte, last, p uint64) uint64 {
	return uint64(data[p>>3&last]>>(7-p&7)) & 1
}
