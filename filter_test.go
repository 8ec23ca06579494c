package pkbf

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/pkbf/pkbf/internal/bitwords"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keys"
)

// vectorsDir is the publisher's example files, outside the project.
const vectorsDir = "../shared/vectors/pwnedkeys"

func vectors(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(vectorsDir); err != nil {
		t.Skipf("publisher's example vectors not found at %s (they live beside the project, in shared/): %v", vectorsDir, err)
	}
	return vectorsDir
}

var exampleFilters = []struct {
	name string
	k, l uint8
}{
	{"2_4_filter_example.pkbf", 2, 4},
	{"3_6_filter_example.pkbf", 3, 6},
	{"5_12_filter_example.pkbf", 5, 12},
	{"12_18_filter_example.pkbf", 12, 18},
}

// The publisher's fingerprints of its three example SPKIs.
const (
	fpRSA          = "9e03b56749abe821a6f5299d6f634b35404975f0552eb3347bf3adfad9af1109"
	fpP256         = "819f7d1dcd9f07bfcb59b7699f68994d89390c3bcd498cf7fb2e1ef3d272b89b"
	fpP256Compress = "316194405bf1c56c3395c4b6fcf32af83ca0e273fbf0832ef8364069a178ad75"
)

// keysDir holds the project's key fixtures (see its README).
const keysDir = "testdata/keys"

// exampleSPKIs returns the publisher's three SPKIs, extracted by keys.SPKI from
// its key files and checked against the published fingerprints.
func exampleSPKIs(t testing.TB) [][]byte {
	dir := vectors(t)
	var out [][]byte
	for _, c := range []struct{ file, fp string }{
		{"rsa2048_key.pem", fpRSA},
		{"p256_key.pem", fpP256},
		{"p256_compressed_spki.der", fpP256Compress},
	} {
		spki, err := keys.SPKI(testkit.ReadFile(t, filepath.Join(dir, c.file)))
		if err != nil {
			t.Fatalf("SPKI(%s): %v", c.file, err)
		}
		if got := keys.Fingerprint(spki); got != c.fp {
			t.Fatalf("fingerprint of %s = %s, want the published %s", c.file, got, c.fp)
		}
		out = append(out, spki)
	}
	return out
}

func TestExampleFilters(t *testing.T) {
	dir := vectors(t)
	spkis := exampleSPKIs(t)
	// Every key, CSR and certificate file, PEM and DER, of both keys.
	var keyFiles []string
	for _, base := range []string{"rsa2048", "p256"} {
		for _, kind := range []string{"key", "csr", "cert"} {
			for _, ext := range []string{"pem", "der"} {
				keyFiles = append(keyFiles, fmt.Sprintf("%s_%s.%s", base, kind, ext))
			}
		}
	}
	keyFiles = append(keyFiles, "p256_compressed_spki.der")
	for _, ex := range exampleFilters {
		t.Run(ex.name, func(t *testing.T) {
			path := filepath.Join(dir, ex.name)
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h := f.Header()
			if h.HashCount != ex.k || h.HashLength != ex.l || h.Revision != 1 || h.EntryCount != 3 || h.Updated.Unix() != 1555799917 {
				t.Errorf("header = %+v, want k %d, L %d, revision 1, 3 entries, updated 1555799917", h, ex.k, ex.l)
			}
			for _, kf := range keyFiles {
				spki, err := keys.SPKI(testkit.ReadFile(t, filepath.Join(dir, kf)))
				if err != nil {
					t.Errorf("SPKI(%s): %v", kf, err)
					continue
				}
				if !f.Probably(spki) {
					t.Errorf("Probably(SPKI of %s) = false, want true", kf)
				}
			}
			// The set bits are exactly the union of the three SPKIs' positions,
			// with bit p in byte p/8 under mask 0x80>>(p%8).
			want := make([]byte, h.dataSize())
			var pos []uint64
			for _, spki := range spkis {
				for _, p := range h.positions(pos[:0], spki) {
					want[p/8] |= 0x80 >> (p % 8)
				}
			}
			if got := testkit.ReadFile(t, path)[HeaderSize:]; !bytes.Equal(got, want) {
				t.Errorf("data = %x\nwant union of positions %x", got, want)
			}
			// The same through Parse and ReadFilter.
			raw := testkit.ReadFile(t, path)
			for name, open := range map[string]func() (*Filter, error){
				"Parse":      func() (*Filter, error) { return Parse(raw) },
				"ReadFilter": func() (*Filter, error) { return ReadFilter(iotest.OneByteReader(bytes.NewReader(raw))) },
			} {
				g, err := open()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if g.Header() != h || !bytes.Equal(g.data, want) {
					t.Errorf("%s gives a different filter from Open", name)
				}
			}
		})
	}
}

