package main

import (
	"bytes"
	"encoding/json"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
)

// bitCounter skips the header however the writes split it, counts every
// bit after it, and reports progress in chunks.
func TestBitCounter(t *testing.T) {
	defer func(was int) { fillChunk = was }(fillChunk)
	fillChunk = 1000
	data := make([]byte, 2*fillChunk+13)
	var want uint64
	for i := range data {
		data[i] = byte(i * 7)
		want += uint64(bits.OnesCount8(data[i]))
	}
	head := bytes.Repeat([]byte{0xff}, pkbf.HeaderSize)
	for _, split := range []int{0, 5, pkbf.HeaderSize, pkbf.HeaderSize + 3} {
		var reports []uint64
		c := &bitCounter{skip: pkbf.HeaderSize, progress: func(done uint64) { reports = append(reports, done) }}
		all := append(append([]byte{}, head...), data...)
		for _, part := range [][]byte{all[:split], all[split:]} {
			if n, err := c.Write(part); n != len(part) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if c.set != want {
			t.Errorf("split at %d: %d bits counted, want %d", split, c.set, want)
		}
		if last := reports[len(reports)-1]; last != uint64(len(data)) || len(reports) < 3 {
			t.Errorf("split at %d: progress reports %v, want at least 3 ending at %d", split, reports, len(data))
		}
	}
}

func TestInfo(t *testing.T) {
	r := runWith(t, nil, "info", "-json", exampleFilter, "--scan")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("info -json: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	f, err := pkbf.Open(exampleFilter)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := f.Header()
	want := map[string]any{
		"revision": float64(h.Revision), "updated": h.Updated.Format(time.RFC3339), "entries": float64(h.EntryCount),
		"hash_count": float64(h.HashCount), "hash_length": float64(h.HashLength), "bits": float64(h.Bits()),
		"false_positive_rate": f.Header().FalsePositiveRate(), "fill_ratio": fillRatio(t, f), "size": float64(h.FileSize()),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("info -json %s = %v, want %v", k, got[k], v)
		}
	}
	if !strings.HasSuffix(got["updated"].(string), "Z") {
		t.Errorf("updated %v is not UTC", got["updated"])
	}
	r = runWith(t, nil, "info", "--scan", exampleFilter)
	for _, s := range []string{"entries:             5", "hash count (k):      12", "bits (m = 2^L):      32768", "false-positive rate:", "fill ratio:"} {
		if r.code != 0 || !strings.Contains(r.stdout, s) {
			t.Errorf("info: missing %q in\n%s", s, r.stdout)
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pkbf")
	os.WriteFile(bad, []byte("pkbfv1 but far too short"), 0o644)
	for path, want := range map[string]string{filepath.Join(dir, "missing.pkbf"): "no such file", bad: "invalid filter file"} {
		r := runWith(t, nil, "info", path)
		if r.code != 2 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, path) || r.stdout != "" {
			t.Errorf("info %s: exit %d, stderr %q; want 2 and %q naming the file", path, r.code, r.stderr, want)
		}
	}
}

// An update time of 2^63 seconds or more (the field is unsigned) shows as
// its seconds, not as a date before 1970.
func TestInfoTimePastSigned(t *testing.T) {
	b, err := os.ReadFile(exampleFilter)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []byte{0x80, 0, 0, 0, 0, 0, 0, 5} {
		b[10+i] = v
	}
	p := filepath.Join(t.TempDir(), "f.pkbf")
	os.WriteFile(p, b, 0o644)
	r := runWith(t, nil, "info", p)
	if r.code != 0 || !strings.Contains(r.stdout, "updated:             9223372036854775813 seconds after 1970 (past any date)") || strings.Contains(r.stdout, "1969") {
		t.Errorf("%+v", r)
	}
}

// fillRatio is the fraction of f's bits that are set, counted here.
func fillRatio(t *testing.T, f *pkbf.Filter) float64 {
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	set := 0
	for _, c := range b.Bytes()[pkbf.HeaderSize:] {
		set += bits.OnesCount8(c)
	}
	return float64(set) / float64(f.Header().Bits())
}
