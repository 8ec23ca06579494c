package keys

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

const keysDir = "../testdata/keys"

// manifest reads testdata/keys/MANIFEST: file name and the SHA-256 of its
// SPKI as computed by openssl (see gen.sh), or "encrypted".
func manifest(t testing.TB) map[string]string {
	t.Helper()
	m := map[string]string{}
	for line := range strings.Lines(string(testkit.ReadFile(t, filepath.Join(keysDir, "MANIFEST")))) {
		name, fp, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			t.Fatalf("bad MANIFEST line %q", line)
		}
		m[name] = fp
	}
	if len(m) < 100 {
		t.Fatalf("MANIFEST has %d entries, want over 100", len(m))
	}
	return m
}

func TestSPKIManifest(t *testing.T) {
	for name, want := range manifest(t) {
		t.Run(name, func(t *testing.T) {
			data := testkit.ReadFile(t, filepath.Join(keysDir, name))
			spki, err := SPKI(data)
			if want == "encrypted" {
				if !errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), "encrypted") {
					t.Fatalf("SPKI = %x, %v; want an error saying the key is encrypted", spki, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("SPKI: %v", err)
			}
			if got := Fingerprint(spki); got != want {
				t.Fatalf("fingerprint = %s, openssl says %s", got, want)
			}
		})
	}
}

// Every form covered: each key type has each form the brief lists.
func TestSPKIManifestCoverage(t *testing.T) {
	m := manifest(t)
	need := map[string][]string{
		"rsa2048": {"spki.pem", "spki.der", "rsapub.pem", "rsapub.der", "pkcs1.pem", "pkcs1.der", "pkcs8.pem", "pkcs8.der", "cert.pem", "cert.der", "csr.pem", "csr.der", "openssh", "openssh-encrypted.openssh", "pub", "pkcs8-encrypted.pem", "pkcs8-encrypted.der", "pkcs1-encrypted.pem"},
		"rsa512":  {"spki.der", "pkcs1.pem", "pkcs8.der", "cert.der", "csr.pem", "rsapub.der"},
		"p256":    {"spki.pem", "spki-compressed.pem", "spki-compressed.der", "sec1.pem", "sec1.der", "ecparams-sec1.pem", "pkcs8.pem", "pkcs8.der", "cert.pem", "cert.der", "csr.pem", "csr.der", "openssh", "openssh-encrypted.openssh", "pub", "sec1-encrypted.pem"},
		"p384":    {"spki.der", "spki-compressed.der", "sec1.der", "ecparams-sec1.pem", "pkcs8.der", "cert.der", "openssh-encrypted.openssh", "pub"},
		"p521":    {"spki.der", "spki-compressed.der", "sec1.der", "ecparams-sec1.pem", "pkcs8.der", "cert.der", "openssh-encrypted.openssh", "pub"},
		"ed25519": {"spki.pem", "spki.der", "pkcs8.pem", "pkcs8.der", "cert.pem", "cert.der", "csr.pem", "csr.der", "openssh", "openssh-encrypted.openssh", "pub"},
	}
	for key, forms := range need {
		for _, form := range forms {
			if _, ok := m[key+"."+form]; !ok {
				t.Errorf("MANIFEST lacks %s.%s", key, form)
			}
		}
	}
	for _, sk := range []string{"p256-sk.pub", "ed25519-sk.pub"} {
		if m[sk] == "" || m[sk] != m[strings.TrimSuffix(sk, "-sk.pub")+".spki.der"] {
			t.Errorf("MANIFEST: %s should have the fingerprint of its inner key", sk)
		}
	}
}

// The SPKIs SPKI builds are byte for byte those Go's x509 encoder writes.
func TestSPKIMatchesX509(t *testing.T) {
	for _, name := range []string{"rsa2048.pkcs1.der", "rsa2048.rsapub.der", "rsa2048.pub", "p256.sec1.der", "p384.pub", "p521.pkcs8.der", "ed25519.pkcs8.der", "ed25519.pub", "rsa1024.openssh"} {
		spki, err := SPKI(testkit.ReadFile(t, filepath.Join(keysDir, name)))
		if err != nil {
			t.Fatalf("SPKI(%s): %v", name, err)
		}
		pub, err := x509.ParsePKIXPublicKey(spki)
		if err != nil {
			t.Fatalf("x509.ParsePKIXPublicKey(SPKI of %s): %v", name, err)
		}
		again, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil || !bytes.Equal(again, spki) {
			t.Errorf("%s: SPKI = %x\nx509 re-encodes it as %x", name, spki, again)
		}
	}
}

