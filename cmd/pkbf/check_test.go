package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

var (
	textLine = regexp.MustCompile(`^(probably|no)\t([0-9a-f]{64})\t([^\t]+)(\t.*)?$`)
	inFilter = map[string]bool{"rsa2048": true, "rsa512": true, "p256": true, "ed25519": true}
)

// parseText reads check's text output: verdicts, fingerprints and sources.
func parseText(t *testing.T, out string) (probably []bool, fps, sources []string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		m := textLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("check output line %q does not match %v", line, textLine)
		}
		probably = append(probably, m[1] == "probably")
		fps = append(fps, m[2])
		sources = append(sources, m[3])
	}
	return
}

func TestCheckKeysAgainstOpenssl(t *testing.T) {
	m := manifest(t)
	for name, fp := range m {
		if fp == "encrypted" || strings.Contains(name, "compressed") {
			continue // compressed forms are in the filter too, but under their own fingerprint
		}
		base := strings.SplitN(strings.TrimSuffix(name, "-sk.pub"), ".", 2)[0]
		r := runWith(t, nil, "check", exampleFilter, key(name))
		want := 0
		if inFilter[base] {
			want = 1
		}
		probably, fps, sources := parseText(t, r.stdout)
		if r.code != want || len(fps) != 1 || fps[0] != fp || probably[0] != inFilter[base] || sources[0] != key(name)+": "+sourceOf(name) {
			t.Errorf("check %s: exit %d (want %d), stdout %q, stderr %q; openssl fingerprint %s", name, r.code, want, r.stdout, r.stderr, fp)
		}
	}
}

// sourceOf is where the one key of a test file is, as check reports it.
func sourceOf(name string) string {
	switch {
	case strings.HasSuffix(name, ".der"):
		return "object 1 (byte 0)"
	case strings.HasSuffix(name, ".pub"):
		return "line 1"
	case strings.Contains(name, "ecparams"):
		return "block 2 (line 4)" // the key's own block, after EC PARAMETERS
	}
	return "block 1 (line 1)"
}

func TestCheckBundlesAndStdin(t *testing.T) {
	for _, name := range []string{"bundle.pem", "bundle.der", "authorized_keys", "known_hosts"} {
		want, _ := os.ReadFile(key(name + ".KEYS"))
		r := runWith(t, nil, "check", exampleFilter, key(name))
		_, fps, _ := parseText(t, r.stdout)
		if strings.Join(fps, "\n") != strings.TrimSpace(string(want)) || strings.Contains(r.stderr, "error") || strings.Contains(r.stderr, "warning") {
			t.Errorf("check %s: fingerprints\n%v\nwant\n%s\nstderr %q", name, fps, want, r.stderr)
		}
		// The same through standard input, with no FILE and with "-".
		data, _ := os.ReadFile(key(name))
		for _, args := range [][]string{{"check", exampleFilter}, {"check", exampleFilter, "-"}} {
			s := runWith(t, bytes.NewReader(data), args...)
			if s.code != r.code || strings.ReplaceAll(s.stdout, "<stdin>", key(name)) != r.stdout {
				t.Errorf("check %s from stdin %v:\n%s\nwant\n%s", name, args[2:], s.stdout, r.stdout)
			}
		}
	}
}

