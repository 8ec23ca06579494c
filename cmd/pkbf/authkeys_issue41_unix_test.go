//go:build unix

package main

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pkbf/pkbf/internal/testkit"
)

// Issue 41: pkbf authorized-keys fails closed. Each numbered item of the
// attack report has its test here; each failed before the fix.

// gateSetup writes a filter holding the Ed25519, P-256 and RSA-2048 test
// keys; p384 is clean. It returns the directory (mode 0755), the filter
// and the keys' lines.
func gateSetup(t *testing.T) (dir, filter string, line func(name string) string) {
	t.Helper()
	dir = t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755) // t.TempDir's parent is 0700: let other users search it
	filter = filepath.Join(dir, "f.pkbf")
	if r := runWith(t, nil, "create", "-k", "4", "-l", "16", filter); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := runWith(t, nil, "add", filter, key("ed25519.pub"), key("p256.pub"), key("rsa2048.pub")); r.code != 0 {
		t.Fatal(r.stderr)
	}
	line = func(name string) string { return strings.TrimSpace(string(testkit.ReadFile(t, key(name)))) }
	return dir, filter, line
}

// gate runs authorized-keys for the current user on one file, offering
// the clean P-384 key.
func gate(t *testing.T, filter, file string, flags ...string) result {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	p384 := strings.Fields(strings.TrimSpace(string(testkit.ReadFile(t, key("p384.pub")))))
	args := append([]string{"authorized-keys", "--syslog", "off", "--strict-modes=false", "--file", file}, flags...)
	return runWith(t, nil, append(args, filter, "--", u.Username, p384[0], p384[1])...)
}

// Item 1: a line holding a compromised key that OpenSSH reads (ssh-keygen
// -l -f reads each as that key) but the old parser could not was passed
// on, and sshd accepted the key.
func TestIssue41Item1CompromisedLinesOpenSSHReads(t *testing.T) {
	dir, filter, line := gateSetup(t)
	rsa := strings.Fields(line("rsa2048.pub"))[1]
	ed := strings.Fields(line("ed25519.pub"))[1]
	clean := line("p384.pub")
	for name, l := range map[string]string{
		"rsa-sha2-256 type name":    "rsa-sha2-256 " + rsa + " x",
		"rsa-sha2-512 type name":    "rsa-sha2-512 " + rsa + " x",
		"comment over 64 KiB":       "ssh-ed25519 " + ed + " " + strings.Repeat("c", 70000),
		"vertical tab in base64":    "ssh-ed25519 " + ed[:20] + "\v" + ed[20:] + " x",
		"form feed in base64":       "ssh-ed25519 " + ed[:20] + "\f" + ed[20:] + " x",
		"carriage return in base64": "ssh-ed25519 " + ed[:20] + "\r" + ed[20:] + " x",
		"options, then rsa-sha2":    `command="echo \"a b\"",no-pty rsa-sha2-256 ` + rsa,
	} {
		path := filepath.Join(dir, "authorized_keys")
		os.WriteFile(path, []byte(clean+"\n"+l+"\n"), 0o644)
		r := gate(t, filter, path)
		if r.code != 0 || r.stdout != clean+"\n" {
			t.Errorf("%s: exit %d, printed %.200q, want only the clean key; stderr:\n%.500s", name, r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "left out "+path+" line 2: SHA256:") {
			t.Errorf("%s: the line left out is not logged with its fingerprint:\n%.500s", name, r.stderr)
		}
	}
}

// Item 2: an authorized_keys FIFO blocked pkbf in open() for good; sshd
// opens without blocking and refuses anything but a regular file.
func TestIssue41Item2FIFO(t *testing.T) {
	dir, filter, _ := gateSetup(t)
	fifo := filepath.Join(dir, "authorized_keys")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFO here:", err)
	}
	done := make(chan result, 1)
	go func() { done <- gate(t, filter, fifo) }()
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		w, _ := os.OpenFile(fifo, os.O_WRONLY, 0) // lets the blocked open return
		w.Close()
		t.Fatal("authorized-keys blocked on a FIFO")
	}
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, fifo+" is not a regular file") {
		t.Errorf("exit %d, printed %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// Item 3: run as root, pkbf followed a user's symlink to a file only root
// may read (/etc/shadow) and printed its lines; sshd reads a user's file
// with the user's rights.
func TestIssue41Item3SymlinkToAFileTheUserCannotRead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: pkbf cannot read what the user cannot")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody:", err)
	}
	dir, filter, line := gateSetup(t)
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte(line("p384.pub")+" root-only\n"), 0o600)
	targets := []string{secret}
	if _, err := os.Stat("/etc/shadow"); err == nil {
		targets = append(targets, "/etc/shadow")
	}
	for _, target := range targets {
		link := filepath.Join(dir, "authorized_keys")
		os.Remove(link)
		os.Symlink(target, link)
		for _, strict := range []string{"--strict-modes=false", "--strict-modes=true"} {
			r := runWith(t, nil, "authorized-keys", "--syslog", "off", strict, "--file", link, filter, "--", nobody.Username)
			if r.stdout != "" || !strings.Contains(r.stderr, "skipping "+link) {
				t.Errorf("%s -> %s: exit %d, printed %q, stderr %q", strict, target, r.code, r.stdout, r.stderr)
			}
		}
	}
}

