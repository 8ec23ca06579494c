// Package testkit holds helpers the tests of several pkbf packages share.
package testkit

import (
	"bytes"
	"encoding/binary"
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

// ReadFile returns the file's bytes, or fails the test.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// CheckErr fails the test unless err wraps sentinel and its message starts
// with "pkbf: ", as every error pkbf returns does.
func CheckErr(t testing.TB, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) || !strings.HasPrefix(err.Error(), "pkbf: ") {
		t.Fatalf("error %q: want %v and the pkbf: prefix", err, sentinel)
	}
}

// WithCounter returns a copy of der with i written into its public key
// spki (a part of der, or der itself): four bytes ending 5 before the
// SPKI's end, inside an RSA modulus (the exponent's INTEGER is the last 5
// bytes) or an EC point's y. The benchmarks make distinct keys this way,
// at no cost of key generation or signing; an EC point leaves its curve,
// which reading a key does not check.
func WithCounter(der, spki []byte, i int) []byte {
	at := bytes.Index(der, spki) + len(spki) - 9
	out := bytes.Clone(der)
	binary.BigEndian.PutUint32(out[at:], uint32(i))
	return out
}
