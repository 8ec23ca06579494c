package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

// Shard filters built with create and add from random parts of the test
// keys merge into the filter create and add build from all of them: the
// same bits, the same verdicts.
func TestMergeShards(t *testing.T) {
	files, _ := filepath.Glob(key("*.pem"))
	more, _ := filepath.Glob(filepath.Join(keysDir, "more", "*.pem"))
	files = append(files, more...)
	if len(files) < 20 {
		t.Fatalf("only %d PEM test keys", len(files))
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	shards := make([][]string, 3)
	for _, f := range files {
		i := rng.IntN(len(shards))
		shards[i] = append(shards[i], f)
	}
	whole := filepath.Join(dir, "whole.pkbf")
	build := func(path string, inputs []string) {
		t.Helper()
		if r := runWith(t, nil, "create", "-k", "5", "-l", "16", path); r.code != 0 {
			t.Fatal(r)
		}
		if r := runWith(t, nil, append([]string{"add", path}, inputs...)...); r.code != 0 && r.code != 2 {
			t.Fatalf("add: %+v", r)
		}
	}
	var inputs, all []string
	var sum uint32
	for i, s := range shards {
		p := filepath.Join(dir, "shard"+string(rune('a'+i))+".pkbf")
		build(p, s)
		inputs, all = append(inputs, p), append(all, s...)
		sum += header(t, p).EntryCount
	}
	build(whole, all)
	out := filepath.Join(dir, "merged.pkbf")
	r := runWith(t, nil, append([]string{"merge", out}, inputs...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "merged 3 filters into "+out+": revision 2") {
		t.Fatalf("merge: %+v", r)
	}
	if got, want := testkit.ReadFile(t, out)[pkbf.HeaderSize:], testkit.ReadFile(t, whole)[pkbf.HeaderSize:]; !bytes.Equal(got, want) {
		t.Fatal("the merged filter's bits differ from the filter of all the keys")
	}
	if h := header(t, out); h.EntryCount != sum {
		t.Errorf("merged entry count %d, want the shards' sum %d", h.EntryCount, sum)
	}
	a := runWith(t, nil, append([]string{"check", "--json", out}, files...)...)
	b := runWith(t, nil, append([]string{"check", "--json", whole}, files...)...)
	if a.code != 1 || a.stdout != b.stdout {
		t.Errorf("check against the merged filter (exit %d) and the whole one (exit %d) differ", a.code, b.code)
	}
	// info --scan estimates the distinct keys from the bits.
	if r := runWith(t, nil, "info", "--scan", out); r.code != 0 || !strings.Contains(r.stdout, "distinct keys:       about ") {
		t.Errorf("info --scan: %+v", r)
	}
}

func header(t *testing.T, path string) pkbf.Header {
	t.Helper()
	h, err := pkbf.ParseHeader(testkit.ReadFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// merge refuses an existing output unless it is an input or --force is
// given, and filters of other parameters; the output is left as it was.
func TestMergeRefusals(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	for _, p := range []string{a, b} {
		if r := runWith(t, nil, "create", "-k", "3", "-l", "12", p); r.code != 0 {
			t.Fatal(r)
		}
	}
	if r := runWith(t, nil, "create", "-k", "4", "-l", "12", c); r.code != 0 {
		t.Fatal(r)
	}
	runWith(t, nil, "add", a, key("p256.pub"))
	before := testkit.ReadFile(t, a)
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"merge", a, b}, 2, "a exists and is a filter that is not one of the filters merged: give --force"},
		{[]string{"merge", filepath.Join(dir, "x"), a, c}, 2, "c has hash count 4 and hash length 12, " + a + " has 3 and 12"},
		{[]string{"merge", filepath.Join(dir, "x")}, 2, "missing arguments"},
		{[]string{"merge", filepath.Join(dir, "x"), filepath.Join(dir, "nope")}, 2, "no such file"},
	} {
		r := runWith(t, nil, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
	if !bytes.Equal(testkit.ReadFile(t, a), before) {
		t.Error("a refused merge changed the existing output")
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a failed merge left an output")
	}
	// Into an input, or with --force: replaced.
	if r := runWith(t, nil, "merge", b, a, b); r.code != 0 {
		t.Errorf("merge into an input: %+v", r)
	}
	if r := runWith(t, nil, "merge", "--force", a, b); r.code != 0 {
		t.Errorf("merge --force: %+v", r)
	}
	if c := runWith(t, nil, "check", a, key("p256.pub")); c.code != 1 {
		t.Errorf("after merging back and forth, the key is gone: %+v", c)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