// Item 4: with --strict-modes, a ~/.ssh that is a symlink into a
// directory writable by all was accepted; sshd checks the resolved path.
func TestIssue41Item4StrictModesOnTheResolvedPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the test needs a root-owned directory chain (under /run)")
	}
	_, filter, line := gateSetup(t)
	base, err := os.MkdirTemp("/run", "pkbf-strict-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	home, open := filepath.Join(base, "home"), filepath.Join(base, "open")
	os.Mkdir(home, 0o755)
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	os.Mkdir(filepath.Join(open, "ssh"), 0o755)
	os.WriteFile(filepath.Join(open, "ssh", "authorized_keys"), []byte(line("p384.pub")+"\n"), 0o644)
	os.Symlink(filepath.Join(open, "ssh"), filepath.Join(home, ".ssh"))
	path := filepath.Join(home, ".ssh", "authorized_keys")
	r := runWith(t, nil, "authorized-keys", "--syslog", "off", "--file", path, filter, "--", "root")
	if r.stdout != "" || !strings.Contains(r.stderr, "bad ownership or modes for directory "+open) {
		t.Errorf("exit %d, printed %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	os.Chmod(open, 0o755) // the same chain, safe: accepted
	r = runWith(t, nil, "authorized-keys", "--syslog", "off", "--file", path, filter, "--", "root")
	if r.code != 0 || r.stdout != line("p384.pub")+"\n" {
		t.Errorf("a safe chain: exit %d, printed %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// Item 5: an authorized_keys of 14,356 lines pkbf cannot read gave 14,356
// warnings on every login attempt; now one line per file says how many
// were left out.
func TestIssue41Item5OneWarningPerFile(t *testing.T) {
	dir, filter, line := gateSetup(t)
	path := filepath.Join(dir, "authorized_keys")
	bad := strings.Repeat("ssh-ed25519 AAAAnot-base64 x\n", 14356)
	os.WriteFile(path, []byte(bad+line("p384.pub")+"\n"), 0o644)
	r := gate(t, filter, path)
	if r.code != 0 || r.stdout != line("p384.pub")+"\n" {
		t.Fatalf("exit %d, printed %.300q", r.code, r.stdout)
	}
	if n := strings.Count(r.stderr, "\n"); n != 1 || !strings.Contains(r.stderr, "left out 14356 lines of "+path) {
		t.Errorf("%d lines of warnings, want 1 saying 14356 lines were left out:\n%.500s", n, r.stderr)
	}
}

// The offered key decides first: when the filter probably holds it,
// nothing at all is printed, whatever the files hold, and the refusal is
// logged once.
func TestIssue41OfferedKeyDecidesFirst(t *testing.T) {
	dir, filter, line := gateSetup(t)
	path := filepath.Join(dir, "authorized_keys")
	os.WriteFile(path, []byte(line("p384.pub")+"\n"+line("p256.pub")+"\n"), 0o644)
	u, _ := user.Current()
	for _, name := range []string{"p256.pub", "rsa2048.pub", "ed25519.pub"} {
		f := strings.Fields(line(name))
		r := runWith(t, nil, "authorized-keys", "--syslog", "off", "--strict-modes=false", "--file", path, filter, "--", u.Username, f[0], f[1])
		if r.code != 0 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "refused login of user "+u.Username+" with "+f[0]+" key SHA256:") {
			t.Errorf("%s offered: exit %d, printed %q, stderr %q", name, r.code, r.stdout, r.stderr)
		}
	}
}
