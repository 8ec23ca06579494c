//go:build unix

package pkbfssh

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
)

// A filter whose file is cut short while mapped fails the check (an error
// wrapping pkbf.ErrFileChanged, not a crash), and Compromised says true.
func TestFilterLinesFileCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.pkbf")
	if err := pkbf.Create(path, 4, 20); err != nil {
		t.Fatal(err)
	}
	f, err := pkbf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	typ, b64 := testLine(t, "ed25519.pub")
	k, _ := ParseKey(typ, b64)
	var out bytes.Buffer
	if r, err := FilterLines(&out, keycheck.New(f, keycheck.Options{}), []byte(typ+" "+b64+"\n"), nil); err != nil || r.Kept != 1 {
		t.Fatalf("before: %+v, %v", r, err)
	}
	if err := os.Truncate(path, pkbf.HeaderSize); err != nil {
		t.Fatal(err)
	}
	if _, err := FilterLines(&out, keycheck.New(f, keycheck.Options{}), []byte(typ+" "+b64+"\n"), nil); !errors.Is(err, pkbf.ErrFileChanged) {
		t.Errorf("FilterLines: %v, want ErrFileChanged", err)
	}
	if bad, err := k.Compromised(keycheck.New(f, keycheck.Options{})); !bad || !errors.Is(err, pkbf.ErrFileChanged) {
		t.Errorf("Compromised: %v, %v", bad, err)
	}
}
