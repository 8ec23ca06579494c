package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

func TestAdd(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.pkbf")
	if r := runWith(t, nil, "create", "-entries", "100", "-fp-rate", "0.0001", p); r.code != 0 {
		t.Fatal(r)
	}
	// An EC key goes in under both encodings; the RSA key under one.
	r := runWith(t, nil, "add", p, key("p384.pub"), key("rsa1024.cert.der"))
	if r.code != 0 || !strings.Contains(r.stdout, p+": 3 new entries from 2 keys; 3 entries, revision 1") {
		t.Fatalf("add: %+v", r)
	}
	// Adding again changes nothing; a bad input is reported, the rest added.
	junk := filepath.Join(dir, "junk.pem")
	os.WriteFile(junk, []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), 0o644)
	r = runWith(t, bytes.NewReader(testkit.ReadFile(t, key("ed25519.pub"))), "add", p, key("p384.cert.pem"), junk, "-")
	if r.code != 2 || !strings.Contains(r.stdout, "1 new entry from 2 keys; 4 entries, revision 2") || !strings.Contains(r.stderr, junk+": block 1 (line 1): invalid key") {
		t.Fatalf("second add: %+v", r)
	}
	for _, name := range []string{"p384.spki-compressed.der", "p384.pub", "rsa1024.pub", "ed25519.pub"} {
		if c := runWith(t, nil, "check", p, key(name)); c.code != 1 {
			t.Errorf("check %s after add: exit %d, %s", name, c.code, c.stdout)
		}
	}
	if c := runWith(t, nil, "check", p, key("p256.pub")); c.code != 0 {
		t.Errorf("check of a key never added: exit %d", c.code)
	}
	if r := runWith(t, nil, "add", filepath.Join(dir, "missing.pkbf"), key("p384.pub")); r.code != 2 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("add to a missing filter: %+v", r)
	}
}

// --fp-rate is a rate: NaN (which no comparison passes, so it would turn
// the warning off), negative values and 1 or more are usage errors that
// leave the filter as it was.
func TestAddFPRateRefusesNonRates(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.pkbf")
	if r := runWith(t, nil, "create", "--entries", "100", "--fp-rate", "0.01", p); r.code != 0 {
		t.Fatal(r)
	}
	before := testkit.ReadFile(t, p)
	for _, v := range []string{"NaN", "-0.1", "1", "+Inf"} {
		r := runWith(t, nil, "add", "--fp-rate", v, p, key("p384.pub"))
		if r.code != 2 || !strings.Contains(r.stderr, "--fp-rate") {
			t.Errorf("add --fp-rate %s: %+v", v, r)
		}
	}
	if !bytes.Equal(testkit.ReadFile(t, p), before) {
		t.Error("a refused add changed the filter")
	}
}

// An input with no key is an error, as for check: it is more often the
// wrong file, or a pipe that failed upstream, than an empty list.
// --allow-empty accepts it. Either way the filter is left as it was.
func TestAddNoKeysExits2(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.pkbf")
	if r := runWith(t, nil, "create", "--entries", "100", "--fp-rate", "0.01", p); r.code != 0 {
		t.Fatal(r)
	}
	before := testkit.ReadFile(t, p)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"add", p, os.DevNull}, 2},
		{[]string{"add", p}, 2}, // standard input, empty here
		{[]string{"add", "--allow-empty", p, os.DevNull}, 0},
	} {
		r := runWith(t, bytes.NewReader(nil), tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout, "0 new entries from 0 keys") {
			t.Errorf("%v: %+v, want exit %d", tc.args, r, tc.code)
		}
		if tc.code == 2 && !strings.Contains(r.stderr, "no key, certificate or request in the input (--allow-empty accepts that)") {
			t.Errorf("%v: stderr %q", tc.args, r.stderr)
		}
	}
	if !bytes.Equal(testkit.ReadFile(t, p), before) {
		t.Error("an add of no key changed the filter")
	}
}
