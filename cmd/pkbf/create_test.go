package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
)

func TestCreate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.pkbf")
	r := runWith(t, nil, "create", "-hashes", "5", "-length", "12", p)
	if r.code != 0 || !strings.Contains(r.stdout, "created "+p+": hash count 5, hash length 12 (4096 bits, 536 bytes)") {
		t.Fatalf("create: %+v", r)
	}
	if b, _ := os.ReadFile(p); len(b) != 536 || string(b[:6]) != "pkbfv1" || b[22] != 5 || b[23] != 12 {
		t.Errorf("created file is wrong: %d bytes", len(b))
	}
	r = runWith(t, nil, "create", "-hashes", "5", "-length", "12", p)
	if r.code != 2 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("create over an existing file: %+v", r)
	}
	q := filepath.Join(dir, "b.pkbf")
	r = runWith(t, nil, "create", "-entries", "1000", "-fp-rate", "0.01", q)
	if r.code != 0 || !strings.Contains(r.stdout, "hash count 3, hash length 14") || !strings.Contains(r.stdout, "chosen for 1000 entries at a false-positive rate of 0.01") {
		t.Errorf("create -entries: %+v", r)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-hashes", "3", "x.pkbf"}, "--hashes and --length go together"},
		{[]string{"-entries", "3", "x.pkbf"}, "--keys (or --entries) and --fp-rate go together"},
		{[]string{"-keys", "3", "-entries", "3", "-fp-rate", "0.1", "x.pkbf"}, "give --keys or --entries, not both"},
		{[]string{"-keys", "18446744073709551615", "-fp-rate", "0.1", "x.pkbf"}, "--keys 18446744073709551615 is too many"},
		{[]string{"-hashes", "3", "-length", "10", "-entries", "5", "-fp-rate", "0.1", "x.pkbf"}, "not both"},
		{[]string{"x.pkbf"}, "give --keys and --fp-rate, or --hashes and --length"},
		{[]string{"-hashes", "0", "-length", "10", "x.pkbf"}, "hash count 0 out of range 1 to 255"},
		{[]string{"-hashes", "3", "-length", "41", "x.pkbf"}, "hash length 41 out of range 3 to 40"},
		{[]string{"-entries", "10", "-fp-rate", "1.5", "x.pkbf"}, "false-positive rate 1.5 is not between 0 and 1"},
	} {
		r := runWith(t, nil, append([]string{"create"}, append(tt.args[:len(tt.args)-1:len(tt.args)-1], filepath.Join(dir, tt.args[len(tt.args)-1]))...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("create %v: exit %d, stderr %q; want 2 and %q", tt.args, r.code, r.stderr, tt.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "x.pkbf")); err == nil {
			t.Errorf("create %v left a file", tt.args)
		}
	}
}

// create --keys N sizes for keys as add stores them: 1,000 P-256 keys,
// two entries each, keep the filter within the rate asked for. --entries
// counts entries: the same keys in a filter sized for 1,000 entries pass
// it, as its help says, and add --fp-rate says so (issue 43, item 11).
// The keys are random: a few of them may already answer "probably" in the
// filter sized by entries, so its count and rate vary a little.
func TestCreateKeysSizesForKeys(t *testing.T) {
	dir := t.TempDir()
	var pems bytes.Buffer
	for range 1000 {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
		pem.Encode(&pems, &pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	keysFile := filepath.Join(dir, "keys.pem")
	if err := os.WriteFile(keysFile, pems.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag     string
		withinFP bool
	}{{"--keys", true}, {"--entries", false}} {
		path := filepath.Join(dir, tc.flag[2:]+".pkbf")
		if r := runWith(t, nil, "create", tc.flag, "1000", "--fp-rate", "0.01", path); r.code != 0 {
			t.Fatalf("create %s: %+v", tc.flag, r)
		}
		r := runWith(t, nil, "add", "--fp-rate", "0.01", path, keysFile)
		if r.code != 0 || !strings.Contains(r.stdout, "from 1000 keys") {
			t.Fatalf("add: %+v", r)
		}
		warned := strings.HasPrefix(r.stderr, "pkbf: warning: "+path+": ") && strings.Contains(r.stderr, "entries give an estimated false-positive rate of 0.0") && strings.Contains(r.stderr, ", past 0.01: ")
		if warned == tc.withinFP {
			t.Errorf("create %s 1000 --fp-rate 0.01, then add --fp-rate 0.01 of 1,000 P-256 keys: warned %v; stderr %q", tc.flag, warned, r.stderr)
		}
		f, err := pkbf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		rate := f.Header().FalsePositiveRate()
		f.Close()
		if (rate <= 0.01) != tc.withinFP {
			t.Errorf("create %s 1000 --fp-rate 0.01, then 1,000 P-256 keys: false-positive rate %.4f", tc.flag, rate)
		}
	}
}
