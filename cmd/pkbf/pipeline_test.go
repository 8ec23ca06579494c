package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keys"
)

// Many keys, many batches, all cores: the output keeps the input order.
func TestCheckKeepsOrder(t *testing.T) {
	names := []string{"rsa2048.pub", "p384.pub", "ed25519.pub", "p521.pub", "p256-sk.pub", "rsa1024.pub", "p256.pub"}
	m := manifest(t)
	var input bytes.Buffer
	var want []string
	for i := range 3000 {
		name := names[(i*7+i/5)%len(names)]
		data, _ := os.ReadFile(key(name))
		input.Write(data)
		want = append(want, m[name])
	}
	r := runWith(t, &input, "check", exampleFilter)
	probably, fps, sources := parseText(t, r.stdout)
	if strings.Join(fps, " ") != strings.Join(want, " ") {
		t.Fatal("check reordered its output")
	}
	for i := range sources {
		if sources[i] != fmt.Sprintf("<stdin>: line %d", i+1) {
			t.Fatalf("key %d: source %q", i+1, sources[i])
		}
		if hit := inFilter[strings.Split(strings.TrimSuffix(names[(i*7+i/5)%len(names)], "-sk.pub"), ".")[0]]; probably[i] != hit {
			t.Fatalf("key %d: probably %v, want %v", i+1, probably[i], hit)
		}
	}
}

// TestCheckReusesBatches checks 6000 distinct P-256 keys, two dozen
// batches from a regular file, so that most batches are reused ones: a
// third of the keys added to the filter as given, a third only in the
// compressed point form (found through the other encoding that
// lookupItems builds in the batch's reused room), a third not at all.
// Every verdict and fingerprint must be the key's own, never a stale one
// from the batch's earlier keys.
func TestCheckReusesBatches(t *testing.T) {
	const n = 6000
	dir := t.TempDir()
	filter := filepath.Join(dir, "f.pkbf")
	f, err := pkbf.New(12, 20) // a false positive in 6000 queries: about 1e-10
	if err != nil {
		t.Fatal(err)
	}
	var input []byte
	var want []string
	for i := range n {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		spki, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		_, compressed, err := keys.Forms(nil, spki)
		if err != nil || compressed == nil {
			t.Fatalf("keys.Forms: %x, %v", compressed, err)
		}
		switch i % 3 {
		case 0:
			f.Add(spki)
		case 1:
			f.Add(compressed)
		}
		input = append(input, spki...)
		sum := sha256.Sum256(spki)
		verdict := "no"
		if i%3 != 2 {
			verdict = "probably"
		}
		want = append(want, fmt.Sprintf("%s\t%x\t%s: object %d (byte %d)", verdict, sum, filepath.Join(dir, "keys.der"), i+1, len(input)-len(spki)))
	}
	var file bytes.Buffer
	if _, err := f.WriteTo(&file); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filter, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keys.der"), input, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runWith(t, nil, "check", "--quiet", filter, filepath.Join(dir, "keys.der"))
	got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != exitFound || len(got) != n {
		t.Fatalf("exit %d, %d lines of output for %d keys; stderr: %s", r.code, len(got), n, r.stderr)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("key %d:\n got %q\nwant %q", i+1, got[i], want[i])
		}
	}
}
