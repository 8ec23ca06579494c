package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
)

// libraryJSON is what a program gets from the library's Check on input,
// as JSON lines.
func libraryJSON(t *testing.T, f *pkbf.Filter, name string, input []byte) string {
	t.Helper()
	var out []byte
	for v := range keycheck.New(f, keycheck.Options{}).Check(context.Background(), keycheck.Bytes(name, input)) {
		out = v.AppendJSON(out)
	}
	return string(out)
}

// The command's verdicts are the library's: check --json on every file
// under testdata, one at a time, and on streams made of them in a random
// order, prints exactly what keycheck's Check and Verdict.AppendJSON give.
func TestCheckJSONIsTheLibrarys(t *testing.T) {
	f, err := pkbf.Open(exampleFilter)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var files []string
	filepath.WalkDir("../../testdata", func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, path)
		}
		return nil
	})
	if len(files) < 200 {
		t.Fatalf("only %d files under testdata", len(files))
	}
	keys := 0
	for _, path := range files {
		data := testkit.ReadFile(t, path)
		r := runWith(t, nil, "check", "--json", "--allow-empty", exampleFilter, path)
		if want := libraryJSON(t, f, path, data); r.stdout != want {
			t.Fatalf("%s: check --json printed\n%s\nthe library gives\n%s", path, r.stdout, want)
		}
		keys += strings.Count(r.stdout, "\n")
	}
	if keys < 500 {
		t.Errorf("only %d verdicts from %d files", keys, len(files))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		var stream []byte
		for range 30 {
			stream = append(stream, testkit.ReadFile(t, files[rng.IntN(len(files))])...)
		}
		r := runWith(t, bytes.NewReader(stream), "check", "--json", "--allow-empty", exampleFilter)
		if want := libraryJSON(t, f, "<stdin>", stream); r.stdout != want {
			t.Fatalf("stream %d: check --json and the library differ", i)
		}
	}
}
