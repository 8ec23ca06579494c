package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keys"
)

// check finds a key whatever encoding the filter holds it in, and prints
// the canonical fingerprint, with the given one beside it where it differs.
func TestCheckEveryEncoding(t *testing.T) {
	more := filepath.Join(keysDir, "more")
	// A filter holding only the compressed P-256 SPKI, as an
	// implementation that hashed one file as it stands would build it.
	stored, err := keys.SPKI(testkit.ReadFile(t, key("p256.spki-compressed.der")))
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
		want := keys.Fingerprint(canonical)
		if strings.HasSuffix(files[i], "spki-explicit.pem") {
			// openssl keeps explicit parameters, and so does the reported
			// fingerprint; the named curve's comes beside it.
			want = asGiven(t)["p256.spki-explicit.pem"]
			if v["fingerprint_named_curve"] != keys.Fingerprint(canonical) {
				t.Errorf("%s: no named curve's fingerprint: %s", files[i], line)
			}
		}
		if v["probably"] != true || v["fingerprint"] != want {
			t.Errorf("%s: %s", files[i], line)
		}
	}
	// The as-given fingerprint where the file has another encoding.
	r = runWith(t, nil, "check", p, key("p256.spki-compressed.pem"))
	if !strings.Contains(r.stdout, "probably\t"+keys.Fingerprint(canonical)) || !strings.Contains(r.stdout, "\tas given: "+keys.Fingerprint(stored)+"\n") {
		t.Errorf("text output %q", r.stdout)
	}
}

// asGiven reads testdata/keys/more/AS_GIVEN: the fingerprints openssl
// computes for keys with explicit EC parameters, as given.
func asGiven(t *testing.T) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(testkit.ReadFile(t, filepath.Join(keysDir, "more", "AS_GIVEN")))), "\n") {
		name, fp, _ := strings.Cut(line, " ")
		m[name] = fp
	}
	return m
}

// A certificate whose SPKI has explicit EC parameters is reported under the fingerprint openssl
// (x509 -pubkey) and pwnedkeys compute for its bytes, with the named
// curve's beside it; it is found under either.
func TestCheckExplicitParameterCertificate(t *testing.T) {
	cert := filepath.Join(keysDir, "more", "p256.cert-explicit.pem")
	given, err := keys.SPKI(testkit.ReadFile(t, cert))
	if err != nil {
		t.Fatal(err)
	}
	canonical, _ := keys.Canonical(given)
	want := asGiven(t)["p256.cert-explicit.pem"]
	if keys.Fingerprint(given) != want {
		t.Fatalf("the certificate's SPKI is not what openssl x509 -pubkey gives")
	}
	for name, stored := range map[string][]byte{"explicit": given, "named": canonical} {
		p := filepath.Join(t.TempDir(), "f.pkbf")
		f, _ := pkbf.New(4, 16)
		f.Add(stored)
		if err := f.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		r := runWith(t, nil, "check", p, cert)
		if line := "probably\t" + want + "\t" + cert + ": block 1 (line 1)\tnamed curve: " + keys.Fingerprint(canonical) + "\n"; r.stdout != line {
			t.Errorf("filter holding the %s form: %q, want %q", name, r.stdout, line)
		}
	}
}

// PKCS#12 files: the passphrase comes from a file or the environment.
func TestCheckPKCS12Passphrase(t *testing.T) {
	more := filepath.Join(keysDir, "more")
	p12 := filepath.Join(more, "chain-password.p12")
	r := runWith(t, nil, "check", exampleFilter, p12)
	if r.code != exitTrouble || !strings.Contains(r.stderr, "pkbf: error: ") || !strings.Contains(r.stderr, "no passphrase was given (give the passphrase with --passphrase-file FILE or $PKBF_PASSPHRASE)") || !strings.Contains(r.stderr, "1 encrypted") {
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

// A binary-curve key in each form: a filter holding a sect233k1 key as the reference stores it
// finds its compressed and explicit forms, and a filter to which pkbf
// added the compressed form finds the key as the reference stores it.
func TestCheckBinaryCurveForms(t *testing.T) {
	dir := filepath.Join(keysDir, "binary")
	forms := []string{"sec1.pem", "sec1-explicit.pem", "spki-uncompressed.pem", "spki-compressed.pem", "spki-hybrid.pem", "spki-explicit-compressed.pem"}
	for _, added := range []string{"sec1.pem", "spki-compressed.pem", "spki-explicit-compressed.pem"} {
		p := filepath.Join(t.TempDir(), "f.pkbf")
		if r := runWith(t, nil, "create", "-n", "100", "-p", "1e-9", p); r.code != exitOK {
			t.Fatalf("create: %+v", r)
		}
		if r := runWith(t, nil, "add", p, filepath.Join(dir, "sect233k1."+added)); r.code != exitOK {
			t.Fatalf("add %s: %+v", added, r)
		}
		for _, form := range forms {
			r := runWith(t, nil, "check", p, filepath.Join(dir, "sect233k1."+form))
			if r.code != exitFound || !strings.HasPrefix(r.stdout, "probably\t") {
				t.Errorf("filter from %s, check %s: %+v", added, form, r)
			}
		}
	}
}
