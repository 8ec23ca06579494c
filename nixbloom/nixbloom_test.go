package nixbloom

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
)

// TestNix32Vectors checks encoding and decoding against nix-hash's own
// output, recorded in testdata/nix32.txt by testdata/gen.sh.
func TestNix32Vectors(t *testing.T) {
	f, err := os.Open("testdata/nix32.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	n := 0
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "#") {
			continue
		}
		hexText, nix, _ := strings.Cut(s.Text(), " ")
		raw, err := hex.DecodeString(hexText)
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeNix32(raw); got != nix {
			t.Errorf("encodeNix32(%s) = %s, nix-hash says %s", hexText, got, nix)
		}
		var dec [hashPartBytes]byte
		if err := decodeHashPart(&dec, nix); err != nil || !bytes.Equal(dec[:], raw) {
			t.Errorf("decodeHashPart(%s) = %x, %v; want %s", nix, dec, err, hexText)
		}
		n++
	}
	if n < 200 {
		t.Fatalf("only %d vectors", n)
	}
}

func TestNix32RoundTrip(t *testing.T) {
	for range 1000 {
		var b [hashPartBytes]byte
		rand.Read(b[:])
		var back [hashPartBytes]byte
		if err := decodeHashPart(&back, encodeNix32(b[:])); err != nil || back != b {
			t.Fatalf("round trip of %x: %x, %v", b, back, err)
		}
	}
}

func randomPath() string {
	var b [hashPartBytes]byte
	rand.Read(b[:])
	return "/nix/store/" + encodeNix32(b[:]) + "-hello-2.12.1"
}

func TestSize(t *testing.T) {
	if m, k, err := Size(500000, 0.01); m != 4792536 || k != 7 || err != nil {
		t.Errorf("Size(500000, 1%%) = %d, %d, %v; want 4792536, 7", m, k, err)
	}
	if m, k, err := Size(0, 0.01); m != 8 || k != 1 || err != nil {
		t.Errorf("Size(0, 1%%) = %d, %d, %v; want 8, 1", m, k, err)
	}
	// One path at 1/2: ceil(1/ln 2) = 2 bits, rounded up to 8; k = round(8 ln 2) = 6.
	if m, k, err := Size(1, 0.5); m != 8 || k != 6 || err != nil {
		t.Errorf("Size(1, 0.5) = %d, %d, %v; want 8, 6", m, k, err)
	}
	for _, p := range []float64{0, 1, -1, 2, math.NaN()} {
		if _, _, err := Size(10, p); err == nil {
			t.Errorf("Size(10, %v) succeeded", p)
		}
	}
	if _, _, err := Size(10, 1e-30); err == nil || !strings.Contains(err.Error(), "more than 64") {
		t.Errorf("Size(10, 1e-30) error = %v, want too many hash functions", err)
	}
}

func TestFilterRoundTrip(t *testing.T) {
	const n, p = 5000, 0.01
	f, err := New(n, p)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for range n {
		path := randomPath()
		paths = append(paths, path)
		if err := f.Add(path); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if w, err := f.WriteTo(&buf); err != nil || w != int64(buf.Len()) || uint64(buf.Len()) != headerSize+f.M()/8 {
		t.Fatalf("WriteTo = %d, %v; %d bytes", w, err, buf.Len())
	}
	g, err := Parse(buf.Bytes())
	if err != nil || g.K() != f.K() || g.M() != f.M() {
		t.Fatalf("Parse = %v", err)
	}
	for _, path := range paths {
		base := path[strings.LastIndexByte(path, '/')+1:]
		for _, form := range []string{path, base, base[:hashPartLen]} {
			if ok, err := g.MayContain(form); !ok || err != nil {
				t.Fatalf("MayContain(%s) = %v, %v after Add", form, ok, err)
			}
		}
	}
	const trials = 100000
	hits := 0
	for range trials {
		if ok, _ := g.MayContain(randomPath()); ok {
			hits++
		}
	}
	if rate := float64(hits) / trials; rate < p/2 || rate > p*1.5 {
		t.Errorf("measured false-positive rate %v, want near %v", rate, p)
	}
}

// header builds a filter file's header field by field.
func header(magicText string, v, k, m uint64) []byte {
	b := []byte(magicText)
	for _, x := range []uint64{v, k, m} {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return b
}

func TestBadFilters(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "0 bytes, shorter than the 32-byte header"},
		{"short header", header("NixBloom", 1, 1, 8)[:31], "31 bytes"},
		{"magic", append(header("NixBlooM", 1, 1, 8), 0), `magic is "NixBlooM"`},
		{"version 2", append(header("NixBloom", 2, 1, 8), 0), "version 2, want 1"},
		{"k 0", append(header("NixBloom", 1, 0, 8), 0), "k is 0"},
		{"k 65, one past the cap", append(header("NixBloom", 1, 65, 8), 0), "k is 65, want 1 to 64"},
		{"hostile k", append(header("NixBloom", 1, 1<<63, 8), 0), "k is 9223372036854775808"},
		{"m 0", header("NixBloom", 1, 1, 0), "m is 0 bits"},
		{"m 12", append(header("NixBloom", 1, 1, 12), 0, 0), "m is 12 bits, want a positive multiple of 8"},
		{"truncated bits", append(header("NixBloom", 1, 1, 16), 0), "1 bytes of bits, header says 2"},
		{"trailing bytes", append(header("NixBloom", 1, 1, 8), 0, 0), "2 bytes of bits, header says 1"},
		{"huge m, tiny file", append(header("NixBloom", 1, 1, 1<<33), 0), "1 bytes of bits, header says 1073741824"},
	}
	for _, tt := range tests {
		f, err := Parse(tt.b)
		if f != nil || !errors.Is(err, ErrInvalidFilter) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Parse = %v, %v; want ErrInvalidFilter containing %q", tt.name, f, err, tt.want)
		}
	}
	// The largest k is accepted.
	if _, err := Parse(append(header("NixBloom", 1, MaxHashCount, 8), 0)); err != nil {
		t.Errorf("k %d: %v", MaxHashCount, err)
	}
}

