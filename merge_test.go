package pkbf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pkbf/pkbf/internal/bitwords"
	"github.com/pkbf/pkbf/internal/testkit"
)

// writeShard writes a filter holding keys, with the given header counters,
// to dir/name, and returns its path.
func writeShard(t *testing.T, dir, name string, k, l uint8, rev, count uint32, keys [][]byte) string {
	t.Helper()
	b := buildFilter(t, k, l, keys...)
	h := Header{Revision: rev, EntryCount: count, HashCount: k, HashLength: l, Updated: time.Unix(1e9, 0)}
	if _, err := h.AppendBinary(b[:0]); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Random shards of a key set, overlapping or not, merge into exactly the
// filter of all the keys: the same data bits, the highest revision plus
// one, the counts summed.
func TestMergeEqualsOneFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		k, l := uint8(1+rng.IntN(12)), uint8(3+rng.IntN(16))
		keys := testKeys(fmt.Sprint("merge ", trial), rng.IntN(3000))
		dir := t.TempDir()
		shards := make([][][]byte, 1+rng.IntN(6))
		for _, key := range keys {
			i := rng.IntN(len(shards))
			shards[i] = append(shards[i], key)
			if rng.IntN(10) == 0 { // some keys in two shards
				j := rng.IntN(len(shards))
				shards[j] = append(shards[j], key)
			}
		}
		var paths []string
		var maxRev, sum uint32
		for i, s := range shards {
			rev, count := rng.Uint32N(100), uint32(len(s))
			maxRev, sum = max(maxRev, rev), sum+count
			paths = append(paths, writeShard(t, dir, fmt.Sprint("shard", i), k, l, rev, count, s))
		}
		out := filepath.Join(dir, "merged.pkbf")
		start := time.Now()
		h, err := Merge(context.Background(), out, paths...)
		if err != nil {
			t.Fatal(err)
		}
		got := testkit.ReadFile(t, out)
		want := buildFilter(t, k, l, keys...)
		if !bytes.Equal(got[HeaderSize:], want[HeaderSize:]) {
			t.Fatalf("trial %d (k %d, L %d, %d shards): merged data differs from one filter of all %d keys", trial, k, l, len(shards), len(keys))
		}
		fh, err := ParseHeader(got)
		if err != nil || fh != h {
			t.Fatalf("trial %d: file header %+v (%v), Merge returned %+v", trial, fh, err, h)
		}
		checkHeader(t, fmt.Sprint("trial ", trial), h, maxRev+1, sum, start, time.Now())
		if h.HashCount != k || h.HashLength != l {
			t.Errorf("trial %d: parameters %d, %d; want %d, %d", trial, h.HashCount, h.HashLength, k, l)
		}
	}
}

// The header's counters saturate as Add's do.
func TestMergeCountersSaturate(t *testing.T) {
	dir := t.TempDir()
	a := writeShard(t, dir, "a", 2, 8, math.MaxUint32, math.MaxUint32-1, nil)
	b := writeShard(t, dir, "b", 2, 8, 3, 5, nil)
	h, err := Merge(context.Background(), filepath.Join(dir, "out"), a, b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Revision != math.MaxUint32 || h.EntryCount != math.MaxUint32 {
		t.Errorf("revision %d, count %d; want both 2^32-1", h.Revision, h.EntryCount)
	}
}

// Merging into one of the inputs replaces it with the union.
func TestMergeIntoAnInput(t *testing.T) {
	dir := t.TempDir()
	keys := testKeys("into", 200)
	a := writeShard(t, dir, "a", 3, 12, 1, 100, keys[:100])
	b := writeShard(t, dir, "b", 3, 12, 1, 100, keys[100:])
	if _, err := Merge(context.Background(), a, a, b); err != nil {
		t.Fatal(err)
	}
	if got, want := testkit.ReadFile(t, a)[HeaderSize:], buildFilter(t, 3, 12, keys...)[HeaderSize:]; !bytes.Equal(got, want) {
		t.Error("a merged into itself does not hold both shards' keys")
	}
	checkNoTemp(t, dir)
}

// checkNoTemp fails if dir holds a temporary file of an atomic write.
func checkNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// Bad inputs give an error that names the file, and leave the output as
// it was, with no temporary file.
func TestMergeErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeShard(t, dir, "good", 3, 12, 1, 1, testKeys("g", 1))
	other := writeShard(t, dir, "other", 4, 12, 1, 1, nil)
	raw := testkit.ReadFile(t, good)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	short := write("short", raw[:len(raw)-1])
	long := write("long", append(bytes.Clone(raw), 0))
	magic := write("magic", append([]byte("pkbfv2"), raw[6:]...))
	out := write("out", []byte("the old output"))
	for _, c := range []struct {
		name   string
		inputs []string
		want   []string
	}{
		{"parameters", []string{good, other}, []string{"other", "good", "hash count 4", "same parameters"}},
		{"truncated", []string{good, short}, []string{"short", "truncated"}},
		{"trailing bytes", []string{long, good}, []string{"long", "trailing"}},
		{"magic", []string{good, magic}, []string{"magic", "invalid filter file"}},
		{"missing", []string{good, filepath.Join(dir, "missing")}, []string{"missing", "no such file"}},
		{"directory", []string{dir}, []string{dir, "directory"}},
		{"none", nil, []string{"no input"}},
	} {
		_, err := Merge(context.Background(), out, c.inputs...)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
		if got := testkit.ReadFile(t, out); string(got) != "the old output" {
			t.Errorf("%s: the output was changed", c.name)
		}
	}
	checkNoTemp(t, dir)
}

