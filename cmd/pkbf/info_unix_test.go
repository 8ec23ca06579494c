//go:build unix

package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pkbf/pkbf"
)

// A filter file cut short while info counts its bits is an error naming
// the file, not a crash.
func TestScanFillTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.pkbf")
	if err := pkbf.Create(path, 3, 20); err != nil {
		t.Fatal(err)
	}
	f, err := pkbf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fill, _, err := scanFill(f, newScreen(io.Discard, io.Discard)); err != nil || *fill != 0 {
		t.Fatalf("scanFill of an empty filter = %v, %v", fill, err)
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	_, _, err = scanFill(f, newScreen(io.Discard, io.Discard))
	if !errors.Is(err, pkbf.ErrFileChanged) {
		t.Errorf("scanFill of a filter cut short: %v, want ErrFileChanged", err)
	}
}
