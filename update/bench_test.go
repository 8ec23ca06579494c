package update

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pkbf/pkbf"
)

// The cost of reading a downloaded 256 MiB filter (hash length 31) before
// it is installed: counting its bits set (the fill check), with the
// installed filter's bits compared (the subset check), and with the
// digest a pin needs. The file is in the page cache, as a download just
// written is. Figures: docs/performance.md.
func BenchmarkVerify256MiB(b *testing.B) {
	f, err := pkbf.New(20, 31)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "filter.pkbf")
	if err := f.WriteFile(path); err != nil {
		b.Fatal(err)
	}
	h := f.Header()
	f.Close()
	sig := &sshSig{hashAlg: "sha512"}
	for _, c := range []struct {
		name    string
		compare bool
		pins    pins
	}{
		{"count", false, pins{}},
		{"count+subset", true, pins{}},
		{"count+subset+sha256", true, pins{sha256: make([]byte, 32)}},
		{"count+subset+sha512", true, pins{sig: sig}},
	} {
		b.Run(c.name, func(b *testing.B) {
			installed, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer installed.Close()
			up := &updater{download: path, path: path, pins: c.pins, old: &h, installed: installed}
			b.SetBytes(int64(h.FileSize()))
			b.ReportAllocs()
			for b.Loop() {
				s, err := up.scan(h, c.compare, true)
				if err != nil || s.set != 0 || s.dropped != 0 {
					b.Fatal(s, err)
				}
			}
		})
	}
}

// countBits alone, over 256 MiB in memory: the popcount's share of the
// reading above.
func BenchmarkCountBits256MiB(b *testing.B) {
	data, old := make([]byte, 256<<20), make([]byte, 256<<20)
	for _, c := range []struct {
		name string
		old  []byte
	}{{"count", nil}, {"count+subset", old}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				for i := 0; i < len(data); i += scanChunk {
					var o []byte
					if c.old != nil {
						o = c.old[i : i+scanChunk]
					}
					countBits(data[i:i+scanChunk], o)
				}
			}
		})
	}
}
