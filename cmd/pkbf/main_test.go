package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{[]string{"add", "-h"}, 0, "Usage: pkbf add [--fp-rate P] [--passphrase-file FILE] [-r] [--allow-empty] FILTER", "", true},
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

// TestHelpVersion: help for a command without flags prints that command's
// usage, not the general one (issue 43, item 13).
func TestHelpVersion(t *testing.T) {
	for _, name := range []string{"version", "help"} {
		r := runWith(t, nil, "help", name)
		if r.code != exitOK || !strings.HasPrefix(r.stdout, "Usage: pkbf "+name) || strings.Contains(r.stdout, "Commands:") {
			t.Errorf("help %s: exit %d, stdout %q", name, r.code, r.stdout)
		}
	}
	if r := runWith(t, nil, "help", "version"); !strings.Contains(r.stdout, "Go version") {
		t.Errorf("help version says nothing of what it prints: %q", r.stdout)
	}
}

// TestCommandsWithoutFlagsRefuseThem: version, help and completion take
// no flags and a fixed number of arguments; anything else is a usage
// error (exit 2), as for every other command (version printed itself and
// exited 0 whatever followed it). -h is help, exit 0.
func TestCommandsWithoutFlagsRefuseThem(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"version, unknown flag", []string{"version", "--bogus"}, 2, "pkbf: error: version: unknown flag -bogus"},
		{"version, an argument", []string{"version", "extra"}, 2, "pkbf: error: version: unexpected arguments: extra"},
		{"--version, an argument", []string{"--version", "x"}, 2, "pkbf: error: version: unexpected arguments: x"},
		{"-v, unknown flag", []string{"-v", "--json"}, 2, "pkbf: error: version: unknown flag -json"},
		{"help, unknown flag", []string{"help", "--bogus"}, 2, `no help for "--bogus": no such command`},
		{"help, two commands", []string{"help", "nix", "extra"}, 2, "help takes one command name"},
		{"completion, two shells", []string{"completion", "bash", "extra"}, 2, "name one shell"},
		{"completion, unknown flag", []string{"completion", "--bogus"}, 2, `unknown shell "--bogus"`},
		{"version -h", []string{"version", "-h"}, 0, ""},
		{"version", []string{"version"}, 0, ""},
	} {
		r := runWith(t, nil, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) || tc.code == 2 && r.stdout != "" || tc.code == 0 && r.stderr != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.name, r.code, r.stdout, r.stderr, tc.code, tc.stderr)
		}
	}
}

// TestHelpAuthorizedKeysFlagsBeforeFilter: authorized-keys reads flags
// only before FILTER, and its help says so, once (issue 43, item 13).
func TestHelpAuthorizedKeysFlagsBeforeFilter(t *testing.T) {
	for _, args := range [][]string{{"help", "authorized-keys"}, {"authorized-keys", "-h"}} {
		r := runWith(t, nil, args...)
		if r.code != exitOK || strings.Contains(r.stdout, "anywhere among the arguments") || !strings.Contains(r.stdout, "Flags (one or two dashes; before the first argument)") {
			t.Errorf("%v: exit %d, stdout:\n%s", args, r.code, r.stdout)
		}
	}
	if r := runWith(t, nil, "help", "check"); !strings.Contains(r.stdout, "anywhere among the arguments") {
		t.Errorf("help check lost its flags anywhere:\n%s", r.stdout)
	}
}
