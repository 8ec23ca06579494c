// Package testkit holds helpers the tests of several pkbf packages share.
package testkit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SeedFiles adds the files matching patterns to a fuzz corpus.
func SeedFiles(f *testing.F, patterns ...string) {
	f.Helper()
	for _, p := range patterns {
		names, _ := filepath.Glob(p)
		for _, name := range names {
			if b, err := os.ReadFile(name); err == nil {
				f.Add(b)
			}
		}
	}
}

// CheckErr fails the test unless err wraps sentinel and its message starts
// with "pkbf: ", as every error pkbf returns does.
func CheckErr(t testing.TB, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) || !strings.HasPrefix(err.Error(), "pkbf: ") {
		t.Fatalf("error %q: want %v and the pkbf: prefix", err, sentinel)
	}
}
