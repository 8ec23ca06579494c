package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Issue 41 against a real sshd (Debian's OpenSSH), each family of the
// attack report in turn, with the command run as root (the documented
// AuthorizedKeysCommandUser): a compromised key written so that the old
// parser could not read it is refused and a clean key written the same
// way logs in (and behind quoted options); an authorized_keys FIFO, a symlink to a file the user
// cannot read, or one whose resolved path is unsafe lets no key in; a
// file of unreadable lines gives one warning per run, not one per line.
func TestSSHDIssue41(t *testing.T) {
	s := newSSHDTest(t)
	clean := s.keygen("clean", "ed25519")
	edBad := s.keygen("ed-compromised", "ed25519")
	rsaOK := s.keygen("rsa-clean", "rsa", "-b", "2048")
	rsaBad := s.keygen("rsa-compromised", "rsa", "-b", "2048")
	blob := func(key string) string {
		b, _ := os.ReadFile(key + ".pub")
		return strings.Fields(string(b))[1]
	}
	filter := filepath.Join(s.dir, "compromised.pkbf")
	s.run(s.pkbf, "create", "--hashes", "4", "--length", "16", filter)
	s.run(s.pkbf, "add", filter, edBad+".pub", rsaBad+".pub")
	os.Chmod(filter, 0o644)
	authorized := filepath.Join(s.dir, "authorized_keys")
	port, log := s.start(fmt.Sprintf("authorized-keys --syslog off --file %s %s -- %%u %%t %%k", authorized, filter),
		"AuthorizedKeysCommandUser root")
	write := func(lines ...string) {
		os.Remove(authorized)
		os.WriteFile(authorized, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	}
	expect := func(family, key string, in bool) {
		t.Helper()
		if ok, out := s.login(port, key); ok != in {
			t.Errorf("%s: %s logged in: %v, want %v\n%s\nsshd:\n%s", family, filepath.Base(key), ok, in, out, log.String())
		}
	}
	long := strings.Repeat("c", 70000)
	ed, edOK, rsa, rsaClean := blob(edBad), blob(clean), blob(rsaBad), blob(rsaOK)

	write("rsa-sha2-256 "+rsa+" x", "rsa-sha2-512 "+rsaClean+" y")
	expect("rsa-sha2-256 line", rsaBad, false)
	expect("rsa-sha2-512 line", rsaOK, true)
	if fp := strings.Fields(s.run("ssh-keygen", "-l", "-f", rsaBad+".pub"))[1]; !waitFor(func() bool {
		return strings.Contains(log.String(), "refused login of user root with ssh-rsa key "+fp)
	}) {
		t.Errorf("sshd's log does not say that the RSA key %s was refused:\n%s", fp, log.String())
	}

	write(`environment="A=\"b c\"",no-pty rsa-sha2-512 `+rsa, `environment="A=\"b c\"",no-pty ssh-ed25519 `+edOK)
	expect("quoted options, then rsa-sha2-512", rsaBad, false)
	expect("quoted options", clean, true)

	write("ssh-ed25519 "+ed+" "+long, "ssh-ed25519 "+edOK+" "+long)
	expect("comment over 64 KiB", edBad, false)
	expect("comment over 64 KiB", clean, true)

	write("ssh-ed25519 "+ed[:20]+"\v"+ed[20:]+" x", "ssh-ed25519 "+ed[:10]+"\f"+ed[10:]+" x", "ssh-ed25519 "+edOK[:20]+"\v"+edOK[20:]+" y")
	expect("white space in base64", edBad, false)
	expect("white space in base64", clean, true)

	// Unreadable lines: one warning per run of the command.
	write(append(strings.Split(strings.Repeat("ssh-ed25519 AAAAnot-base64 x\n", 1000), "\n"), "ssh-ed25519 "+edOK)...)
	expect("1000 unreadable lines", clean, true)
	summary := "left out 1000 lines of " + authorized
	waitFor(func() bool { return strings.Contains(log.String(), summary) })
	if n, all := strings.Count(log.String(), summary), strings.Count(log.String(), "with no key pkbf reads"); n < 1 || n > 2 || all != n {
		t.Errorf("1000 unreadable lines: %d summaries, %d warnings of unreadable lines; want one a run (sshd runs the command twice):\n%s", n, all, log.String())
	}

	// Unsafe resolved path: a symlink through a directory writable by all.
	open := filepath.Join(s.dir, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	os.WriteFile(filepath.Join(open, "keys"), []byte("ssh-ed25519 "+edOK+"\n"), 0o644)
	os.Remove(authorized)
	os.Symlink(filepath.Join(open, "keys"), authorized)
	expect("symlink through a directory writable by all", clean, false)
	if !waitFor(func() bool { return strings.Contains(log.String(), "bad ownership or modes for directory "+open) }) {
		t.Errorf("sshd's log does not name the unsafe directory:\n%s", log.String())
	}

	// A symlink to a file only root may read, for the user nobody.
	secret := filepath.Join(s.dir, "root-only")
	os.WriteFile(secret, []byte("ssh-ed25519 "+edOK+"\n"), 0o600)
	os.Remove(authorized)
	os.Symlink(secret, authorized)
	s.loginAs(port, clean, "nobody")
	if strings.Contains(log.String(), "Accepted publickey for nobody") || !waitFor(func() bool {
		return strings.Contains(log.String(), "user nobody may not read "+authorized)
	}) {
		t.Errorf("a symlink to a root-only file: sshd's log:\n%s", log.String())
	}
	os.Chmod(secret, 0o644) // the control: nobody may read it now
	s.loginAs(port, clean, "nobody")
	if !waitFor(func() bool { return strings.Contains(log.String(), "Accepted publickey for nobody") }) {
		t.Errorf("the same file, readable by nobody: not accepted:\n%s", log.String())
	}

	// A FIFO: sshd's command returns (the old one blocked in open).
	os.Remove(authorized)
	if err := syscall.Mkfifo(authorized, 0o644); err != nil {
		t.Fatal(err)
	}
	expect("FIFO", clean, false)
	if !waitFor(func() bool { return strings.Contains(log.String(), authorized+" is not a regular file") }) {
		t.Errorf("sshd's log does not say the FIFO was skipped:\n%s", log.String())
	}
}