func TestSPKIReturnsInputSPKI(t *testing.T) {
	der := testkit.ReadFile(t, filepath.Join(keysDir, "p384.spki-compressed.der"))
	spki, err := SPKI(der)
	if err != nil || !bytes.Equal(spki, der) {
		t.Fatalf("SPKI(compressed SPKI DER) = %x, %v; want the input unchanged", spki, err)
	}
	if _, err := x509.ParsePKIXPublicKey(der); err == nil {
		t.Log("note: x509 now accepts compressed points")
	}
}

func TestEncodings(t *testing.T) {
	for line := range strings.Lines(string(testkit.ReadFile(t, filepath.Join(keysDir, "COMPRESSED")))) {
		f := strings.Fields(line)
		name, fpU, fpC := f[0], f[1], f[2]
		for _, form := range []string{"spki.der", "spki-compressed.der", "sec1.pem"} {
			spki, err := SPKI(testkit.ReadFile(t, filepath.Join(keysDir, name+"."+form)))
			if err != nil {
				t.Fatal(err)
			}
			encs, err := Encodings(spki)
			if err != nil {
				t.Fatalf("Encodings(%s.%s): %v", name, form, err)
			}
			if len(encs) != 2 || Fingerprint(encs[0]) != fpU || Fingerprint(encs[1]) != fpC {
				t.Errorf("Encodings(%s.%s) fingerprints = %v, want [%s %s]", name, form, fingerprints(encs), fpU, fpC)
			}
		}
	}
	// Other keys have one encoding: themselves.
	for _, name := range []string{"rsa2048.spki.der", "ed25519.spki.der"} {
		spki := testkit.ReadFile(t, filepath.Join(keysDir, name))
		encs, err := Encodings(spki)
		if err != nil || len(encs) != 1 || !bytes.Equal(encs[0], spki) {
			t.Errorf("Encodings(%s) = %d encodings, %v; want the SPKI alone", name, len(encs), err)
		}
	}
	// A point off the curve is refused, in both forms.
	spki := bytes.Clone(testkit.ReadFile(t, filepath.Join(keysDir, "p256.spki.der")))
	spki[len(spki)-1] ^= 1
	if _, err := Encodings(spki); !errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), "not on the curve") {
		t.Errorf("Encodings(point off the curve) error = %v", err)
	}
	spki = bytes.Clone(testkit.ReadFile(t, filepath.Join(keysDir, "p256.spki-compressed.der")))
	for i := 0; ; i++ { // find an x with no point on the curve
		spki[len(spki)-1] = byte(i)
		if _, err := Encodings(spki); err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Encodings(compressed point off the curve) error = %v", err)
			}
			break
		}
	}
}

func fingerprints(spkis [][]byte) []string {
	var out []string
	for _, s := range spkis {
		out = append(out, Fingerprint(s))
	}
	return out
}

