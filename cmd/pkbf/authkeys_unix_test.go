//go:build unix

package main

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

// authKeysSetup writes a filter holding the P-256 and Ed25519 test keys,
// and returns it with the lines of the keys (ed25519.pub, p256.pub,
// p384.pub) and the current user's name.
func authKeysSetup(t *testing.T) (dir, filter string, ed, p256, p384, me string) {
	t.Helper()
	dir = t.TempDir()
	os.Chmod(dir, 0o755)
	filter = filepath.Join(dir, "f.pkbf")
	if r := runWith(t, nil, "create", "-k", "4", "-l", "16", filter); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := runWith(t, nil, "add", filter, key("ed25519.pub"), key("p256.pub")); r.code != 0 {
		t.Fatal(r.stderr)
	}
	line := func(name string) string { return strings.TrimSpace(string(testkit.ReadFile(t, key(name)))) }
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return dir, filter, line("ed25519.pub"), line("p256.pub"), line("p384.pub"), u.Username
}

// The lines printed are the file's, byte for byte, but those whose key
// the filter holds and those with no key pkbf reads as sshd does, whatever
// the line ends and options; each line left out is logged with its place
// and fingerprint, the unreadable ones in one line. Lines end at line
// feeds only, as sshd reads them: a file whose lines end in lone carriage
// returns is one line, here a comment.
func TestAuthorizedKeysLeavesOutCompromised(t *testing.T) {
	dir, filter, ed, p256, p384, me := authKeysSetup(t)
	for _, eol := range []string{"\n", "\r\n", "\r"} {
		content := "# keys" + eol + `command="true",no-pty ` + p384 + eol + "" + eol + p256 + eol + `from="10.0.0.1" ` + ed + eol + "ssh-ed25519 AAAAnot-base64 x" + eol
		path := filepath.Join(dir, "authorized_keys")
		os.WriteFile(path, []byte(content), 0o644)
		fields := strings.Fields(p384)
		r := runWith(t, nil, "authorized-keys", "--syslog", "off", "--strict-modes=false", "--file", path, filter, "--", me, fields[0], fields[1])
		want := "# keys" + eol + `command="true",no-pty ` + p384 + eol + eol
		if eol == "\r" {
			want = content
		}
		want = strings.TrimSuffix(want, "\n") + "\n"
		if eol == "\r\n" {
			want = "# keys\r\n" + `command="true",no-pty ` + p384 + "\r\n\r\n"
		}
		if r.code != 0 || r.stdout != want {
			t.Fatalf("line end %q: exit %d, printed\n%q\nwant\n%q\nstderr: %s", eol, r.code, r.stdout, want, r.stderr)
		}
		if eol == "\r" {
			if r.stderr != "" {
				t.Errorf("a comment line: %s", r.stderr)
			}
			continue
		}
		for _, w := range []string{
			"left out " + path + " line 4: SHA256:",
			"left out " + path + " line 5: SHA256:",
			"left out 1 line of " + path + " with no key pkbf reads as sshd does (the first, line 6: ",
		} {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("line end %q: stderr lacks %q:\n%s", eol, w, r.stderr)
			}
		}
	}
}

// Files are read as sshd reads them: missing files skipped, files over
// --max-size skipped, and StrictModes' checks (pkbfssh's tests test each
// rule).
func TestAuthorizedKeysFiles(t *testing.T) {
	dir, filter, _, _, p384, me := authKeysSetup(t)
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte(p384+"\n"), 0o644)
	big := filepath.Join(dir, "big")
	os.WriteFile(big, []byte(strings.Repeat("# padding\n", 200)), 0o644)

	r := runWith(t, nil, "authorized-keys", "--syslog", "off", "--max-size", "1KiB", "--strict-modes=false",
		"--file", good, "--file", filepath.Join(dir, "missing"), "--file", big, filter, me)
	if r.code != 0 || r.stdout != p384+"\n" {
		t.Fatalf("exit %d, printed %q (stderr %s)", r.code, r.stdout, r.stderr)
	}
	if w := "skipping " + big + ": " + big + " is 2000 bytes, over the limit of 1024"; !strings.Contains(r.stderr, w) {
		t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
	}
	r = runWith(t, nil, "authorized-keys", "--syslog", "off", "--file", good, filter, me)
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "bad ownership or modes for directory") {
		t.Errorf("strict modes under /tmp: exit %d, printed %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "missing") {
		t.Errorf("a missing file is reported: %s", r.stderr)
	}
}