func TestCheckJSON(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.txt")
	os.WriteFile(junk, []byte("not a key\n"), 0o644)
	r := runWith(t, nil, "check", "-json", exampleFilter, key("p256.pub"), key("p384.pub"), junk, key("p256.pkcs8-encrypted.pem"))
	if r.code != 1 {
		t.Errorf("exit %d, want 1 (a key is probably compromised, which outranks errors)", r.code)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d JSON lines, want 4:\n%s", len(lines), r.stdout)
	}
	var objs []map[string]any
	for _, line := range lines {
		var o map[string]any
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		objs = append(objs, o)
	}
	m := manifest(t)
	for i, want := range []struct {
		file, fp string
		probably bool
	}{{"p256.pub", m["p256.pub"], true}, {"p384.pub", m["p384.pub"], false}} {
		o := objs[i]
		if o["fingerprint"] != want.fp || o["probably"] != want.probably || o["source"] != key(want.file)+": line 1" || o["file"] != key(want.file) || o["line"] != 1.0 {
			t.Errorf("object %d = %v, want %s probably=%v", i, o, want.fp, want.probably)
		}
	}
	if o := objs[2]; o["source"] != junk+": line 1" || !strings.Contains(fmt.Sprint(o["error"]), "no key, certificate or certificate request found") || o["fingerprint"] != nil {
		t.Errorf("junk object = %v", o)
	}
	if o := objs[3]; !strings.Contains(fmt.Sprint(o["error"]), "encrypted") {
		t.Errorf("encrypted key object = %v", o)
	}
	// Errors also go to stderr, naming file and place.
	for _, s := range []string{"pkbf: error: " + junk + ": line 1: invalid key: no key", key("p256.pkcs8-encrypted.pem") + ": block 1 (line 1): invalid key: ENCRYPTED PRIVATE KEY is an encrypted PKCS#8 key"} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
		}
	}
}

func TestCheckBadInputs(t *testing.T) {
	dir := t.TempDir()
	cert, _ := os.ReadFile(key("p384.cert.pem"))
	truncated := filepath.Join(dir, "truncated.pem")
	os.WriteFile(truncated, cert[:len(cert)/2], 0o644)
	corrupt := filepath.Join(dir, "corrupt.pkbf")
	f, _ := os.ReadFile(exampleFilter)
	os.WriteFile(corrupt, f[:len(f)-1], 0o644)
	missing := filepath.Join(dir, "missing.pem")
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string
		keys   int // verdict lines still printed
	}{
		{"truncated PEM, then a good key", []string{exampleFilter, truncated, key("p384.pub")}, 2, truncated + ": block 1 (line 1): invalid key: PEM block \"CERTIFICATE\" has no END line", 1},
		{"missing input, others still checked", []string{exampleFilter, missing, key("p384.pub")}, 2, "open " + missing + ": no such file or directory", 1},
		{"legacy encrypted PEM: not checked", []string{exampleFilter, key("p256.sec1-encrypted.pem"), key("p384.pub")}, 2, key("p256.sec1-encrypted.pem") + ": block 1 (line 1): invalid key: EC PRIVATE KEY is encrypted (Proc-Type 4,ENCRYPTED)", 1},
		{"legacy encrypted PEM, --strict", []string{"--strict", exampleFilter, key("p256.sec1-encrypted.pem"), key("p384.pub")}, 2, key("p256.sec1-encrypted.pem") + ": block 1 (line 1): invalid key: EC PRIVATE KEY is encrypted (Proc-Type 4,ENCRYPTED)", 1},
		{"encrypted OpenSSH key is fine", []string{exampleFilter, key("p521.openssh-encrypted.openssh")}, 0, "", 1},
		{"corrupt filter", []string{corrupt, key("p384.pub")}, 2, "invalid filter file: data is 4095 bytes, header says 4096", 0},
		{"missing filter", []string{filepath.Join(dir, "none.pkbf"), key("p384.pub")}, 2, "no such file", 0},
		{"a hit outranks errors", []string{exampleFilter, missing, key("p256.pub")}, 1, "no such file", 1},
	} {
		r := runWith(t, nil, append([]string{"check"}, tt.args...)...)
		_, fps, _ := parseText(t, r.stdout)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) || len(fps) != tt.keys {
			t.Errorf("%s: exit %d, %d verdicts, stderr %q; want exit %d, %d verdicts, stderr with %q", tt.name, r.code, len(fps), r.stderr, tt.code, tt.keys, tt.stderr)
		}
		if tt.stderr != "" && !strings.HasPrefix(r.stderr, "pkbf: error: ") {
			t.Errorf("%s: stderr %q lacks the pkbf: error: prefix", tt.name, r.stderr)
		}
	}
}