// buildFilter makes a whole filter file with the given keys' bits set,
// from positions alone (independently of the write side).
func buildFilter(t testing.TB, k, l uint8, keys ...[]byte) []byte {
	t.Helper()
	h := Header{HashCount: k, HashLength: l, EntryCount: uint32(len(keys))}
	b, err := h.AppendBinary(make([]byte, 0, h.FileSize()))
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, make([]byte, h.dataSize())...)
	var pos []uint64
	for _, key := range keys {
		for _, p := range (Header{HashCount: k, HashLength: l}).positions(pos[:0], key) {
			b[HeaderSize+p/8] |= 0x80 >> (p % 8)
		}
	}
	return b
}

func TestBadFiles(t *testing.T) {
	good := buildFilter(t, 3, 6, []byte("a key"))
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "0 bytes"},
		{"truncated header", good[:10], "10 bytes"},
		{"header only", good[:HeaderSize], "data is 0 bytes, header says 8: truncated"},
		{"truncated data", good[:len(good)-1], "data is 7 bytes, header says 8: truncated"},
		{"one trailing byte", append(bytes.Clone(good), 0), "data is 9 bytes, header says 8: 1 trailing bytes"},
		{"bad magic", append([]byte("PKBFV1"), good[6:]...), `magic is "PKBFV1"`},
		{"hash count 0", append(rawHeader("pkbfv1", 0, 0, 0, 0, 6), make([]byte, 8)...), "hash count is 0"},
		{"hash length 2", append(rawHeader("pkbfv1", 0, 0, 0, 1, 2), 0), "hash length is 2"},
		{"hash length 64", append(rawHeader("pkbfv1", 0, 0, 0, 1, 64), make([]byte, 8)...), "hash length is 64"},
		{"largest addressable hash length, tiny data", append(rawHeader("pkbfv1", 0, 0, 0, 1, maxAddressable), make([]byte, 8)...), fmt.Sprintf("header says %d", uint64(1)<<maxAddressable/8)},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(how string, f *Filter, err error) {
				t.Helper()
				if f != nil || !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s: got %v, %v; want ErrInvalidFile containing %q", how, f, err, tt.want)
				}
			}
			f, err := Parse(tt.b)
			check("Parse", f, err)
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".pkbf")
			if err := os.WriteFile(path, tt.b, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err = Open(path)
			check("Open", f, err)
			if err != nil && !strings.Contains(err.Error(), path) {
				t.Errorf("Open error %q does not name the file", err)
			}
			if !bytes.HasPrefix(tt.b, []byte("pkbfv1")) || len(tt.b) <= HeaderSize || tt.b[offHashLength] < 3 || tt.b[offHashLength] > 63 || tt.b[offHashCount] == 0 {
				f, err = ReadFilter(bytes.NewReader(tt.b))
				if f != nil || !errors.Is(err, ErrInvalidFile) {
					t.Errorf("ReadFilter: got %v, %v; want ErrInvalidFile", f, err)
				}
			}
		})
	}
}

// maxAddressable is the largest hash length whose data fits this
// platform's address space: 63 on 64-bit platforms, 33 on 32-bit ones.
var maxAddressable = func() uint8 {
	l := uint8(maxHashLength)
	for uint64(1)<<l/8 > uint64(math.MaxInt-HeaderSize) {
		l--
	}
	return l
}()