// --max-size below 1 byte is a usage error (exit 2, no key printed), as
// update's sizes are, not the 1 MiB default; 1 byte is the least taken.
func TestAuthorizedKeysMaxSizePositive(t *testing.T) {
	dir, filter, _, _, p384, me := authKeysSetup(t)
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte(p384+"\n"), 0o644)
	for _, tc := range []struct{ name, size, want string }{
		{"zero", "0", "--max-size 0: must be positive"},
		{"minus one", "-1", "--max-size -1: must be positive"},
		{"minus one KiB", "-1KiB", "--max-size -1KiB: must be positive"},
		{"not a size", "lots", "not a size"},
	} {
		r := runWith(t, nil, "authorized-keys", "--syslog", "off", "--max-size", tc.size, "--strict-modes=false", "--file", good, filter, me)
		if r.code != exitTrouble || r.stdout != "" || !strings.Contains(r.stderr, "pkbf: error: authorized-keys: ") || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: exit %d, printed %q, stderr %q; want exit 2 and %q", tc.name, r.code, r.stdout, r.stderr, tc.want)
		}
	}
	r := runWith(t, nil, "authorized-keys", "--syslog", "off", "--max-size", "1", "--strict-modes=false", "--file", good, filter, me)
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "over the limit of 1") {
		t.Errorf("--max-size 1: exit %d, printed %q, stderr %q; want the file skipped", r.code, r.stdout, r.stderr)
	}
}

// With the filter unreadable, --fail closed prints nothing and exits 1
// (sshd then ignores the command's output), --fail open prints the keys
// unchecked; both say so. Flags come only before FILTER: the tokens after
// it come from sshd.
func TestAuthorizedKeysFailModes(t *testing.T) {
	dir, _, _, p256, _, me := authKeysSetup(t)
	path := filepath.Join(dir, "authorized_keys")
	os.WriteFile(path, []byte(p256+"\n"), 0o644)
	missing := filepath.Join(dir, "missing.pkbf")
	notFilter := path
	for _, filter := range []string{missing, notFilter} {
		r := runWith(t, nil, "authorized-keys", "--syslog", "off", "--strict-modes=false", "--file", path, filter, me)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "no key accepted (fail closed)") || !strings.Contains(r.stderr, filter) {
			t.Errorf("%s, --fail closed: exit %d, printed %q, stderr %q", filter, r.code, r.stdout, r.stderr)
		}
		r = runWith(t, nil, "authorized-keys", "--syslog", "off", "--strict-modes=false", "--fail", "open", "--file", path, filter, me)
		if r.code != 0 || r.stdout != p256+"\n" || !strings.Contains(r.stderr, "keys passed on unchecked (fail open)") {
			t.Errorf("%s, --fail open: exit %d, printed %q, stderr %q", filter, r.code, r.stdout, r.stderr)
		}
	}
	for _, args := range [][]string{
		{missing, "--fail=open", me},               // a flag after FILTER is sshd's token
		{missing, "--", "no-such-user-pkbf-test"},  // an unknown user
		{missing, me, "--fail=open", "AAAA", "fp"}, // tokens that look like flags
	} {
		r := runWith(t, nil, append([]string{"authorized-keys", "--syslog", "off", "--file", path}, args...)...)
		if r.code == 0 || r.stdout != "" {
			t.Errorf("%v: exit %d, printed %q: want nothing printed", args, r.code, r.stdout)
		}
	}
	if r := runWith(t, nil, "authorized-keys", "--fail", "maybe", missing, me); r.code != exitTrouble || !strings.Contains(r.stderr, "want one of closed, open") {
		t.Errorf("--fail maybe: exit %d, %q", r.code, r.stderr)
	}
}
