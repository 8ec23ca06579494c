package keycheck

import (
	"bytes"
	"encoding/binary"
	"io"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

// keysDir holds the project's own key files (testdata/keys/README).
const keysDir = "../testdata/keys"

// keyFiles returns every key file under keysDir.
func keyFiles(t testing.TB) []string {
	var files []string
	filepath.WalkDir(keysDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasSuffix(path, "MANIFEST") && !strings.HasSuffix(path, ".sh") {
			files = append(files, path)
		}
		return nil
	})
	if len(files) < 100 {
		t.Fatalf("only %d key files under %s", len(files), keysDir)
	}
	return files
}

// readKey returns the contents of a file under keysDir.
func readKey(t testing.TB, name string) []byte {
	return testkit.ReadFile(t, filepath.Join(keysDir, name))
}

// newFilter returns an empty in-memory filter with k hashes and 2^l bits.
func newFilter(t testing.TB, k, l int) *pkbf.Writable {
	t.Helper()
	w, err := pkbf.New(k, l)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// readOnly returns a read-only copy of w.
func readOnly(t testing.TB, w *pkbf.Writable) *pkbf.Filter {
	t.Helper()
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	f, err := pkbf.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// mustAddKey adds the key of data to w, or fails the test.
func mustAddKey(t testing.TB, w *pkbf.Writable, data []byte) {
	t.Helper()
	if _, err := AddKey(w, data); err != nil {
		t.Fatal(err)
	}
}

// randomKeys returns n distinct byte strings of 30 to 300 bytes: not keys.
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

// derInput is one input holding the DER objects given, concatenated.
func derInput(objects [][]byte) iter.Seq[Input] {
	return Bytes("der", bytes.Join(objects, nil))
}

// pipeInput is one input reading r.
func pipeInput(name string, r io.ReadCloser) iter.Seq[Input] {
	return func(yield func(Input) bool) {
		yield(Input{Name: name, Open: func() (io.ReadCloser, error) { return r, nil }})
	}
}
