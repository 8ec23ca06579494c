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
	"time"

	"github.com/pkbf/pkbf"
)

const (
	exampleFilter = "../../testdata/example.pkbf"
	keysDir       = "../../testdata/keys"
)

type result struct {
	code           int
	stdout, stderr string
}

func runWith(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, stdin, &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

func key(name string) string { return filepath.Join(keysDir, name) }

// manifest: file name -> SPKI SHA-256 computed by openssl (see gen.sh).
func manifest(t *testing.T) map[string]string {
	m := map[string]string{}
	b, err := os.ReadFile(key("MANIFEST"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		m[f[0]] = f[1]
	}
	return m
}

func TestUsageAndExitCodes(t *testing.T) {
	for _, tt := range []struct {
		args       []string
		code       int
		stdout     string
		stderr     string
		emptyOther bool
	}{
		{nil, 2, "", "Usage:", true},
		{[]string{"frobnicate"}, 2, "", `pkbf: error: unknown command "frobnicate"`, true},
		{[]string{"chek"}, 2, "", `unknown command "chek"; did you mean "check"?`, true},
		{[]string{"help"}, 0, "Exit codes:", "", true},
		{[]string{"-h"}, 0, "Usage:", "", true},
		{[]string{"--help"}, 0, "Usage:", "", true},
		{[]string{"version"}, 0, "pkbf ", "", true},
		{[]string{"--version"}, 0, "pkbf ", "", true},
		{[]string{"-v"}, 0, "pkbf ", "", true},
		{[]string{"help", "check"}, 0, "Usage: pkbf check [--json]", "", true},
		{[]string{"help", "check"}, 0, "-j, --json", "", true},
		{[]string{"help", "foo"}, 2, "", `no help for "foo"`, true},
		{[]string{"help", "ad"}, 2, "", `did you mean "add"?`, true},
		{[]string{"info", "-h"}, 0, "Usage: pkbf info [--json] [--scan] FILTER", "", true},
		{[]string{"check", "-h"}, 0, "Usage: pkbf check", "", true},
		{[]string{"check", "--help"}, 0, "Usage: pkbf check", "", true},
		{[]string{"create", "-h"}, 0, "--fp-rate P", "", true},
		{[]string{"add", "-h"}, 0, "Usage: pkbf add [--passphrase-file FILE] FILTER", "", true},
		{[]string{"info"}, 2, "", "pkbf: error: info: missing arguments", true},
		{[]string{"info", "a", "b"}, 2, "", "pkbf: error: info: unexpected arguments: b", true},
		{[]string{"check", "-bogus", "f"}, 2, "", "pkbf: error: check: unknown flag -bogus", true},
		{[]string{"check", "--jsn", "f"}, 2, "", "unknown flag -jsn; did you mean -json?", true},
		{[]string{"check"}, 2, "", "Usage: pkbf check", true},
		{[]string{"check", "--api", "https://x", exampleFilter}, 2, "", "--api and --timeout go with --confirm", true},
		{[]string{"check", "--confirm", "--api", "ftp://x", exampleFilter}, 2, "", `--api "ftp://x" is not an http or https URL`, true},
		{[]string{"check", "--confirm", "--api", "", exampleFilter}, 2, "", `--api "" is not an http or https URL`, true},
		{[]string{"create", "-hashes", "x", "f"}, 2, "", "invalid value", true},
		{[]string{"add"}, 2, "", "missing arguments", true},
		{[]string{"completion"}, 2, "", "name one shell", true},
		{[]string{"completion", "bash"}, 0, "complete -o filenames -F _pkbf pkbf", "", true},
		{[]string{"completion", "zsh"}, 0, "#compdef pkbf", "", true},
		{[]string{"completion", "fish"}, 0, "complete -c pkbf", "", true},
	} {
		r := runWith(t, nil, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stdout, tt.stdout) || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("pkbf %v = exit %d\nstdout %q\nstderr %q\nwant exit %d, stdout with %q, stderr with %q", tt.args, r.code, r.stdout, r.stderr, tt.code, tt.stdout, tt.stderr)
		}
		if tt.emptyOther && tt.stdout == "" && r.stdout != "" {
			t.Errorf("pkbf %v wrote to stdout: %q", tt.args, r.stdout)
		}
		if tt.emptyOther && tt.stderr == "" && r.stderr != "" {
			t.Errorf("pkbf %v wrote to stderr: %q", tt.args, r.stderr)
		}
	}
}

func TestInfo(t *testing.T) {
	r := runWith(t, nil, "info", "-json", exampleFilter, "--scan")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("info -json: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	f, err := pkbf.Open(exampleFilter)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := f.Header()
	want := map[string]any{
		"revision": float64(h.Revision), "updated": h.Updated.Format(time.RFC3339), "entries": float64(h.EntryCount),
		"hash_count": float64(h.HashCount), "hash_length": float64(h.HashLength), "bits": float64(h.Bits()),
		"false_positive_rate": f.FalsePositiveRate(), "fill_ratio": f.FillRatio(), "size": float64(h.FileSize()),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("info -json %s = %v, want %v", k, got[k], v)
		}
	}
	if !strings.HasSuffix(got["updated"].(string), "Z") {
		t.Errorf("updated %v is not UTC", got["updated"])
	}
	r = runWith(t, nil, "info", "--scan", exampleFilter)
	for _, s := range []string{"entries:             5", "hash count (k):      12", "bits (m = 2^L):      32768", "false-positive rate:", "fill ratio:"} {
		if r.code != 0 || !strings.Contains(r.stdout, s) {
			t.Errorf("info: missing %q in\n%s", s, r.stdout)
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pkbf")
	os.WriteFile(bad, []byte("pkbfv1 but far too short"), 0o644)
	for path, want := range map[string]string{filepath.Join(dir, "missing.pkbf"): "no such file", bad: "invalid filter file"} {
		r := runWith(t, nil, "info", path)
		if r.code != 2 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, path) || r.stdout != "" {
			t.Errorf("info %s: exit %d, stderr %q; want 2 and %q naming the file", path, r.code, r.stderr, want)
		}
	}
}

var (
	textLine = regexp.MustCompile(`^(probably|no      )\t([0-9a-f]{64})\t([^\t]+)(\t.*)?$`)
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
		{"legacy encrypted PEM: a warning", []string{exampleFilter, key("p256.sec1-encrypted.pem"), key("p384.pub")}, 0, key("p256.sec1-encrypted.pem") + ": block 1 (line 1): invalid key: EC PRIVATE KEY is encrypted (Proc-Type 4,ENCRYPTED)", 1},
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
		if prefix := map[bool]string{true: "pkbf: error: ", false: "pkbf: warning: "}[tt.code != 0]; tt.stderr != "" && !strings.HasPrefix(r.stderr, prefix) {
			t.Errorf("%s: stderr %q lacks the pkbf: error: prefix", tt.name, r.stderr)
		}
	}
}

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
	r = runWith(t, bytes.NewReader(mustRead(t, key("ed25519.pub"))), "add", p, key("p384.cert.pem"), junk, "-")
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

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Without a terminal on stderr there is no progress display.
func TestNoProgressWithoutTerminal(t *testing.T) {
	defer setProgressTiming(0, time.Millisecond)()
	pr, pw := io.Pipe()
	go slowWriter(pw, mustRead(t, key("ed25519.pub")), 40, 5*time.Millisecond)
	r := runWith(t, pr, "check", exampleFilter)
	if r.stderr != "pkbf: checked 40 keys: 40 probably, 0 no\n" || strings.Contains(r.stdout, "keys/s") || strings.Count(r.stdout, "\n") != 40 {
		t.Errorf("stderr %q, stdout %q", r.stderr, r.stdout)
	}
}

func setProgressTiming(delay, every time.Duration) (restore func()) {
	d, e := progressDelay, progressEvery
	progressDelay, progressEvery = delay, every
	return func() { progressDelay, progressEvery = d, e }
}

// slowWriter writes data n times, pausing between writes, then closes.
func slowWriter(w *io.PipeWriter, data []byte, n int, pause time.Duration) {
	for range n {
		if _, err := w.Write(data); err != nil {
			return
		}
		time.Sleep(pause)
	}
	w.Close()
}

// The progress line shows keys done and the rate in human units and, for
// regular files, the share of bytes read; the screen cuts it to the
// terminal's width and erases it.
func TestProgressLine(t *testing.T) {
	p := &progress{started: time.Now().Add(-2 * time.Second), total: 3 << 30, what: "keys"}
	p.keys.Store(123456)
	p.bytes.Store(3 << 28)
	if got := p.text(); !regexp.MustCompile(`^123\.5k keys, 6\d\.\dk keys/s, 25% of 3 GiB$`).MatchString(got) {
		t.Errorf("progress line %q", got)
	}
	var buf bytes.Buffer
	scr := &screen{stderr: &buf, progress: true}
	defer func(w func(io.Writer) int) { terminalWidth = w }(terminalWidth)
	terminalWidth = func(io.Writer) int { return 20 }
	scr.showProgress(p.text())
	scr.eraseProgress()
	if got := buf.String(); got != "\r\x1b[K123.5k keys, 61.\r\x1b[K" && !regexp.MustCompile(`^\r\x1b\[K.{19}\r\x1b\[K$`).MatchString(got) {
		t.Errorf("screen wrote %q: want the line cut to 19 columns, then erased", got)
	}
}
