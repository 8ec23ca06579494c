package main

import (
	"crypto"
	"crypto/ecdsa"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/doctest"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
)

// The configuration files and logs that docs/sshd.md, docs/operators.md
// and docs/stepca.md show, which TestDocs (internal/doctest) cannot run as
// sessions, checked here by the tools that read them.

// sshdConfigBlock is the sshd_config block of docs/sshd.md: both
// commands, the principals lines first.
func sshdConfigBlock(t *testing.T) doctest.Block {
	return docBlocks(t, "sshd.md", 1, "AuthorizedPrincipalsCommand ", "AuthorizedKeysCommand ")[0]
}

// sshdCheck is the check of docs/sshd.md's step 4: its command (sshd -T
// piped to grep) and the lines the page shows it printing.
func sshdCheck(t *testing.T) (command string, shown []string) {
	for _, c := range docBlocks(t, "sshd.md", 1, "$ sshd -T | grep ")[0].Commands {
		if strings.HasPrefix(c.Text, "sshd -T") {
			return c.Text, c.Want
		}
	}
	t.Fatal("docs/sshd.md's step 4 has no sshd -T command")
	return "", nil
}

// keysFirst returns sshd_config lines with the AuthorizedKeysCommand lines
// moved above the rest, as docs/sshd.md once had them (a block for keys,
// then one for certificates).
func keysFirst(lines []string) []string {
	var keys, rest []string
	for _, l := range lines {
		if strings.HasPrefix(l, "AuthorizedKeysCommand") {
			keys = append(keys, l)
		} else {
			rest = append(rest, l)
		}
	}
	return append(keys, rest...)
}

// TestDocsSSHDConfig: the sshd_config lines docs/sshd.md shows are ones
// sshd accepts (sshd -t, with a host key of the test's), and sshd reads
// both commands from them: sshd -T shows what the page's check shows (F1
// of the sshd gate review: OpenSSH 8.7 to 9.3 drop an
// AuthorizedPrincipalsCommand below an AuthorizedKeysCommand, which sshd
// -t does not see). The help of authorized-keys and authorized-principals
// shows the same lines.
func TestDocsSSHDConfig(t *testing.T) {
	s := newSSHDTest(t)
	b := sshdConfigBlock(t)
	config := filepath.Join(s.dir, "sshd_config")
	text := "HostKey " + s.hostKey() + "\nPidFile " + filepath.Join(s.dir, "pid") + "\n" + strings.Join(b.Text, "\n") + "\n"
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("/usr/sbin/sshd", "-t", "-f", config).CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("%s: sshd -t: %v\n%s", b.Where(), err, out)
	}
	checkCmd, shown := sshdCheck(t)
	got := s.commands(b.Text...)
	if strings.Join(got, "\n") != strings.Join(shown, "\n") {
		t.Errorf("step 4's check on the lines of %s shows:\n%s\nthe page shows:\n%s", b.Where(), strings.Join(got, "\n"), strings.Join(shown, "\n"))
	}
	// What the check must show: no file sshd reads keys or principals
	// from, no host-based logins, pkbf's two commands.
	for _, want := range []string{"authorizedkeysfile none", "authorizedprincipalsfile none", "hostbasedauthentication no",
		"authorizedkeyscommand /usr/local/bin/pkbf authorized-keys ", "authorizedprincipalscommand /usr/local/bin/pkbf authorized-principals "} {
		if !slices.ContainsFunc(shown, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("docs/sshd.md's step 4 check shows no line %q", want)
		}
	}
	for _, name := range []string{"authorized-keys", "authorized-principals"} {
		help := helpFile(name)
		if !strings.Contains(help, "\n  "+strings.Join(b.Text, "\n  ")+"\n") || !strings.HasSuffix(help, "\n  "+checkCmd) {
			t.Errorf("help/%s.txt does not show the lines of %s and, last, its check %q", name, b.Where(), checkCmd)
		}
	}
}