func TestBadPaths(t *testing.T) {
	f, _ := New(10, 0.01)
	good := encodeNix32(make([]byte, hashPartBytes))
	for _, path := range []string{
		"", "abc", "/nix/store/", good[:31], good + "x", good + "-",
		"e" + good[1:], "o" + good[1:], "t" + good[1:], "u" + good[1:], "A" + good[1:],
		"/nix/store/" + good[:31] + "-name", "/nix/store/" + good + "_name",
		// Issue 41 follow-up F6: what could forge a line of output, or is
		// no store path Nix takes.
		"/x\npresent\t/nix/store/" + good + "-name", "/nix/store\t/" + good + "-name", "/nix/store\x7f/" + good + "-name",
		"junk/" + good + "-name", "nix/store/" + good + "-name", "/" + good + "-name", "/nix//store/" + good + "-name",
		"/nix/store/../store/" + good + "-name", "/nix/store/" + good, "/nix/store/" + good + "-a b", "/nix/store/" + good + "-a\nb",
		good + "-" + strings.Repeat("n", 212),
	} {
		if ok, err := f.MayContain(path); ok || !errors.Is(err, ErrInvalidPath) {
			t.Errorf("MayContain(%q) = %v, %v; want ErrInvalidPath", path, ok, err)
		}
		if err := f.Add(path); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("Add(%q) = %v", path, err)
		}
	}
}

func TestMayContainAllocs(t *testing.T) {
	f, _ := New(1000, 0.01)
	path := randomPath()
	f.Add(path)
	if n := testing.AllocsPerRun(100, func() { f.MayContain(path) }); n != 0 {
		t.Errorf("MayContain allocates %v times", n)
	}
}