// TestStdinTerminalHint: check and add reading keys from a terminal say
// so, rather than seem to hang; from a pipe or with files named they say
// nothing (issue 43, item 13).
func TestStdinTerminalHint(t *testing.T) {
	defer func(f func(io.Reader) bool) { stdinTerminal = f }(stdinTerminal)
	tty := strings.NewReader(string(testkit.ReadFile(t, key("p384.pub"))))
	stdinTerminal = func(r io.Reader) bool { return r == tty }
	filter := filepath.Join(t.TempDir(), "f.pkbf")
	if r := runWith(t, nil, "create", "--hashes", "3", "--length", "10", filter); r.code != exitOK {
		t.Fatal(r)
	}
	const hint = "pkbf: reading keys from standard input (a terminal)"
	for _, tc := range []struct {
		name  string
		stdin io.Reader
		args  []string
		hint  bool
	}{
		{"check, terminal", tty, []string{"check", exampleFilter}, true},
		{"check, terminal, -", tty, []string{"check", exampleFilter, key("p256.pub"), "-"}, true},
		{"add, terminal", tty, []string{"add", filter}, true},
		{"check, pipe", strings.NewReader(""), []string{"check", exampleFilter}, false},
		{"check, files named", tty, []string{"check", exampleFilter, key("p256.pub")}, false},
	} {
		tty.Seek(0, io.SeekStart)
		r := runWith(t, tc.stdin, tc.args...)
		if strings.Contains(r.stderr, hint) != tc.hint {
			t.Errorf("%s: stderr %q, want the hint: %v", tc.name, r.stderr, tc.hint)
		}
	}
}

// TestFilterHints: a key or the arguments in the wrong order get a hint,
// from check and add alike, naming the file for what it is (issue 43,
// item 13: a short DER key, add's order).
func TestFilterHints(t *testing.T) {
	const isKey = "this looks like a DER key or certificate, not a filter"
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"check, Ed25519 PKCS#8 DER as the filter", []string{"check", key("ed25519.pkcs8.der")}, []string{isKey}},
		{"add, Ed25519 PKCS#8 DER as the filter", []string{"add", key("ed25519.pkcs8.der")}, []string{isKey}},
		{"check, P-256 SPKI DER as the filter", []string{"check", key("p256.spki.der")}, []string{isKey}},
		{"check, certificate DER as the filter", []string{"check", key("p256.cert.der")}, []string{isKey}},
		{"check, files first", []string{"check", key("p256.pub"), exampleFilter}, []string{"is a filter: the filter comes first, then the files to check"}},
		{"add, files first", []string{"add", key("p256.pub"), exampleFilter}, []string{"is a filter: the filter comes first, then the files to add"}},
		{"add, DER key first", []string{"add", key("ed25519.pkcs8.der"), exampleFilter}, []string{isKey, "the filter comes first, then the files to add"}},
	} {
		r := runWith(t, nil, tc.args...)
		for _, w := range tc.want {
			if r.code != exitTrouble || !strings.Contains(r.stderr, w) {
				t.Errorf("%s: exit %d, stderr %q; want %q", tc.name, r.code, r.stderr, w)
			}
		}
		if strings.Count(r.stderr, "this looks like") > 1 {
			t.Errorf("%s: the hint twice: %q", tc.name, r.stderr)
		}
	}
	// Not a key: no hint that it is one.
	junk := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(junk, append([]byte{0x30, 0x20}, make([]byte, 32)...), 0o644)
	if r := runWith(t, nil, "check", junk, key("p256.pub")); strings.Contains(r.stderr, "looks like") {
		t.Errorf("DER-looking junk as the filter: %q", r.stderr)
	}
}