// F1 of the sshd gate review: with the AuthorizedKeysCommand lines above
// the AuthorizedPrincipalsCommand (the order docs/sshd.md once showed),
// Debian's sshd 9.2 drops the principals command, and the check the page
// gives (sshd -T) shows it: "authorizedprincipalscommand none".
func TestSSHDConfigKeysCommandFirst(t *testing.T) {
	s := newSSHDTest(t)
	b := sshdConfigBlock(t)
	got := strings.Join(s.commands(keysFirst(b.Text)...), "\n")
	if strings.Contains(got, "\nauthorizedprincipalscommand /") {
		t.Skipf("this sshd reads an AuthorizedPrincipalsCommand below an AuthorizedKeysCommand (OpenSSH 9.4 or later):\n%s", got)
	}
	if !strings.Contains(got, "\nauthorizedprincipalscommand none\n") || !strings.Contains(got, "authorizedkeyscommand /usr/local/bin/pkbf") {
		t.Errorf("sshd -T on the keys lines first shows:\n%s\nwant the keys command read and the principals command none", got)
	}
}

// TestDocsSSHDLog: the lines docs/sshd.md says pkbf authorized-keys logs
// for alice's file are the ones it logs: a login with the P-256 key in the
// filter, one with the laptop's clean key, the file refused by
// StrictModes, and the filter missing. Alice is the test's user, her file
// in a root-owned directory under /run (StrictModes checks every
// directory above it).
func TestDocsSSHDLog(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the file must sit in a root-owned directory chain for StrictModes")
	}
	file := docBlocks(t, "sshd.md", 1, "# alice's keys")[0]
	logBlock := docBlocks(t, "sshd.md", 1, "pkbf: error: refused login of user alice")[0]
	if len(logBlock.Text) != 5 {
		t.Fatalf("%s: %d lines, want the 5 the test knows", logBlock.Where(), len(logBlock.Text))
	}
	home, err := os.MkdirTemp("/run", "pkbf-docs-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	dotSSH := filepath.Join(home, ".ssh")
	if err := os.Mkdir(dotSSH, 0o700); err != nil {
		t.Fatal(err)
	}
	keysFile := filepath.Join(dotSSH, "authorized_keys")
	if err := os.WriteFile(keysFile, []byte(strings.Join(file.Text, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	filter := filepath.Join(home, "pwnedkeys.pkbf")
	w, err := pkbf.New(12, 20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keycheck.AddKey(w, testkit.ReadFile(t, "../../testdata/keys/p256.spki.der")); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(filter); err != nil {
		t.Fatal(err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	me := u.Username
	ours := strings.NewReplacer("/home/alice/.ssh/authorized_keys", keysFile, "/home/alice/.ssh", dotSSH,
		"user alice", "user "+me, "/var/lib/pkbf/pwnedkeys.pkbf", filter)
	want := func(lines ...int) string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(ours.Replace(logBlock.Text[l]) + "\n")
		}
		return b.String()
	}
	offered := func(line int) []string { return strings.Fields(file.Text[line])[:2] }
	login := func(filter string, key []string) result {
		return runWith(t, nil, append([]string{"authorized-keys", "--syslog", "off", "--file", keysFile, filter, "--", me}, key...)...)
	}
	if r := login(filter, offered(3)); r.code != 0 || r.stdout != "" || r.stderr != want(0) {
		t.Errorf("the P-256 key offered: exit %d, printed %q, logged:\n%s\nthe document shows:\n%s", r.code, r.stdout, r.stderr, want(0))
	}
	laptop := offered(1)
	if r := login(filter, laptop); r.code != 0 || r.stdout != file.Text[0]+"\n"+file.Text[1]+"\n" || r.stderr != want(1, 2) {
		t.Errorf("the laptop's key offered: exit %d, printed %q, logged:\n%s\nthe document shows:\n%s", r.code, r.stdout, r.stderr, want(1, 2))
	}
	if err := os.Chmod(dotSSH, 0o770); err != nil {
		t.Fatal(err)
	}
	if r := login(filter, laptop); r.code != 0 || r.stdout != "" || r.stderr != want(3) {
		t.Errorf("a group-writable .ssh: exit %d, printed %q, logged:\n%s\nthe document shows:\n%s", r.code, r.stdout, r.stderr, want(3))
	}
	if r := login(filter+".missing", laptop); r.code != 1 || r.stdout != "" || r.stderr != strings.ReplaceAll(want(4), filter, filter+".missing") {
		t.Errorf("a missing filter: exit %d, printed %q, logged:\n%s\nthe document shows:\n%s", r.code, r.stdout, r.stderr, want(4))
	}
}

// TestDocsSystemdUnits: the units docs/operators.md shows pass
// systemd-analyze verify (no unknown key, no value it cannot parse), with
// /usr/local/bin/pkbf this test's command.
func TestDocsSystemdUnits(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("PKBF_REQUIRE_SYSTEMD_ANALYZE") != "" {
			t.Fatal(err)
		}
		t.Skip("no systemd-analyze (apt-get install systemd):", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pkbf")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building pkbf: %v\n%s", err, out)
	}
	var units []string
	for _, b := range append(docBlocks(t, "operators.md", 1, "# /etc/systemd/system/pkbf-update.service"),
		docBlocks(t, "operators.md", 1, "# /etc/systemd/system/pkbf.service")...) {
		// A block holds one or more units, each after a "# /etc/systemd/system/NAME" line.
		var name string
		var text strings.Builder
		flush := func() {
			if name == "" {
				return
			}
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(text.String(), "/usr/local/bin/pkbf", bin)), 0o644); err != nil {
				t.Fatal(err)
			}
			units = append(units, path)
			text.Reset()
		}
		for _, l := range b.Text {
			if n, ok := strings.CutPrefix(l, "# /etc/systemd/system/"); ok {
				flush()
				name = n
				continue
			}
			text.WriteString(l + "\n")
		}
		flush()
	}
	if len(units) != 3 {
		t.Fatalf("found units %v, want pkbf-update.service, pkbf-update.timer and pkbf.service", units)
	}
	cmd := exec.Command(analyze, append([]string{"verify"}, units...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("systemd-analyze verify %v: %v\n%s", units, err, out)
	}
}

// TestDocsStepCA: docs/stepca.md's pkbf serve command and complete
// ca.json, with the test's files and ports in place of the page's, run
// as shown: step-ca v0.30.2 starts with that ca.json, an ACME client gets
// a certificate for a clean key and, for a compromised one, the error the
// page shows, and pkbf serve logs the refusal as the page shows it.
func TestDocsStepCA(t *testing.T) {
	bin := stepCABinary(t)
	dir := t.TempDir()
	f := writeCAFiles(t, dir)
	bad := testkit.Signer(t, "P-256")
	filter := writeFilterOf(t, dir, map[string]crypto.Signer{"P-256": bad})

	serveCmd := docBlocks(t, "stepca.md", 1, "$ pkbf serve --listen 127.0.0.1:8443", "/etc/pkbf/serve.crt")[0].Commands[0].Text
	args := strings.Fields(strings.ReplaceAll(serveCmd, "\\\n", " "))
	if len(args) < 4 || strings.Join(args[:4], " ") != "pkbf serve --listen 127.0.0.1:8443" {
		t.Fatalf("docs/stepca.md's serve command: %q", serveCmd)
	}
	ours := strings.NewReplacer("/etc/pkbf/serve.crt", f.serveCertPath, "/etc/pkbf/serve.key", f.serveKeyPath,
		"/etc/step-ca/certs/root_ca.crt", f.rootPath, "/var/lib/pkbf/pwnedkeys.pkbf", filter)
	for i := range args {
		args[i] = ours.Replace(args[i])
	}
	_, serveAddr, serveLogs := startServe(t, args[4:]...) // startServe listens on 127.0.0.1:0
	ca := &stepCA{serveLogs: serveLogs, webhookURL: "https://" + serveAddr + "/v1/step-ca/authorize"}
	if want := "step-ca webhook at https://" + serveAddr + "/v1/step-ca/authorize"; !ca.serveLogged(want) {
		t.Errorf("pkbf serve does not log %q, as the page says:\n%s", want, serveLogs.String())
	}

	caJSON := docBlocks(t, "stepca.md", 1, `"root": "/etc/step-ca/certs/root_ca.crt"`)[0]
	addr := freeAddr(t)
	config := strings.NewReplacer("/etc/step-ca/certs/root_ca.crt", f.rootPath, "/etc/step-ca/certs/intermediate_ca.crt", f.interPath,
		"/etc/step-ca/secrets/intermediate_ca_key", f.interKeyPath, "/var/lib/step-ca/db", filepath.Join(dir, "db"),
		"/etc/step-ca/secrets/ssh_host_ca_key", f.write("ssh_host_ca_key", pkcs8PEM(t, testkit.Signer(t, "P-256"))),
		"/etc/step-ca/secrets/ssh_user_ca_key", f.write("ssh_user_ca_key", pkcs8PEM(t, testkit.Signer(t, "P-256"))),
		"127.0.0.1:9000", addr, "https://127.0.0.1:8443/", "https://"+serveAddr+"/").Replace(strings.Join(caJSON.Text, "\n"))
	// Every provisioner carries the options of step 4, as pasted; the JWK
	// one's key is the test's.
	var step4 map[string]any
	if err := json.Unmarshal([]byte("{"+strings.Join(docBlocks(t, "stepca.md", 1, `"options": {`, "\"certType\": \"ALL\"\n")[0].Text, "\n")+"}"), &step4); err != nil {
		t.Fatalf("step 4's options: %v", err)
	}
	wantOptions, _ := json.Marshal(step4["options"])
	var parsed map[string]any
	if err := json.Unmarshal([]byte(config), &parsed); err != nil {
		t.Fatalf("the page's ca.json: %v", err)
	}
	ca.jwk = map[string]*ecdsa.PrivateKey{}
	provisioners, _ := parsed["authority"].(map[string]any)["provisioners"].([]any)
	for _, p := range provisioners {
		p := p.(map[string]any)
		options, _ := json.Marshal(p["options"])
		if want := strings.ReplaceAll(string(wantOptions), "https://127.0.0.1:8443/", "https://"+serveAddr+"/"); string(options) != want {
			t.Errorf("provisioner %v's options %s, not step 4's %s", p["name"], options, want)
		}
		if p["type"] == "JWK" {
			k := testkit.Signer(t, "P-256").(*ecdsa.PrivateKey)
			ca.jwk[p["name"].(string)], p["key"] = k, jwkPublic(k)
		}
	}
	if _, ok := ca.jwk["jwk"]; !ok || len(provisioners) != 2 {
		t.Fatalf("the page's ca.json has provisioners %v, want acme and a JWK one named jwk", provisioners)
	}
	b, _ := json.Marshal(parsed)
	ca.start(t, bin, dir, addr, f.write("ca.json", b), f.root)

	clean := testkit.Signer(t, "P-256")
	chain, err := ca.acmeCertificate(t, clean)
	if err != nil {
		t.Errorf("ACME, clean key: %v\nstep-ca:\n%s", err, ca.caLogs.String())
	} else {
		// The page's ca.json disables renewal (step-ca calls no webhook
		// there), and its --client-name keeps a subscriber's certificate,
		// from the same root, away from the webhook.
		subscriber := ca.mtls(chain, clean)
		for _, call := range []struct {
			url  string
			want int
			why  string
		}{
			{ca.url + "/1.0/renew", http.StatusUnauthorized, "renewal disabled"},
			{ca.webhookURL, http.StatusForbidden, "not the CA's certificate"},
		} {
			resp, err := subscriber.Post(call.url, "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatalf("the ACME certificate to %s: %v", call.url, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != call.want {
				t.Errorf("the ACME certificate to %s: %d %.200s, want %d (%s)", call.url, resp.StatusCode, b, call.want, call.why)
			}
		}
	}
	fp := fingerprintOf(t, bad)
	_, err = ca.acmeCertificate(t, bad)
	shown := docBlocks(t, "stepca.md", 1, "urn:ietf:params:acme:error:unauthorized", "04e79bb4…")[0]
	want := strings.Split(strings.ReplaceAll(strings.Join(shown.Text, "\n"), "04e79bb4…", fp[:8]+"…"), "\n")
	if err == nil || !doctest.Match(want, strings.Split(err.Error(), "\n")) {
		t.Errorf("ACME, compromised key: %v\nthe page shows (%s):\n%s", err, shown.Where(), strings.Join(want, "\n"))
	}

	// The JWK provisioner, an SSH CA: X.509 and SSH certificates of a
	// clean key are signed, an SSH certificate of a compromised key is
	// refused, and only step-ca's log says why, as the page shows it.
	clean = testkit.Signer(t, "P-256")
	if code, body := ca.sign(t, clean, "host.pkbf.test", "jwk"); code != http.StatusCreated {
		t.Errorf("/1.0/sign through the page's JWK provisioner, clean key: %d %s", code, body)
	}
	if code, body := ca.sshSign(t, clean, "jwk"); code != http.StatusCreated {
		t.Errorf("/1.0/ssh/sign through the page's JWK provisioner, clean key: %d %s", code, body)
	}
	if code, body := ca.sshSign(t, bad, "jwk"); code != http.StatusForbidden || strings.Contains(body, "compromised") {
		t.Errorf("/1.0/ssh/sign through the page's JWK provisioner, compromised key: %d %s, want 403 without the reason", code, body)
	}
	caLine := docBlocks(t, "stepca.md", 1, `level=warning`, "path=/1.0/ssh/sign", "(pkbf-compromised-key)")[0]
	if len(caLine.Text) != 1 {
		t.Fatalf("%s: %d lines, want one", caLine.Where(), len(caLine.Text))
	}
	caPattern := regexp.MustCompile(`time="[^"]*"`).ReplaceAllString(caLine.Text[0], `time="…"`)
	caPattern = regexp.MustCompile(`fingerprint [0-9a-f]{8}…`).ReplaceAllString(caPattern, "fingerprint "+fp[:8]+"…")
	if !waitFor(func() bool {
		for _, l := range strings.Split(ca.caLogs.String(), "\n") {
			if doctest.Match([]string{caPattern}, []string{l}) {
				return true
			}
		}
		return false
	}) {
		t.Errorf("step-ca did not log the refusal as %s shows it (%s):\n%s", caLine.Where(), caPattern, ca.caLogs.String())
	}
	// The operator finds step-ca's line by the request id pkbf logs.
	var ids []string
	if !waitFor(func() bool {
		ids = regexp.MustCompile(`SSH certificate's public key is reported as compromised .* request "([^"]+)"`).FindStringSubmatch(serveLogs.String())
		return ids != nil
	}) || !strings.Contains(ca.caLogs.String(), "request-id="+ids[1]) {
		t.Errorf("pkbf serve's log names no request id of step-ca's log (%v):\n%s", ids, serveLogs.String())
	}

	logLine := docBlocks(t, "stepca.md", 1, "step-ca: refused (pkbf-compromised-key)", "a7f3476e…")[0]
	if len(logLine.Text) != 1 {
		t.Fatalf("%s: %d lines, want one", logLine.Where(), len(logLine.Text))
	}
	pattern := logLine.Text[0]
	for re, with := range map[string]string{`\d{4}/\d\d/\d\d \d\d:\d\d:\d\d`: "…", `127\.0\.0\.1:\d+`: "127.0.0.1:…", `request "[^"]*"`: `request "…"`, `fingerprint [0-9a-f]{8}…`: "fingerprint " + fp[:8] + "…"} {
		pattern = regexp.MustCompile(re).ReplaceAllString(pattern, with)
	}
	logged := func() bool {
		for _, l := range strings.Split(serveLogs.String(), "\n") {
			if doctest.Match([]string{pattern}, []string{l}) {
				return true
			}
		}
		return false
	}
	if !waitFor(logged) {
		t.Errorf("pkbf serve did not log the refusal as %s shows it (%s):\n%s", logLine.Where(), pattern, serveLogs.String())
	}
}