// cache is an httptest binary cache with a nix-cache-info and files.
func cache(t *testing.T, files map[string]string) (*httptest.Server, *atomic.Int32, map[string]int) {
	var requests atomic.Int32
	seen := map[string]int{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		seen[r.URL.Path]++
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s, &requests, seen
}

func TestFetch(t *testing.T) {
	f, _ := New(100, 0.01)
	path := randomPath()
	f.Add(path)
	var buf bytes.Buffer
	f.WriteTo(&buf)
	filter := buf.String()
	other, _, _ := cache(t, map[string]string{"/elsewhere/bloom": filter})
	for _, tt := range []struct {
		name, cachePath, field, filterPath string
	}{
		{"relative", "", "bloom-filter", "/bloom-filter"},
		{"relative, cache in a folder", "/cache", "filters/paths.bloom", "/cache/filters/paths.bloom"},
		{"relative, trailing slash", "/cache/", "paths.bloom", "/cache/paths.bloom"},
		{"absolute", "", other.URL + "/elsewhere/bloom", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{strings.TrimSuffix(tt.cachePath, "/") + "/nix-cache-info": "StoreDir: /nix/store\nWantMassQuery: 1\nBloomFilter: " + tt.field + "\nPriority: 40\n"}
			if tt.filterPath != "" {
				files[tt.filterPath] = filter
			}
			s, _, _ := cache(t, files)
			g, err := Fetch(context.Background(), s.Client(), s.URL+tt.cachePath)
			if err != nil {
				t.Fatal(err)
			}
			if ok, _ := g.MayContain(path); !ok || g.M() != f.M() {
				t.Error("fetched filter lacks the path")
			}
		})
	}
	// No field: ErrNoFilter, and no probing of a default path.
	s, requests, seen := cache(t, map[string]string{"/nix-cache-info": "StoreDir: /nix/store\n"})
	if _, err := Fetch(context.Background(), s.Client(), s.URL); !errors.Is(err, ErrNoFilter) || requests.Load() != 1 || seen["/nix-cache-info"] != 1 {
		t.Errorf("no BloomFilter field: %v after %d requests %v", err, requests.Load(), seen)
	}
	bad := append([]byte(filter[:headerSize]), filter[headerSize:len(filter)-1]...)
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no nix-cache-info", map[string]string{}, "404 Not Found"},
		{"filter missing", map[string]string{"/nix-cache-info": "BloomFilter: x\n"}, "404 Not Found"},
		{"empty field", map[string]string{"/nix-cache-info": "BloomFilter:\n"}, "BloomFilter field is empty"},
		{"truncated filter", map[string]string{"/nix-cache-info": "BloomFilter: x\n", "/x": string(bad)}, "Content-Length"},
		{"filter with trailing bytes", map[string]string{"/nix-cache-info": "BloomFilter: x\n", "/x": filter + "junk"}, "Content-Length"},
		{"not a filter", map[string]string{"/nix-cache-info": "BloomFilter: x\n", "/x": "<html>not found</html> and more text here"}, "magic is"},
		{"huge claimed size", map[string]string{"/nix-cache-info": "BloomFilter: x\n", "/x": string(header("NixBloom", 1, 1, 1<<33+64))}, "more than the 1073741824 Fetch takes"},
		{"nix-cache-info too large", map[string]string{"/nix-cache-info": strings.Repeat("x", maxCacheInfo+1)}, "larger than"},
	} {
		s, _, _ := cache(t, tt.files)
		if _, err := Fetch(context.Background(), s.Client(), s.URL); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Fetch error = %v, want %q", tt.name, err, tt.want)
		}
	}
	// A body shorter than the header says, without a Content-Length.
	chunked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/nix-cache-info" {
			fmt.Fprint(w, "BloomFilter: x\n")
			return
		}
		w.Write([]byte(filter[:headerSize]))
		w.(http.Flusher).Flush() // chunked: no Content-Length
		w.Write([]byte(filter[headerSize : len(filter)-1]))
	}))
	defer chunked.Close()
	if _, err := Fetch(context.Background(), chunked.Client(), chunked.URL); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("short chunked filter: %v", err)
	}
}

func BenchmarkMayContain(b *testing.B) {
	f, _ := New(500000, 0.01)
	var paths []string
	for range 1024 {
		p := randomPath()
		paths = append(paths, p)
		f.Add(p)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f.MayContain(paths[i&1023])
	}
}

// A server that compresses: Fetch asks for the bytes as they are and reads
// them into one buffer, with the collector off so every allocation counts
// (a transport that asked for gzip would inflate it past every size
// check); a server that compresses although asked not to is refused.
func TestFetchEncoding(t *testing.T) {
	const m = 1 << 29 // 64 MiB of bits
	hdr := header("NixBloom", 1, 3, m)
	var asked atomic.Value
	serve := func(always bool) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/nix-cache-info" {
				fmt.Fprint(w, "BloomFilter: x\n")
				return
			}
			asked.Store(r.Header.Get("Accept-Encoding"))
			if !always && !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				w.Header().Set("Content-Length", fmt.Sprint(len(hdr)+m/8))
				w.Write(hdr)
				io.Copy(w, io.LimitReader(zeroReader{}, m/8))
				return
			}
			w.Header().Set("Content-Encoding", "gzip")
			z := gzip.NewWriter(w)
			z.Write(hdr)
			io.Copy(z, io.LimitReader(zeroReader{}, m/8))
			z.Close()
		}))
		t.Cleanup(s.Close)
		return s
	}
	s := serve(false)
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := Fetch(context.Background(), s.Client(), s.URL)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if f.M() != m || asked.Load() != "identity" {
		t.Errorf("m %d, Accept-Encoding %q", f.M(), asked.Load())
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("Fetch of %d bytes allocated %.3f× that", m/8, float64(alloc)/(m/8))
	if alloc > m/8+4<<20 {
		t.Errorf("Fetch allocated %d bytes for a %d-byte filter", alloc, m/8)
	}
	gz := serve(true)
	if _, err := Fetch(context.Background(), gz.Client(), gz.URL); !errors.Is(err, ErrInvalidFilter) || !strings.Contains(err.Error(), "Content-Encoding") {
		t.Errorf("a server that gzips anyway: Fetch = %v", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }
