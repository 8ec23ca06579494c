package pkbflint

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	zx509 "github.com/zmap/zcrypto/x509"
	"github.com/zmap/zlint/v3"
	"github.com/zmap/zlint/v3/lint"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/pkbf/pkbf/weakkeys"
)

// brNames are the names of the BR lints.
func brNames() []string {
	var names []string
	for _, l := range brLints {
		names = append(names, l.name)
	}
	return names
}

// testCA is a CA that signs certificates for any SPKI, as given.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pkbflint BR test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert, key}
}

// issue makes a server certificate (or a precertificate, with the poison
// extension) for spki, byte for byte: Go makes it for a stand-in key, and
// the SPKI is put in its place before the CA signs the TBSCertificate.
func (ca *testCA) issue(t testing.TB, spki []byte, name string, precert bool) []byte {
	t.Helper()
	stand, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		DNSNames:  []string{"br-test.example"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if precert {
		tmpl.ExtraExtensions = []pkix.Extension{{Id: poisonOID, Critical: true, Value: asn1.NullBytes}}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, stand.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	// Certificate: SEQUENCE { tbs, signatureAlgorithm, signature }; the
	// SPKI is the TBSCertificate's seventh field.
	in := cryptobyte.String(der)
	var cert, tbs, sigAlg cryptobyte.String
	if !in.ReadASN1(&cert, cbasn1.SEQUENCE) || !cert.ReadASN1(&tbs, cbasn1.SEQUENCE) || !cert.ReadASN1Element(&sigAlg, cbasn1.SEQUENCE) {
		t.Fatal("cannot take Go's certificate apart")
	}
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		for i := 0; !tbs.Empty(); i++ {
			var field cryptobyte.String
			var tag cbasn1.Tag
			if !tbs.ReadAnyASN1Element(&field, &tag) {
				t.Fatal("cannot take Go's TBSCertificate apart")
			}
			if i == 6 {
				field = spki
			}
			b.AddBytes(field)
		}
	})
	newTBS := b.BytesOrPanic()
	digest := sha256.Sum256(newTBS)
	sig, err := ecdsa.SignASN1(rand.Reader, ca.key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	var c cryptobyte.Builder
	c.AddASN1(cbasn1.SEQUENCE, func(c *cryptobyte.Builder) {
		c.AddBytes(newTBS)
		c.AddBytes(sigAlg)
		c.AddASN1BitString(sig)
	})
	return c.BytesOrPanic()
}

// randomDebianFile writes a Debian weak-key file of random hashes, for
// RSA-2048 and P-256.
func randomDebianFile(t *testing.T) string {
	t.Helper()
	var b weakkeys.Builder
	addRandom(t, &b, weakkeys.List{Name: "random", Key: "RSA-2048", Scheme: weakkeys.SHA256Modulus})
	addRandom(t, &b, weakkeys.List{Name: "random", Key: "P-256", Scheme: weakkeys.SHA256X})
	path := filepath.Join(t.TempDir(), "random.pkwk")
	if err := b.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// addRandom adds 2000 random SHA-256 hashes to a list.
func addRandom(t *testing.T, b *weakkeys.Builder, l weakkeys.List) {
	t.Helper()
	var text strings.Builder
	h := make([]byte, sha256.Size)
	for range 2000 {
		rand.Read(h)
		text.WriteString(hex.EncodeToString(h) + "\n")
	}
	if err := b.ReadList(l, strings.NewReader(text.String())); err != nil {
		t.Fatal(err)
	}
}

// brConfig is zlint's configuration of the BR lints: the Debian file,
// and any other lines.
func brConfig(debian string, extra ...string) string {
	return "[" + brDebian.name + "]\nDebianFile = " + strconvQuote(debian) + "\n" + strings.Join(extra, "\n") + "\n"
}

// lintBR runs the BR lints on a certificate through zlint's API.
func lintBR(t *testing.T, der []byte, toml string) map[string]*lint.LintResult {
	t.Helper()
	return lintNamed(t, der, toml, brNames()...)
}

// results words zlint's results for comparing: "pass", "NE", or "error:
// details".
func results(res map[string]*lint.LintResult) map[string]string {
	out := map[string]string{}
	for name, r := range res {
		out[name] = r.Status.String()
		if r.Status == lint.Error || r.Status == lint.Fatal {
			out[name] += ": " + r.Details
		}
	}
	return out
}

// brFor lints a certificate the test CA issues for spki.
func brFor(t *testing.T, ca *testCA, spki []byte, toml string) map[string]string {
	t.Helper()
	return results(lintBR(t, ca.issue(t, spki, "br-test", false), toml))
}

// rsaSPKI is the SPKI of an RSA key of modulus n and exponent e, as DER
// allows any (an even modulus, an exponent of 1).
func rsaSPKI(n *big.Int, e int64) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1ObjectIdentifier(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1})
			b.AddASN1NULL()
		})
		var key cryptobyte.Builder
		key.AddASN1(cbasn1.SEQUENCE, func(k *cryptobyte.Builder) {
			k.AddASN1BigInt(n)
			k.AddASN1Int64(e)
		})
		b.AddASN1BitString(key.BytesOrPanic())
	})
	return b.BytesOrPanic()
}

// What keeps a lint from checking is Fatal, and says why: no Debian file,
// one that cannot be opened or is not one, options out of their range
// (fewer rounds of Fermat's method than BR 6.1.1.3 requires); the other
// lints go on.
func TestBRLintsFatal(t *testing.T) {
	ca := newTestCA(t)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	spki, _ := x509.MarshalPKIXPublicKey(key.Public())
	dir := t.TempDir()
	notFile := filepath.Join(dir, "not-a-weak-key-file")
	os.WriteFile(notFile, []byte("sha256_modulus_2048.csv\n"), 0o644)
	for _, tc := range []struct {
		name, toml, lint, want string
	}{
		{"no configuration", "", brDebian.name, "no Debian weak-key file configured"},
		{"an empty path", brConfig(""), brDebian.name, "no Debian weak-key file configured"},
		{"a missing file", brConfig(filepath.Join(dir, "missing.pkwk")), brDebian.name, "missing.pkwk"},
		{"not a weak-key file", brConfig(notFile), brDebian.name, notFile + ": invalid Debian weak-key file"},
		{"a directory", brConfig(dir), brDebian.name, dir},
		{"99 rounds", "[e_br_fermat_factorable_key]\nRounds = 99\n", brFermat.name, "requires at least 100 rounds"},
		{"too many rounds", "[e_br_fermat_factorable_key]\nRounds = 1048577\n", brFermat.name, "1048577"},
		{"a size not a multiple of 8", "[e_br_rsa_key_size]\nRSASizes = [2048, 2049]\n", brKeySize.name, "2049"},
		{"a size below 2048", "[e_br_rsa_key_size]\nRSASizes = [1024]\n", brKeySize.name, "1024"},
		{"an unknown curve", "[e_br_ec_key]\nCurves = [\"P-256\", \"P-192\"]\n", brECKey.name, "P-192"},
		{"a malformed section", "[e_br_fermat_factorable_key]\nRounds = \"many\"\n", brFermat.name, "e_br_fermat_factorable_key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := brFor(t, ca, spki, tc.toml)
			if !strings.HasPrefix(got[tc.lint], "fatal: ") || !strings.Contains(got[tc.lint], tc.want) {
				t.Fatalf("%s is %q, want fatal naming %q", tc.lint, got[tc.lint], tc.want)
			}
			for _, l := range brLints {
				if l.name != tc.lint && l.name != brDebian.name && got[l.name] != "pass" {
					t.Errorf("%s is %q, want pass", l.name, got[l.name])
				}
			}
		})
	}
}

// The options are weakkeys' options: Fermat's rounds, the RSA sizes and
// the curves the CA allows.
func TestBRLintsOptions(t *testing.T) {
	dir := weakVectorsDir(t)
	ca := newTestCA(t)
	r101 := vectorSPKIs(t, filepath.Join(dir, "fermat", "fermat_r101_control.pub.pem"))[0]
	clean := vectorSPKIs(t, filepath.Join(dir, "misc", "clean_rsa2048_a.pub.pem"))[0]
	p256 := vectorSPKIs(t, filepath.Join(dir, "misc", "p256.pub.pem"))[0]
	for _, tc := range []struct {
		name, toml string
		spki       []byte
		lint, want string
	}{
		{"100 rounds by default", "", r101, brFermat.name, "pass"},
		{"101 rounds", "[e_br_fermat_factorable_key]\nRounds = 101\n", r101, brFermat.name, "error: RSA modulus is factored by Fermat's method in round 101"},
		{"any size by default", "", clean, brKeySize.name, "pass"},
		{"RSA-2048 allowed", "[e_br_rsa_key_size]\nRSASizes = [2048, 3072, 4096]\n", clean, brKeySize.name, "pass"},
		{"RSA-2048 not allowed", "[e_br_rsa_key_size]\nRSASizes = [3072, 4096]\n", clean, brKeySize.name, "error: RSA-2048 is not among the sizes this checker allows (3072, 4096)"},
		{"P-256 allowed", "[e_br_ec_key]\nCurves = [\"P-256\"]\n", p256, brECKey.name, "pass"},
		{"P-256 not allowed", "[e_br_ec_key]\nCurves = [\"P-384\", \"P-521\"]\n", p256, brECKey.name, "error: EC curve P-256 is not among the curves this checker allows (P-384, P-521)"},
	} {
		if got := brFor(t, ca, tc.spki, tc.toml)[tc.lint]; !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %s is %q, want %q", tc.name, tc.lint, got, tc.want)
		}
	}
}

// A key the checker cannot read is an Error in every BR lint (the
// certificate's key is none the BR allow): zcrypto refuses to parse a
// certificate with most such keys, so zlint never lints it, but the lints
// read the SPKI's bytes themselves and do not rely on it. An RSA modulus
// over the 16384 bits weakkeys examines is an Error in every lint of a
// check it did not make (but the Debian one: 6.1.1.3 exempts RSA over
// 8192 bits).
func TestBRLintsUnreadableKey(t *testing.T) {
	ca := newTestCA(t)
	var b cryptobyte.Builder // an RSA key whose BIT STRING holds no SEQUENCE
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1ObjectIdentifier(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1})
			b.AddASN1NULL()
		})
		b.AddASN1BitString([]byte("not an RSA key"))
	})
	cert := &zx509.Certificate{RawSubjectPublicKeyInfo: b.BytesOrPanic(), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	cfg, _ := lint.NewConfigFromString(brConfig(randomDebianFile(t)))
	for _, l := range brLints {
		res := lint.GlobalRegistry().CertificateLints().ByName(l.name).Execute(cert, cfg)
		if res.Status != lint.Error || !strings.HasPrefix(res.Details, "the subject public key cannot be read") {
			t.Errorf("an unreadable key: %s is %v %q, want an error", l.name, res.Status, res.Details)
		}
	}

	huge := new(big.Int).Lsh(big.NewInt(1), 16391)
	huge.Add(huge, big.NewInt(1)) // 16392 bits, odd
	got := brFor(t, ca, rsaSPKI(huge, 65537), brConfig(randomDebianFile(t)))
	for _, l := range brLints {
		want := "pass"
		switch {
		case l == &brKeySize:
			want = "error: RSA modulus of 16392 bits is over the 16384 bits"
		case l.checkedBeyond:
			want = "error: the RSA modulus of 16392 bits is over the 16384 bits pkbf examines: it was not checked for " + l.what
		}
		if !strings.HasPrefix(got[l.name], want) {
			t.Errorf("RSA-16392: %s is %q, want %q", l.name, got[l.name], want)
		}
	}
}

// A Debian file rebuilt and renamed over the one configured (as pkbf
// weak build does) is used from the next certificate on, while checks
// running on the old file finish on it: a key added to the lists goes
// from pass to error, and no check fails meanwhile.
func TestBRDebianFileReplaced(t *testing.T) {
	ca := newTestCA(t)
	weakKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	spki, _ := x509.MarshalPKIXPublicKey(weakKey.Public())
	weakPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki})
	der := ca.issue(t, spki, "br-test", false)
	path := filepath.Join(t.TempDir(), "debian-weak-keys.pkwk")
	build := func(withKey bool) {
		var b weakkeys.Builder
		addRandom(t, &b, weakkeys.List{Name: "random", Key: "P-256", Scheme: weakkeys.SHA256X})
		if withKey {
			if err := b.AddKey("rebuilt", weakPEM); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.WriteFile(path); err != nil {
			t.Fatal(err)
		}
	}
	build(false)
	toml := brConfig(path)
	if got := results(lintBR(t, der, toml))[brDebian.name]; got != "pass" {
		t.Fatalf("before: %q, want pass", got)
	}
	c, err := zx509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := lint.NewConfigFromString(toml)
	debianLint := lint.GlobalRegistry().CertificateLints().ByName(brDebian.name)
	done := make(chan string)
	for range 4 {
		go func() {
			bad := ""
			for range 200 {
				if r := debianLint.Execute(c, cfg); r.Status != lint.Pass && r.Status != lint.Error {
					bad = fmt.Sprintf("%v: %s", r.Status, r.Details)
				}
			}
			done <- bad
		}()
	}
	for i := range 6 {
		build(i%2 == 0)
	}
	for range 4 {
		if bad := <-done; bad != "" {
			t.Errorf("a check while the file was replaced: %s", bad)
		}
	}
	build(true)
	if got := results(lintBR(t, der, toml))[brDebian.name]; !strings.Contains(got, "error: Debian weak key (CVE-2008-0166), on the list rebuilt") {
		t.Fatalf("after: %q, want an error naming the list rebuilt", got)
	}
}

