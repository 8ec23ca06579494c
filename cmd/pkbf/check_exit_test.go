package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

// Every row of checkExitTable, with the mixes of hit, clean and not
// checked that land on it.
func TestCheckExitTable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	p12 := filepath.Join(keysDir, "more", "chain-password.p12") // needs a passphrase
	unsupported := filepath.Join(dir, "xmss.pub")
	os.WriteFile(unsupported, []byte("ssh-xmss@openssh.com AAAAFHNzaC14bXNzQG9wZW5zc2guY29tAAAA\n"), 0o644)
	hit, clean := key("p256.pub"), key("p384.pub")
	for _, c := range []struct {
		name  string
		files []string
		flags []string
		code  int
	}{
		{"clean", []string{clean}, nil, exitOK},
		{"hit", []string{hit}, nil, exitFound},
		{"hit and clean", []string{hit, clean}, nil, exitFound},
		{"hit and a missing file", []string{hit, missing}, nil, exitFound},
		{"hit and an encrypted file", []string{p12, hit}, nil, exitFound},
		{"hit and an unsupported key", []string{unsupported, hit}, nil, exitFound},
		{"clean and a missing file", []string{clean, missing}, nil, exitTrouble},
		{"clean and an encrypted file", []string{clean, p12}, nil, exitTrouble},
		{"an encrypted file alone", []string{p12}, nil, exitTrouble},
		{"clean and an unsupported key", []string{unsupported, clean}, nil, exitTrouble},
		{"a directory without -r", []string{dir}, nil, exitTrouble},
		{"nothing in the input", []string{os.DevNull}, nil, exitTrouble},
		{"nothing in the input, --allow-empty", []string{os.DevNull}, []string{"--allow-empty"}, exitOK},
		{"an encrypted file, --allow-empty", []string{p12}, []string{"--allow-empty"}, exitTrouble},
		{"clean, quiet", []string{clean}, []string{"-q"}, exitOK},
		{"clean and an encrypted file, quiet", []string{clean, p12}, []string{"-q"}, exitTrouble},
		{"hit and an encrypted file, quiet", []string{p12, hit}, []string{"-q"}, exitFound},
	} {
		args := append(append(append([]string{"check"}, c.flags...), exampleFilter), c.files...)
		r := runWith(t, nil, args...)
		if r.code != c.code {
			t.Errorf("%s: exit %d, want %d; stderr %q", c.name, r.code, c.code, r.stderr)
		}
		if c.code == exitTrouble && !strings.Contains(r.stderr, "pkbf: error: ") {
			t.Errorf("%s: exit 2 without an error saying why: %q", c.name, r.stderr)
		}
	}
	if r := runWith(t, nil, "help", "check"); !strings.Contains(r.stdout, checkExitTable) {
		t.Errorf("help check lacks the exit table:\n%s", r.stdout)
	}
}

// Fields are separated by one tab and nothing else where the output is
// not a terminal: awk -F'\t' '$1=="no"' finds the clean keys.
func TestCheckFieldsAreTabsOnly(t *testing.T) {
	r := runWith(t, nil, "check", "-q", exampleFilter, key("p384.pub"), key("p256.pub"))
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%q", r.stdout)
	}
	for i, want := range []string{"no", "probably"} {
		fields := strings.Split(lines[i], "\t")
		if fields[0] != want || strings.Contains(lines[i], "  ") {
			t.Errorf("line %d: first field %q, want %q: %q", i+1, fields[0], want, lines[i])
		}
	}
}

// A directory is an error that names -r; with -r every regular file
// under it is read, in order, and links inside it are not followed.
func TestCheckDirectory(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "certs", "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "certs", "b.pub"), testkit.ReadFile(t, key("p384.pub")), 0o644)
	os.WriteFile(filepath.Join(dir, "certs", "sub", "a.pub"), testkit.ReadFile(t, key("p256.pub")), 0o644)
	os.WriteFile(filepath.Join(dir, "outside.pub"), testkit.ReadFile(t, key("rsa2048.pub")), 0o644)
	os.Symlink(filepath.Join(dir, "outside.pub"), filepath.Join(dir, "certs", "link.pub"))
	certs := filepath.Join(dir, "certs")
	r := runWith(t, nil, "check", exampleFilter, certs)
	if r.code != exitTrouble || !strings.Contains(r.stderr, "pkbf: error: "+certs+" is a directory: give -r to read every file in it") {
		t.Errorf("a directory without -r: %+v", r)
	}
	r = runWith(t, nil, "check", "-r", exampleFilter, certs)
	_, _, sources := parseText(t, r.stdout)
	want := []string{filepath.Join(certs, "b.pub") + ": line 1", filepath.Join(certs, "sub", "a.pub") + ": line 1"}
	if r.code != exitFound || strings.Join(sources, "|") != strings.Join(want, "|") {
		t.Errorf("check -r: exit %d, sources %q, want %q; stderr %q", r.code, sources, want, r.stderr)
	}
	if r := runWith(t, nil, "add", "-r", filepath.Join(dir, "none.pkbf"), certs); !strings.Contains(r.stderr, "no such file") {
		t.Errorf("add -r to a missing filter: %+v", r)
	}
}
