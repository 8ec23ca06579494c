package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keys"
)

// check finds a key whatever encoding the filter holds it in, and prints
// the canonical fingerprint, with the given one beside it where it differs.
func TestCheckEveryEncoding(t *testing.T) {
	more := filepath.Join(keysDir, "more")
	// A filter holding only the compressed P-256 SPKI, as an
	// implementation that hashed one file as it stands would build it.
	stored, err := keys.SPKI(mustRead(t, key("p256.spki-compressed.der")))
	if err != nil {
		t.Fatal(err)
	}
	canonical, _ := keys.Canonical(stored)
	p := filepath.Join(t.TempDir(), "f.pkbf")
	f, _ := pkbf.New(4, 16)
	f.Add(stored)
	if err := f.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	files := []string{key("p256.cert.pem"), key("p256.pkcs8.pem"), key("p256.sec1.der"), key("p256.openssh"), key("p256.pub"),
		filepath.Join(more, "p256.spki-explicit.pem"), filepath.Join(more, "p256.sec1-explicit.pem"), filepath.Join(more, "p256.sec1-nopub.pem"),
		filepath.Join(more, "p256.encrypted.ppk"), filepath.Join(more, "bom.cert.pem")}
	r := runWith(t, nil, append([]string{"check", "-json", p}, files...)...)
	if r.code != exitFound {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != len(files) {
		t.Fatalf("%d lines for %d files:\n%s", len(lines), len(files), r.stdout)
	}
	for i, line := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		if v["probably"] != true || v["fingerprint"] != keys.Fingerprint(canonical) {
			t.Errorf("%s: %s", files[i], line)
		}
	}
	// The as-given fingerprint where the file has another encoding.
	r = runWith(t, nil, "check", p, key("p256.spki-compressed.pem"))
	if !strings.Contains(r.stdout, "probably\t"+keys.Fingerprint(canonical)) || !strings.Contains(r.stdout, "\tas given: "+keys.Fingerprint(stored)+"\n") {
		t.Errorf("text output %q", r.stdout)
	}
}

// PKCS#12 files: the passphrase comes from a file or the environment.
func TestCheckPKCS12Passphrase(t *testing.T) {
	more := filepath.Join(keysDir, "more")
	p12 := filepath.Join(more, "chain-password.p12")
	r := runWith(t, nil, "check", exampleFilter, p12)
	if r.code != exitOK || !strings.Contains(r.stderr, "pkbf: warning: ") || !strings.Contains(r.stderr, "password") || !strings.Contains(r.stderr, "1 encrypted") {
		t.Errorf("without the passphrase: %+v", r)
	}
	if r := runWith(t, nil, "check", "--strict", exampleFilter, p12); r.code != exitTrouble || !strings.Contains(r.stderr, "pkbf: error: ") {
		t.Errorf("without the passphrase, --strict: %+v", r)
	}
	r = runWith(t, nil, "check", "-passphrase-file", filepath.Join(more, "passphrase"), exampleFilter, p12)
	if r.code == exitTrouble || strings.Count(r.stdout, "\n") != 3 || !strings.Contains(r.stdout, "certificate 2") || !strings.Contains(r.stdout, "private key 1") {
		t.Errorf("with -passphrase-file: %+v", r)
	}
	t.Setenv(passphraseEnv, "changeit")
	r = runWith(t, nil, "check", exampleFilter, filepath.Join(more, "truststore.p12"))
	if r.code == exitTrouble || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("with $%s: %+v", passphraseEnv, r)
	}
	os.Unsetenv(passphraseEnv)
}