// A cancelled merge leaves the old output and no temporary file.
func TestMergeCancelled(t *testing.T) {
	dir := t.TempDir()
	a := writeShard(t, dir, "a", 2, 24, 0, 0, nil) // 2 MiB: more than one chunk
	out := filepath.Join(dir, "out")
	os.WriteFile(out, []byte("old"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Merge(ctx, out, a, a); !errors.Is(err, context.Canceled) {
		t.Fatalf("Merge with a cancelled context: %v, want context.Canceled", err)
	}
	if string(testkit.ReadFile(t, out)) != "old" {
		t.Error("a cancelled merge changed the output")
	}
	checkNoTemp(t, dir)
}

// Union of in-memory and in-place filters equals the filter of all keys,
// with the reference's header semantics.
func TestUnion(t *testing.T) {
	keys := testKeys("union", 500)
	a, _ := New(3, 14)
	b, _ := New(3, 14)
	for _, key := range keys[:300] {
		a.Add(key)
	}
	for _, key := range keys[250:] {
		b.Add(key)
	}
	ah, bh := a.Header(), b.Header()
	start := time.Now()
	if err := a.Union(readOnly(t, b)); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	a.WriteTo(&buf)
	if want := buildFilter(t, 3, 14, keys...); !bytes.Equal(buf.Bytes()[HeaderSize:], want[HeaderSize:]) {
		t.Error("Union's data differs from one filter of all the keys")
	}
	checkHeader(t, "union", a.Header(), ah.Revision, ah.EntryCount+bh.EntryCount, start, time.Now())

	// A union that changes nothing leaves the header alone.
	e, _ := New(3, 14)
	before := a.Header()
	if err := a.Union(readOnly(t, e)); err != nil || a.Header() != before {
		t.Errorf("union with an empty filter: %v, header %+v, was %+v", err, a.Header(), before)
	}
	// Other parameters are refused.
	c, _ := New(4, 14)
	if err := a.Union(readOnly(t, c)); err == nil || !strings.Contains(err.Error(), "same parameters") {
		t.Errorf("union of k 3 and k 4: %v", err)
	}

	// In place: the file gets the bits and the header, revision raised once.
	path, f := createInPlace(t, 3, 14)
	if err := f.Union(readOnly(t, a)); err != nil {
		t.Fatal(err)
	}
	if err := f.Union(readOnly(t, b)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got := testkit.ReadFile(t, path)
	if want := buildFilter(t, 3, 14, keys...); !bytes.Equal(got[HeaderSize:], want[HeaderSize:]) {
		t.Error("Union in place: the file's data differs from one filter of all the keys")
	}
	h, _ := ParseHeader(got)
	checkHeader(t, "union in place", h, 1, a.Header().EntryCount+bh.EntryCount, start, time.Now())
}

// The estimate of distinct keys from the bits is close to the number of
// keys added, and counts a key in two merged shards once.
func TestEstimateEntries(t *testing.T) {
	for _, c := range []struct {
		k, l uint8
		n    int
	}{{3, 16, 5000}, {7, 20, 50000}, {1, 12, 1000}, {12, 18, 20000}} {
		f, _ := New(int(c.k), int(c.l))
		for _, key := range testKeys(fmt.Sprint(c), c.n) {
			f.Add(key)
		}
		// Twice the keys' bits would be the same bits: the estimate does
		// not see duplicates.
		est := f.Header().EstimateEntries(bitwords.Count(f.data))
		if rel := math.Abs(est-float64(c.n)) / float64(c.n); rel > 0.03 {
			t.Errorf("k %d, L %d, %d keys: estimate %.0f, off by %.1f%%", c.k, c.l, c.n, est, 100*rel)
		}
	}
	h := Header{HashCount: 2, HashLength: 8}
	if got := h.EstimateEntries(0); got != 0 {
		t.Errorf("estimate with no bits set: %v", got)
	}
	if got := h.EstimateEntries(256); !math.IsInf(got, 1) {
		t.Errorf("estimate with every bit set: %v, want +Inf", got)
	}
	// One bit of 256 with k 1: -256·ln(255/256), just over 1.
	if got := (Header{HashCount: 1, HashLength: 8}).EstimateEntries(1); got < 1 || got > 1.01 {
		t.Errorf("estimate of one bit in 256, k 1: %v", got)
	}
}

// An input overwritten in place during a merge (by a writer that ignores
// the lock, as cp does) is caught at the end, with the file named.
func TestMergeInputOverwritten(t *testing.T) {
	dir := t.TempDir()
	a := writeShard(t, dir, "a", 3, 12, 1, 1, testKeys("a", 1))
	in, err := openMergeInput(a)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	if err := in.finish(); err != nil {
		t.Fatalf("finish of an unchanged input: %v", err)
	}
	if err := os.WriteFile(a, buildFilter(t, 3, 12, testKeys("b", 2)...), 0o644); err != nil { // same size, other header
		t.Fatal(err)
	}
	if err := in.finish(); !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), a) {
		t.Errorf("finish of an overwritten input: %v, want ErrFileChanged naming %s", err, a)
	}
}
