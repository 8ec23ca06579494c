package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// authorized-principals prints the user for a certificate that names it,
// whose key and CA key the filter does not hold; nothing otherwise, with
// the reason logged; exit 1 for what it cannot read.
func TestAuthorizedPrincipals(t *testing.T) {
	dir := t.TempDir()
	newKey := func() (ssh.PublicKey, ssh.Signer) {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		sp, _ := ssh.NewPublicKey(pub)
		s, _ := ssh.NewSignerFromKey(priv)
		return sp, s
	}
	certify := func(key ssh.PublicKey, ca ssh.Signer, principals ...string) (typ, blob string) {
		c := &ssh.Certificate{Key: key, CertType: ssh.UserCert, ValidPrincipals: principals, ValidBefore: ssh.CertTimeInfinity}
		if err := c.SignCert(rand.Reader, ca); err != nil {
			t.Fatal(err)
		}
		return c.Type(), base64.StdEncoding.EncodeToString(c.Marshal())
	}
	clean, _ := newKey()
	bad, _ := newKey()
	_, ca := newKey()
	badCAPub, badCA := newKey()
	filter := filepath.Join(dir, "f.pkbf")
	compromised := filepath.Join(dir, "compromised.pub")
	os.WriteFile(compromised, append(ssh.MarshalAuthorizedKey(bad), ssh.MarshalAuthorizedKey(badCAPub)...), 0o644)
	if r := runWith(t, nil, "create", "-k", "4", "-l", "16", filter); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := runWith(t, nil, "add", filter, compromised); r.code != 0 {
		t.Fatal(r.stderr)
	}
	cert := func(key ssh.PublicKey, ca ssh.Signer, principals ...string) []string {
		typ, blob := certify(key, ca, principals...)
		return []string{typ, blob}
	}
	plain := []string{clean.Type(), base64.StdEncoding.EncodeToString(clean.Marshal())}
	missing := filepath.Join(dir, "missing.pkbf")
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		logged string
	}{
		{"clean key and CA", append([]string{filter, "--", "alice"}, cert(clean, ca, "bob", "alice")...), 0, "alice\n", ""},
		{"compromised key", append([]string{filter, "--", "alice"}, cert(bad, ca, "alice")...), 0, "", "probably compromised (filter " + filter},
		{"compromised CA key", append([]string{filter, "--", "alice"}, cert(clean, badCA, "alice")...), 0, "", "its CA key"},
		{"user not a principal", append([]string{filter, "--", "alice"}, cert(clean, ca, "bob")...), 0, "", "alice is not among its principals"},
		{"no principals", append([]string{filter, "--", "alice"}, cert(clean, ca)...), 0, "", "alice is not among its principals"},
		{"plain key", append([]string{filter, "--", "alice"}, plain...), 1, "", "not a certificate"},
		{"bad base64", []string{filter, "--", "alice", "ssh-ed25519-cert-v01@openssh.com", "AAAA-"}, 1, "", "no certificate accepted"},
		{"user name sshd reads otherwise", append([]string{filter, "--", "a b"}, cert(clean, ca, "a b")...), 1, "", "not read the name as one principal"},
		{"missing filter, fail closed", append([]string{missing, "--", "alice"}, cert(clean, ca, "alice")...), 1, "", "no certificate accepted (fail closed)"},
		{"missing filter, fail open", append([]string{"--fail", "open", missing, "--", "alice"}, cert(clean, ca, "alice")...), 0, "alice\n", "passed on unchecked (fail open)"},
		{"too few arguments", []string{filter, "--", "alice"}, 2, "", "want FILTER USER KEYTYPE KEY"},
	} {
		r := runWith(t, nil, append([]string{"authorized-principals", "--syslog", "off"}, c.args...)...)
		if r.code != c.code || r.stdout != c.stdout || !strings.Contains(r.stderr, c.logged) {
			t.Errorf("%s: exit %d, printed %q, stderr %q; want exit %d, %q, a log with %q", c.name, r.code, r.stdout, r.stderr, c.code, c.stdout, c.logged)
		}
	}
}