// Both sides of the address-space limit: the largest hash length that fits
// gets as far as the size check; one more (on 32-bit platforms) is refused
// as unaddressable, by Parse, Open and ReadFilter alike.
func TestAddressSpaceLimit(t *testing.T) {
	for _, l := range []uint8{maxAddressable, maxAddressable + 1} {
		if l > maxHashLength {
			continue // 64-bit: every valid hash length fits
		}
		b := append(rawHeader("pkbfv1", 0, 0, 0, 1, l), 0)
		_, err := Parse(b)
		refused := err != nil && strings.Contains(err.Error(), "more than this platform can address")
		if refused != (l > maxAddressable) {
			t.Errorf("hash length %d: Parse error %v", l, err)
		}
		if _, err := ReadFilter(bytes.NewReader(b)); !errors.Is(err, ErrInvalidFile) || (l > maxAddressable) != strings.Contains(err.Error(), "more than this platform can address") {
			t.Errorf("hash length %d: ReadFilter error %v", l, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "missing.pkbf"))
	var pe *fs.PathError
	if !errors.Is(err, os.ErrNotExist) || !errors.As(err, &pe) || errors.Is(err, ErrInvalidFile) {
		t.Errorf("Open(missing) error = %v, want an *fs.PathError for a missing file", err)
	}
	if _, err := Open(t.TempDir()); !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Open(directory) error = %v, want ErrInvalidFile: is a directory", err)
	}
}

func TestOpenDoesNotWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.pkbf")
	b := buildFilter(t, 3, 10, []byte("k"))
	if err := os.WriteFile(path, b, 0o444); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path) // works on a read-only file
	if err != nil {
		t.Fatal(err)
	}
	if !f.Probably([]byte("k")) {
		t.Error("Probably(k) = false after Open")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if !bytes.Equal(testkit.ReadFile(t, path), b) {
		t.Error("file changed after Open and Close")
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "closed Filter") {
			t.Errorf("query after Close: recover() = %v, want a panic naming the closed Filter", r)
		}
	}()
	f.Probably([]byte("k"))
}

func TestReadFilterLyingHeader(t *testing.T) {
	hdr := rawHeader("pkbfv1", 0, 0, 0, 3, maxAddressable) // claims 2^60 bytes on 64-bit platforms
	for _, n := range []int{0, 100, 3 << 20} {
		r := io.MultiReader(bytes.NewReader(hdr), io.LimitReader(zeros{}, int64(n)))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f, err := ReadFilter(r)
		runtime.ReadMemStats(&after)
		if f != nil || !errors.Is(err, ErrInvalidFile) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("%d data bytes: got %v, %v; want ErrInvalidFile wrapping io.ErrUnexpectedEOF", n, f, err)
		}
		// Before a quarter of the claim has arrived, ReadFilter reads into
		// chunks no larger than the data so far (1 MiB at first): at most
		// twice the data and one first chunk, plus slack for the runtime.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(2*n+1<<20+1<<20) {
			t.Errorf("%d data bytes: allocated %d bytes", n, alloc)
		}
	}
	// Exactly the declared size is read; the rest of the stream is left.
	b := append(buildFilter(t, 3, 10, []byte("x")), "next"...)
	r := bytes.NewReader(b)
	if _, err := ReadFilter(r); err != nil {
		t.Fatal(err)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "next" {
		t.Errorf("ReadFilter left %q, want %q", rest, "next")
	}
	// Read errors come back as they are.
	boom := errors.New("boom")
	if _, err := ReadFilter(io.MultiReader(bytes.NewReader(b[:30]), iotest.ErrReader(boom))); err != boom {
		t.Errorf("ReadFilter with a failing reader: error = %v, want %v", err, boom)
	}
}

