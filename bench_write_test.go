package pkbf

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pkbf/pkbf/internal/bitwords"
	"github.com/pkbf/pkbf/internal/testkit"
)

// BenchmarkWritable compares Add with Probably on the same writable
// filter (L 20, k 12, in cache). Add sees a new key every time; the filter
// is cleared every 65536 adds so that it never fills up (the clearing
// costs under 0.1 ns an add).
func BenchmarkWritable(b *testing.B) {
	for _, kt := range []struct{ name, file string }{{"RSA2048", "rsa2048.spki.der"}, {"P256", "p256.spki.der"}} {
		b.Run("Add/"+kt.name, func(b *testing.B) {
			f, _ := New(12, 20)
			keys := benchKeys(b, kt.file)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i&0xffff == 0 {
					clear(f.words)
				}
				f.Add(keys(i))
			}
		})
		b.Run("ProbablyHit/"+kt.name, func(b *testing.B) {
			f, _ := New(12, 20)
			keys := benchKeys(b, kt.file)
			for i := range 32 { // keys(i) rewrites slot i+32 of its ring only
				f.Add(keys(i))
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if !f.Probably(keys(i & 31)) { // keys 0..31 were added
					b.Fatal("miss")
				}
			}
		})
	}
}

// BenchmarkBuild10M builds a filter of 10 million RSA-2048-sized SPKIs at
// L 27 (16 MiB) and writes it to a file, on one goroutine and on all cores.
// It reports keys per second for the adds and for the whole job.
func BenchmarkBuild10M(b *testing.B) {
	const n = 10_000_000
	k, l, err := Parameters(n, 0.01)
	if err != nil || l != 27 {
		b.Fatalf("Parameters(10M, 1%%) = %d, %d, %v; want L 27", k, l, err)
	}
	spki := testkit.ReadFile(b, filepath.Join(keysDir, "rsa2048.spki.der")) // a DER SPKI
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(map[bool]string{true: "OneGoroutine", false: "AllCores"}[workers == 1], func(b *testing.B) {
			dir := b.TempDir()
			var addTime, total time.Duration
			for b.Loop() {
				start := time.Now()
				f, _ := New(k, l)
				var wg sync.WaitGroup
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						// Each worker's keys: the SPKI with a distinct
						// counter in its last eight bytes, from its own
						// ring of buffers written well before use.
						var ring [64][]byte
						for i := range ring {
							ring[i] = append([]byte(nil), spki...)
						}
						for i := w; i < n; i += workers {
							key := ring[(i/workers)%64]
							binary.LittleEndian.PutUint64(key[len(key)-8:], uint64(i))
							f.Add(key)
						}
					}()
				}
				wg.Wait()
				addTime += time.Since(start)
				if err := f.WriteFile(filepath.Join(dir, "10m.pkbf")); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(n*b.N)/addTime.Seconds(), "adds/s")
			b.ReportMetric(float64(n*b.N)/total.Seconds(), "keys-written/s")
		})
	}
}

// BenchmarkAddInPlace adds new keys to a filter file edited in place: each
// add takes the exclusive flock(2), checks that the path still names the
// file and writes the header, as the reference implementation does.
func BenchmarkAddInPlace(b *testing.B) {
	_, f := createInPlace(b, 12, 24)
	defer f.Close()
	keys := benchKeys(b, "rsa2048.spki.der")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := f.Add(keys(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMerge merges four 64 MiB filter files (in the page cache after
// their first read) and reports the input bytes per second beside its
// floors, measured on the same files and buffers: reading the inputs
// (ReadAt a chunk at a time, discarding them), writing the output alone
// (synced and renamed, as Merge writes it; reported per input byte too),
// and a plain memory copy of as many bytes. Another sub-benchmark ORs one chunk into another, the
// merge's own work per byte, beside copy on the same chunks.
func BenchmarkMerge(b *testing.B) {
	const inputs, l = 4, 29 // 2^29 bits: 64 MiB each
	dir := b.TempDir()
	var paths []string
	for i := range inputs {
		f, _ := New(3, l)
		for j := range 1000 {
			f.Add(binary.LittleEndian.AppendUint64([]byte{byte(i)}, uint64(j)))
		}
		p := filepath.Join(dir, "in"+string(rune('0'+i)))
		if err := f.WriteFile(p); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	size := int64(Header{HashLength: l}.dataSize())
	out := filepath.Join(dir, "out")
	b.Run("merge", func(b *testing.B) {
		b.SetBytes(inputs * size)
		for b.Loop() {
			if _, err := Merge(context.Background(), out, paths...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor=read", func(b *testing.B) {
		b.SetBytes(inputs * size)
		buf := make([]byte, mergeChunk)
		for b.Loop() {
			for _, p := range paths {
				f, err := os.Open(p)
				if err != nil {
					b.Fatal(err)
				}
				for off := int64(HeaderSize); off < HeaderSize+size; off += mergeChunk {
					f.ReadAt(buf, off)
				}
				f.Close()
			}
		}
	})
	b.Run("floor=write", func(b *testing.B) { // the output alone, synced and renamed
		b.SetBytes(inputs * size)
		f, _ := New(3, l)
		for b.Loop() {
			if err := f.WriteFile(out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor=memmove", func(b *testing.B) {
		b.SetBytes(inputs * size)
		src, dst := make([]byte, size), make([]byte, size)
		for b.Loop() {
			for range inputs {
				copy(dst, src)
			}
		}
	})
	acc, chunk := make([]byte, mergeChunk), make([]byte, mergeChunk)
	b.Run("or-chunk", func(b *testing.B) {
		b.SetBytes(mergeChunk)
		for b.Loop() {
			bitwords.Or(acc, chunk)
		}
	})
	b.Run("copy-chunk", func(b *testing.B) {
		b.SetBytes(mergeChunk)
		for b.Loop() {
			copy(acc, chunk)
		}
	})
}
