package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// F4 of the sshd attack report: with TrustedUserCAKeys, sshd accepts a
// certificate without running the AuthorizedKeysCommand, so a certified
// compromised key logged in. Through the sshd_config lines docs/sshd.md
// shows (its paths the test's, pkbf's flags for the test added), with pkbf
// authorized-principals as the AuthorizedPrincipalsCommand, a real sshd
// lets in a clean key certified by a clean CA, and refuses a compromised
// key certified by the clean CA, a clean key certified by a compromised
// CA, and a clean certificate for another principal. Without the command
// (the control), the compromised certified key gets in; so it does with
// the same lines, the keys command first (F1 of the sshd gate review),
// exactly when sshd -T shows the principals command dropped.
func TestSSHDAuthorizedPrincipalsCommand(t *testing.T) {
	s := newSSHDTest(t)
	caOK, caBad := s.keygen("ca-clean", "ed25519"), s.keygen("ca-compromised", "ecdsa")
	filter := filepath.Join(s.dir, "compromised.pkbf")
	s.run(s.pkbf, "create", "--hashes", "4", "--length", "16", filter)
	keyBad := s.keygen("key-compromised", "ed25519")
	s.run(s.pkbf, "add", filter, keyBad+".pub", caBad+".pub")
	os.Chmod(filter, 0o644)
	cas := filepath.Join(s.dir, "user_ca.pub")
	a, _ := os.ReadFile(caOK + ".pub")
	b, _ := os.ReadFile(caBad + ".pub")
	os.WriteFile(cas, append(a, b...), 0o644)
	certify := func(key, ca, principal string) string {
		s.run("ssh-keygen", "-q", "-s", ca, "-I", filepath.Base(key), "-n", principal, key+".pub")
		return key // ssh loads KEY-cert.pub with KEY
	}
	clean := certify(s.keygen("clean", "ed25519"), caOK, "root")
	byBadCA := certify(s.keygen("clean-by-bad-ca", "ed25519"), caBad, "root")
	other := certify(s.keygen("clean-for-other", "ed25519"), caOK, "someone-else")
	certify(keyBad, caOK, "root")
	empty := filepath.Join(s.dir, "authorized_keys")
	os.WriteFile(empty, nil, 0o644)
	keysCommand := fmt.Sprintf("authorized-keys --syslog off --file %s %s -- %%u %%t %%k", empty, filter)

	// The control: TrustedUserCAKeys alone, as the report found it.
	port, log := s.start(keysCommand, "TrustedUserCAKeys "+cas)
	if in, _ := s.login(port, keyBad); !in {
		t.Fatalf("control: the certified compromised key was refused without AuthorizedPrincipalsCommand (the report's finding no longer holds?):\n%s", log.String())
	}

	ours := strings.NewReplacer("/usr/local/bin/pkbf", s.pkbf, "/var/lib/pkbf/pwnedkeys.pkbf", filter, "/etc/ssh/user_ca.pub", cas,
		"authorized-keys ", "authorized-keys --syslog off --file "+empty+" ", "authorized-principals ", "authorized-principals --syslog off ")
	var documented []string
	for _, l := range sshdConfigBlock(t).Text {
		documented = append(documented, ours.Replace(l))
	}

	// The documented lines, the keys command first.
	wrong := keysFirst(documented)
	dropped := !strings.Contains(strings.Join(s.commands(wrong...), "\n"), "\nauthorizedprincipalscommand /")
	port, log = s.startConfig(wrong...)
	if in, _ := s.login(port, keyBad); in != dropped {
		t.Errorf("the keys command first: the certified compromised key logged in %v; sshd -T shows the principals command dropped: %v\n%s", in, dropped, log.String())
	}

	port, log = s.startConfig(documented...)
	for _, c := range []struct {
		name, key string
		in        bool
		logged    string // in sshd's log when refused
	}{
		{"clean key, clean CA", clean, true, ""},
		{"compromised key, clean CA", keyBad, false, "probably compromised (filter " + filter},
		{"clean key, compromised CA", byBadCA, false, "its CA key"},
		{"clean certificate for another principal", other, false, "root is not among its principals"},
	} {
		in, out := s.login(port, c.key)
		if in != c.in {
			t.Errorf("%s: logged in %v, want %v\n%s\nsshd's log:\n%s", c.name, in, c.in, out, log.String())
		}
		if !c.in && !waitFor(func() bool { return strings.Contains(log.String(), c.logged) }) {
			t.Errorf("%s: sshd's log does not say %q:\n%s", c.name, c.logged, log.String())
		}
	}
}
