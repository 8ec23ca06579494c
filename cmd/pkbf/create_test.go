package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{[]string{"-entries", "3", "x.pkbf"}, "--entries and --fp-rate go together"},
		{[]string{"-hashes", "3", "-length", "10", "-entries", "5", "-fp-rate", "0.1", "x.pkbf"}, "not both"},
		{[]string{"x.pkbf"}, "give --hashes and --length, or --entries and --fp-rate"},
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