// TestReadFilterMemory reads a 64 MiB filter from a stream in small reads,
// with the collector off so that every allocation counts: at most 1.25
// times the data, as ReadFilter's doc promises.
func TestReadFilterMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 80 MiB")
	}
	hdr := rawHeader("pkbfv1", 0, 0, 0, 3, 29) // 64 MiB of data
	const size = 1 << 26
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := ReadFilter(io.MultiReader(bytes.NewReader(hdr), iotest.HalfReader(io.LimitReader(zeros{}, size))))
	runtime.ReadMemStats(&after)
	if err != nil || f.Header().dataSize() != size {
		t.Fatal(err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("ReadFilter allocated %.3f× the data", float64(alloc)/size)
	if alloc > size*5/4+1<<20 {
		t.Errorf("ReadFilter allocated %d bytes for %d of data: %.2f×, want at most 1.25×", alloc, size, float64(alloc)/size)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestProbablyNoFalseNegatives(t *testing.T) {
	for _, l := range []uint8{3, 10, 26} {
		for _, k := range []uint8{1, 7, 17, 40} {
			var keys [][]byte
			for i := range 200 {
				keys = append(keys, fmt.Appendf(nil, "key %d", i))
			}
			f, err := Parse(buildFilter(t, k, l, keys...))
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range keys {
				if !f.Probably(key) {
					t.Fatalf("k %d L %d: Probably(%q) = false after adding it", k, l, key)
				}
			}
			if l == 26 && f.Probably([]byte("never added")) {
				t.Error("Probably(never added) = true in a nearly empty large filter")
			}
		}
	}
}

// Filters past roundsFrom take the batch path for them (rounds), and give
// the same answers.
func TestLargeFilterPath(t *testing.T) {
	keys := [][]byte{[]byte("one"), []byte("two")}
	for _, tt := range []struct {
		l     uint8
		large bool
	}{{20, false}, {25, false}, {26, true}} { // 4 MiB is the limit
		f, err := Parse(buildFilter(t, 7, tt.l, keys...))
		if err != nil {
			t.Fatal(err)
		}
		if f.large != tt.large {
			t.Errorf("L %d: large = %v, want %v", tt.l, f.large, tt.large)
		}
		if !f.Probably(keys[0]) || !f.Probably(keys[1]) || f.Probably([]byte("three")) {
			t.Errorf("L %d: wrong answers", tt.l)
		}
	}
}

func TestFalsePositiveRateAndFill(t *testing.T) {
	empty, _ := Parse(buildFilter(t, 3, 14))
	if r := empty.Header().FalsePositiveRate(); r != 0 {
		t.Errorf("empty FalsePositiveRate = %v, want 0", r)
	}
	// 1000 keys in 2^14 bits with k=3 (the reference's choice for 1%):
	// (1 - e^(-3000/16384))^3 = 0.00468.
	var keys [][]byte
	for i := range 1000 {
		keys = append(keys, fmt.Appendf(nil, "fp %d", i))
	}
	f, _ := Parse(buildFilter(t, 3, 14, keys...))
	rate := f.Header().FalsePositiveRate()
	if want := math.Pow(1-math.Exp(-3000.0/16384), 3); math.Abs(rate-want) > want*1e-3 {
		t.Errorf("FalsePositiveRate = %v, want %v", rate, want)
	}
	fill := float64(bitwords.Count(f.data)) / 16384
	var set int
	for _, c := range f.data {
		for ; c != 0; c &= c - 1 {
			set++
		}
	}
	if fill != float64(set)/16384 || fill < 0.15 || fill > 0.17 {
		t.Errorf("fill = %v, want %d/16384 ≈ 1-e^(-3000/16384) = 0.167", fill, set)
	}
	// Measured false positives agree with the estimate.
	var hits int
	for i := range 100000 {
		if f.Probably(fmt.Appendf(nil, "absent %d", i)) {
			hits++
		}
	}
	if measured := float64(hits) / 100000; measured < rate/2 || measured > rate*2 {
		t.Errorf("measured false-positive rate %v, estimate %v", measured, rate)
	}
}

func TestProbablyConcurrent(t *testing.T) {
	var present, all [][]byte
	for i := range 500 {
		present = append(present, fmt.Appendf(nil, "concurrent %d", i))
	}
	all = append(all, present...)
	for i := range 5000 {
		all = append(all, fmt.Appendf(nil, "absent %d", i))
	}
	// Single and batch queries (whose learned strategy all goroutines
	// share), checked against a model of the format: the bits positions
	// names, most significant first. TestLargeFilterPath covers the path
	// of filters larger than the caches.
	raw := buildFilter(t, 5, 20, present...)
	f, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]bool, len(all))
	var pos []uint64
	for i, key := range all {
		pos = f.Header().positions(pos[:0], key)
		want[i] = true
		for _, p := range pos {
			want[i] = want[i] && raw[HeaderSize+p/8]&(0x80>>(p%8)) != 0
		}
		if i < len(present) && !want[i] {
			t.Fatalf("the model says %q, which was added, is not in the filter", key)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]bool, 64)
			for start := (g * 613) % len(all); start+64 <= len(all); start += 64 * 8 {
				f.ProbablyBatch(all[start:start+64], out)
				for j, got := range out {
					if single := f.Probably(all[start+j]); got != want[start+j] || single != want[start+j] {
						errs <- fmt.Sprintf("%q: batch %v, single %v, want %v", all[start+j], got, single, want[start+j])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent queries: %s", e)
	}
}

func TestProbablyAllocs(t *testing.T) {
	key := bytes.Repeat([]byte("spki"), 80)
	f, _ := Parse(buildFilter(t, 12, 12, key))
	if !f.Probably(key) {
		t.Fatal("Probably(key) = false") // the full path, both hashes, was taken
	}
	if n := testing.AllocsPerRun(100, func() { f.Probably(key) }); n != 0 {
		t.Errorf("Probably allocates %v times per call, want 0", n)
	}
}

// Opening a 1 GiB filter maps it: nothing like its size reaches the heap.
func TestOpenLargeDoesNotCopy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "1g.pkbf")
	if err := Create(path, 3, 33); err != nil { // 2^33 bits: 1 GiB, sparse
		t.Skipf("no sparse 1 GiB file here: %v", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := Open(path)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 && runtime.GOOS == "linux" {
		t.Errorf("Open of a 1 GiB filter allocated %d bytes", grown)
	}
	if f.Probably([]byte("x")) || f.Header().dataSize() != 1<<30 {
		t.Error("wrong filter")
	}
}

// A Filter and a Writable stand apart (issue 43, item 2): neither holds
// the other, and a Filter holds no words that Add could be setting; both
// answer queries with the one core they share (issue 49, item 1).
func TestFilterAndWritableStandApart(t *testing.T) {
	filterT, writableT := reflect.TypeFor[Filter](), reflect.TypeFor[Writable]()
	// fields lists the types of t's fields, through embedded structs.
	var fields func(t reflect.Type) []reflect.Type
	fields = func(t reflect.Type) (all []reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			all = append(all, f.Type)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				all = append(all, fields(f.Type)...)
			}
		}
		return all
	}
	for _, ft := range fields(filterT) {
		if ft == reflect.PointerTo(writableT) || ft == writableT || ft == reflect.TypeFor[[]uint32]() {
			t.Errorf("Filter has a field of type %v", ft)
		}
	}
	for _, ft := range fields(writableT) {
		if ft == reflect.PointerTo(filterT) || ft == filterT {
			t.Errorf("Writable has a field of type %v", ft)
		}
	}
	type querier interface {
		Probably([]byte) bool
		ProbablyBatch([][]byte, []bool)
		Header() Header
		WriteTo(io.Writer) (int64, error)
		WriteFile(string) error
		Close() error
	}
	var _ querier = (*Filter)(nil)
	var _ querier = (*Writable)(nil)
}

// The root package reads in one sitting (issue 43, item 3; issue 49, item
// 1): at most 2,000 lines of non-test Go, no file over 600, and at most 45
// exports counted as go doc -all lists them: each const, var, func and
// type, and each method of each type, a method promoted from the core a
// Filter and a Writable share counted under both.
const maxLines, maxExports = 2000, 45

func TestRootReadsInOneSitting(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	total := 0
	var parsed []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		lines := fset.File(f.Pos()).LineCount()
		total += lines
		if lines > 600 {
			t.Errorf("%s is %d lines, more than 600", name, lines)
		}
	}
	pkg, err := doc.NewFromFiles(fset, parsed, "github.com/pkbf/pkbf")
	if err != nil {
		t.Fatal(err)
	}
	var api []string
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			api = append(api, v.Names...)
		}
	}
	values(pkg.Consts)
	values(pkg.Vars)
	for _, f := range pkg.Funcs {
		api = append(api, f.Name)
	}
	for _, typ := range pkg.Types {
		api = append(api, typ.Name)
		values(typ.Consts)
		values(typ.Vars)
		for _, f := range typ.Funcs {
			api = append(api, f.Name)
		}
		for _, m := range typ.Methods {
			api = append(api, typ.Name+"."+m.Name)
		}
	}
	t.Logf("%d lines; %d exports as go doc -all lists them: %s", total, len(api), strings.Join(api, " "))
	if total > maxLines {
		t.Errorf("the root package is %d lines, more than %d", total, maxLines)
	}
	if len(api) > maxExports {
		t.Errorf("the root package exports %d names and methods, more than %d", len(api), maxExports)
	}
}
