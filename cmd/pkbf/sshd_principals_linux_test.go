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

// F2 of red-team round 1: sshd reads an AuthorizedPrincipalsFile before it
// runs the AuthorizedPrincipalsCommand, and runs the command only when the
// file names none of the certificate's principals, so a compromised key's
// certificate from a clean CA of TrustedUserCAKeys logged in past pkbf
// authorized-principals. The lines of docs/sshd.md's step 3 (its paths the
// test's) now set AuthorizedPrincipalsFile none: with a principals file
// listing root below them, the compromised key (its certificate for root
// beside it, and the plain key) stays out. Each other way sshd lets a key
// in without pkbf, the docs' "Other ways in", gets it in, and the check
// of step 4 (sshd -T) then shows a line other than the page's: a
// principals file above the lines or in a Match block, no principals
// command, an authorized_keys file holding the key in a Match block. The
// check also shows the principals command set to none in a Match block
// (where sshd 9.2 refuses every certificate) and host-based logins in a
// Match block, which are not tried (a login needs the setuid ssh-keysign
// and the machine's own host keys).
func TestSSHDNoOtherWayIn(t *testing.T) {
	s := newSSHDTest(t)
	ca := s.keygen("ca-clean", "ed25519")
	filter := filepath.Join(s.dir, "compromised.pkbf")
	s.run(s.pkbf, "create", "--hashes", "4", "--length", "16", filter)
	bad := s.keygen("key-compromised", "ed25519")
	s.run(s.pkbf, "add", filter, bad+".pub")
	os.Chmod(filter, 0o644)
	cas := filepath.Join(s.dir, "user_ca.pub")
	caLine, _ := os.ReadFile(ca + ".pub")
	os.WriteFile(cas, caLine, 0o644)
	s.run("ssh-keygen", "-q", "-s", ca, "-I", "compromised", "-n", "root", bad+".pub") // ssh offers KEY-cert.pub with KEY
	empty := filepath.Join(s.dir, "authorized_keys")
	os.WriteFile(empty, nil, 0o644)
	principals := filepath.Join(s.dir, "principals")
	os.MkdirAll(principals, 0o755)
	os.WriteFile(filepath.Join(principals, "root"), []byte("root\n"), 0o644)
	keysFile := filepath.Join(s.dir, "authorized_keys.root")
	badLine, _ := os.ReadFile(bad + ".pub")
	os.WriteFile(keysFile, badLine, 0o644)

	ours := strings.NewReplacer("/usr/local/bin/pkbf", s.pkbf, "/var/lib/pkbf/pwnedkeys.pkbf", filter, "/etc/ssh/user_ca.pub", cas,
		"authorized-keys ", "authorized-keys --syslog off --file "+empty+" ", "authorized-principals ", "authorized-principals --syslog off ")
	var documented []string
	for _, l := range sshdConfigBlock(t).Text {
		documented = append(documented, ours.Replace(l))
	}
	_, shown := sshdCheck(t)
	for i := range shown {
		shown[i] = ours.Replace(shown[i])
	}
	with := func(before, after []string) []string {
		return append(append(append([]string{}, before...), documented...), after...)
	}
	principalsFile := "AuthorizedPrincipalsFile " + principals + "/%u"
	var noPrincipalsCommand []string
	for _, l := range documented {
		if !strings.HasPrefix(l, "AuthorizedPrincipalsCommand") {
			noPrincipalsCommand = append(noPrincipalsCommand, l)
		}
	}
	for _, c := range []struct {
		name           string
		config         []string
		in, tryLogin   bool
		differentCheck bool // step 4's check shows another line than the page's
	}{
		{"the documented lines", documented, false, true, false},
		{"then an AuthorizedPrincipalsFile (the report's configuration)", with(nil, []string{principalsFile}), false, true, false},
		{"an AuthorizedPrincipalsFile above them", with([]string{principalsFile}, nil), true, true, true},
		{"an AuthorizedPrincipalsFile in a Match block", with(nil, []string{"Match User root", "  " + principalsFile}), true, true, true},
		{"no principals command", noPrincipalsCommand, true, true, true},
		// sshd 9.2 takes none there for a command's path, and refuses.
		{"the principals command none in a Match block", with(nil, []string{"Match User root", "  AuthorizedPrincipalsCommand none"}), false, true, true},
		{"an AuthorizedKeysFile in a Match block", with(nil, []string{"Match User root", "  AuthorizedKeysFile " + keysFile}), true, true, true},
		{"host-based logins in a Match block", with(nil, []string{"Match User root", "  HostbasedAuthentication yes"}), false, false, true},
	} {
		got := s.commands(c.config...)
		if differs := strings.Join(got, "\n") != strings.Join(shown, "\n"); differs != c.differentCheck {
			t.Errorf("%s: step 4's check shows:\n%s\nthe page's lines differ: %v, want %v", c.name, strings.Join(got, "\n"), differs, c.differentCheck)
		}
		if !c.tryLogin {
			continue
		}
		port, log := s.startConfig(c.config...)
		if in, out := s.login(port, bad); in != c.in {
			t.Errorf("%s: the compromised key (with its certificate for root) logged in: %v, want %v\n%s\nsshd's log:\n%s", c.name, in, c.in, out, log.String())
		}
	}
}