func TestBadKeys(t *testing.T) {
	rsaDER := testkit.ReadFile(t, filepath.Join(keysDir, "rsa2048.spki.der"))
	certDER := testkit.ReadFile(t, filepath.Join(keysDir, "p256.cert.der"))
	pub := strings.TrimSpace(string(testkit.ReadFile(t, filepath.Join(keysDir, "ed25519.pub"))))
	p256pub := strings.Fields(string(testkit.ReadFile(t, filepath.Join(keysDir, "p256.pub"))))
	sshBlob, _ := base64.StdEncoding.DecodeString(p256pub[1])
	pemOf := func(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "empty input"},
		{"white space", []byte(" \n\t"), "empty input"},
		{"junk text", []byte("hello world"), "not a key"},
		{"truncated PEM", testkit.ReadFile(t, filepath.Join(keysDir, "rsa2048.cert.pem"))[:300], "incomplete or malformed"},
		{"PEM bad base64", []byte("-----BEGIN PUBLIC KEY-----\n@@@@\n-----END PUBLIC KEY-----\n"), "incomplete or malformed"},
		{"unknown PEM type", pemOf("FOO BAR", rsaDER), `"FOO BAR" is not a key`},
		{"CRL", pemOf("X509 CRL", rsaDER), "revocation list: it holds no public key"},
		{"two keys", append(pemOf("PUBLIC KEY", rsaDER), pemOf("PUBLIC KEY", rsaDER)...), "more than one key"},
		{"only EC PARAMETERS", pemOf("EC PARAMETERS", []byte{6, 8, 42, 134, 72, 206, 61, 3, 1, 7}), "no key"},
		{"DSA", pemOf("DSA PRIVATE KEY", []byte{0x30, 0}), "DSA private key is not a SEQUENCE"},
		{"DER truncated", rsaDER[:100], "not a complete ASN.1 SEQUENCE"},
		{"DER trailing", append(bytes.Clone(rsaDER), 0), "1 bytes after"},
		{"DER empty SEQUENCE", []byte{0x30, 0}, "fewer than two well-formed fields"},
		{"SPKI as wrong PEM type", pemOf("CERTIFICATE", rsaDER), "certificate is not a complete signed"},
		{"certificate cut", pemOf("CERTIFICATE", certDER[:len(certDER)-5]), "certificate is not"},
		{"DER signed structure, no signature", []byte{0x30, 6, 0x30, 2, 5, 0, 0x30, 0}, "signed structure does not end"},
		{"DER signed structure, bad body", []byte{0x30, 9, 0x30, 2, 5, 0, 0x30, 0, 3, 1, 0}, "neither a certificate nor"},
		{"SPKI RSA key not a SEQUENCE", spkiRSAKey([]byte{2, 1, 5}), "not a SEQUENCE of modulus and exponent"},
		{"SPKI RSA key three INTEGERs", spkiRSAKey([]byte{0x30, 9, 2, 1, 5, 2, 1, 3, 2, 1, 3}), "not a SEQUENCE of modulus and exponent"},
		{"RSA modulus negative", pemOf("RSA PUBLIC KEY", []byte{0x30, 6, 2, 1, 0x80, 2, 1, 3}), "modulus is negative"},
		{"RSA modulus zero", pemOf("RSA PUBLIC KEY", []byte{0x30, 6, 2, 1, 0, 2, 1, 3}), "modulus is zero"},
		{"RSA modulus not minimal", pemOf("RSA PUBLIC KEY", []byte{0x30, 7, 2, 2, 0, 1, 2, 1, 3}), "not minimally encoded"},
		{"RSA extra field", pemOf("RSA PUBLIC KEY", []byte{0x30, 9, 2, 1, 5, 2, 1, 3, 2, 1, 3}), "fields after the exponent"},
		{"SPKI EC point wrong size", spkiWithKey(t, "p256.spki.der", 64), "P-256 point is 64 bytes"},
		{"SPKI Ed25519 wrong size", spkiWithKey(t, "ed25519.spki.der", 31), "Ed25519 public key is 248 bits"},
		{"ssh unknown type", []byte("ssh-foo AAAAB3NzaC1mb28AAAAEZGF0YQ== c"), `OpenSSH key type "ssh-foo" is not supported`},
		{"ssh bad base64", []byte("ssh-ed25519 AAAA!!!! c"), "not valid base64"},
		{"ssh no blob: text", []byte("ssh-ed25519"), "not a key, certificate"},
		{"prose", []byte("ssh-rsa keys are old\nand so on\n"), "not a key, certificate"},
		{"ssh type mismatch", []byte("ssh-rsa " + strings.Fields(pub)[1]), `says ssh-rsa but its key is "ssh-ed25519"`},
		{"ssh truncated blob", []byte("ecdsa-sha2-nistp256 " + base64.StdEncoding.EncodeToString(sshBlob[:50])), "truncated"},
		{"ssh trailing blob", []byte("ecdsa-sha2-nistp256 " + base64.StdEncoding.EncodeToString(append(bytes.Clone(sshBlob), 0))), "1 bytes after its fields"},
		{"ssh DSA", []byte("ssh-dss AAAAB3NzaC1kc3MAAAAA"), "DSA"},
		{"ssh two lines", []byte(pub + "\n" + pub + "\n"), "more than one OpenSSH key line"},
		{"openssh private truncated", []byte("openssh-key-v1\x00\x00\x00"), "header is truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spki, err := SPKI(tt.in)
			if spki != nil || !errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("SPKI = %x, %v; want ErrInvalidKey containing %q", spki, err, tt.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "pkbf: ") {
				t.Errorf("error %q lacks the pkbf: prefix", err)
			}
		})
	}
}

// spkiRSAKey returns an RSA SPKI whose BIT STRING holds key.
func spkiRSAKey(key []byte) []byte {
	return buildSPKIRaw(oidRSA, derNull, key)
}

// spkiWithKey returns the SPKI in file with its public key replaced by n
// bytes of 4s.
func spkiWithKey(t *testing.T, file string, n int) []byte {
	info, err := parseSPKI(testkit.ReadFile(t, filepath.Join(keysDir, file)))
	if err != nil {
		t.Fatal(err)
	}
	key := bytes.Repeat([]byte{4}, n)
	if c := info.curve; c != nil {
		return ecSPKI(c, key)
	}
	return ed25519SPKI(key)
}

// Fingerprints as sha256sum prints them (sha256sum </dev/null, printf abc
// | sha256sum), appended and as a string.
func TestAppendFingerprint(t *testing.T) {
	for in, want := range map[string]string{
		"":    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"abc": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	} {
		if got := string(AppendFingerprint([]byte("x"), []byte(in))); got != "x"+want || Fingerprint([]byte(in)) != want {
			t.Errorf("AppendFingerprint(%q) = %s, Fingerprint %s; want %s", in, got, Fingerprint([]byte(in)), want)
		}
	}
}