// BenchmarkBRLints times the eight BR lints together through zlint's API
// on one certificate, with a Debian file of a published list's size
// (294,912 entries) for the key's type, next to the lint that does the
// most work alone, e_br_debian_weak_key.
func BenchmarkBRLints(b *testing.B) {
	t := &testing.T{}
	ca := newTestCA(b)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var builder weakkeys.Builder
	for _, l := range []weakkeys.List{
		{Name: "sha256_modulus_2048.csv", Key: "RSA-2048", Scheme: weakkeys.SHA256Modulus},
		{Name: "sha256_xcoord_P-256.csv", Key: "P-256", Scheme: weakkeys.SHA256X},
	} {
		for range 294912 / 2000 {
			addRandom(t, &builder, l)
		}
	}
	path := filepath.Join(b.TempDir(), "debian.pkwk")
	if err := builder.WriteFile(path); err != nil {
		b.Fatal(err)
	}
	cfg, _ := lint.NewConfigFromString(brConfig(path))
	for _, key := range []struct {
		name string
		pub  any
	}{{"RSA2048", &rsaKey.PublicKey}, {"P256", &ecKey.PublicKey}} {
		spki, _ := x509.MarshalPKIXPublicKey(key.pub)
		c, err := zx509.ParseCertificate(ca.issue(b, spki, "bench", false))
		if err != nil {
			b.Fatal(err)
		}
		for _, names := range [][]string{brNames(), {brDebian.name}} {
			reg, err := lint.GlobalRegistry().Filter(lint.FilterOptions{IncludeNames: names})
			if err != nil {
				b.Fatal(err)
			}
			reg.SetConfiguration(cfg)
			b.Run(fmt.Sprintf("%s/%d", key.name, len(names)), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					zlint.LintCertificateEx(c, reg)
				}
			})
		}
	}
}

// TestBRLintsShareOneCheck: the eight lints share one weak-key check of a
// certificate's key: with a Debian file and the default options, or
// without one, linting a certificate makes one check, whatever the key;
// a lint configured otherwise (Fermat's rounds) makes its own.
func TestBRLintsShareOneCheck(t *testing.T) {
	ca := newTestCA(t)
	var b weakkeys.Builder
	addRandom(t, &b, weakkeys.List{Name: "random", Key: "RSA-2048", Scheme: weakkeys.SHA256Modulus})
	path := filepath.Join(t.TempDir(), "debian.pkwk")
	if err := b.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	newRSA := func() any { k, _ := rsa.GenerateKey(rand.Reader, 2048); return &k.PublicKey }
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, tc := range []struct {
		name  string
		pub   any
		toml  string
		want  int64
		rules string // what the Debian lint says, so that it ran
	}{
		{"RSA, a Debian file", newRSA(), brConfig(path), 1, "pass"},
		{"P-256, a Debian file", &ecKey.PublicKey, brConfig(path), 1, "no Debian weak-key list of this checker covers P-256 keys"},
		{"RSA, no Debian file", newRSA(), "", 1, "no Debian weak-key file configured"},
		{"RSA, 200 rounds", newRSA(), brConfig(path, "["+brFermat.name+"]\nRounds = 200"), 2, "pass"},
	} {
		spki, _ := x509.MarshalPKIXPublicKey(tc.pub)
		der := ca.issue(t, spki, "share", false)
		before := checks.made.Load()
		got := results(lintBR(t, der, tc.toml))
		if n := checks.made.Load() - before; n != tc.want {
			t.Errorf("%s: %d checks for the eight lints, want %d", tc.name, n, tc.want)
		}
		if len(got) != 8 || !strings.Contains(got[brDebian.name], tc.rules) {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}
