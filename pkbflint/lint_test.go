package pkbflint

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	zx509 "github.com/zmap/zcrypto/x509"
	"github.com/zmap/zlint/v3"
	"github.com/zmap/zlint/v3/lint"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
)

// testCert is a certificate made for the tests, and whether the test
// filter holds its key.
type testCert struct {
	name     string
	der      []byte
	inFilter bool
}

// poisonOID marks a precertificate (RFC 6962, section 3.1).
var poisonOID = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11129, 2, 4, 3}

// makeCerts issues leaf certificates from a test CA, for keys of every
// kind, half of them put in a filter written to the returned path: an
// RSA key, an Ed25519 key, a P-256 key the filter holds in compressed
// form only (as the publisher's filters may), and precertificates.
func makeCerts(t *testing.T) (filter string, certs []testCert) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "pkbflint test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)

	w, err := pkbf.New(5, 16)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(name string, pub crypto.PublicKey, in, precert bool, storeAs func(spki []byte) []byte) {
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(len(certs) + 2)),
			Subject:      pkix.Name{CommonName: name + ".example"},
			DNSNames:     []string{name + ".example"},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		if precert {
			tmpl.ExtraExtensions = []pkix.Extension{{Id: poisonOID, Critical: true, Value: asn1.NullBytes}}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
		if err != nil {
			t.Fatal(err)
		}
		if in {
			spki, _ := x509.MarshalPKIXPublicKey(pub)
			if storeAs != nil {
				spki = storeAs(spki)
			}
			if _, err := w.Add(spki); err != nil {
				t.Fatal(err)
			}
		}
		certs = append(certs, testCert{name, der, in})
	}
	compressed := func(spki []byte) []byte {
		encs, err := keys.Encodings(spki)
		if err != nil || len(encs) < 2 || bytes.Equal(encs[1], spki) {
			t.Fatalf("no compressed form of %x: %v", spki, err)
		}
		return encs[1]
	}
	for _, in := range []bool{true, false} {
		suffix := map[bool]string{true: "-in", false: "-out"}[in]
		rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
		issue("rsa2048"+suffix, rsaKey.Public(), in, false, nil)
		edPub, _, _ := ed25519.GenerateKey(rand.Reader)
		issue("ed25519"+suffix, edPub, in, false, nil)
		ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		issue("p256"+suffix, ecKey.Public(), in, false, compressed)
		ecKey, _ = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		issue("precert-p384"+suffix, ecKey.Public(), in, true, nil)
		rsaKey, _ = rsa.GenerateKey(rand.Reader, 2048)
		issue("precert-rsa2048"+suffix, rsaKey.Public(), in, true, nil)
	}
	filter = filepath.Join(t.TempDir(), "compromised.pkbf")
	if err := w.WriteFile(filter); err != nil {
		t.Fatal(err)
	}
	return filter, certs
}

// config is zlint's configuration naming the filter.
func config(filter string, extra ...string) string {
	return "[" + Name + "]\nFilter = " + strconvQuote(filter) + "\n" + strings.Join(extra, "\n") + "\n"
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s) // a TOML basic string takes JSON's escapes
	return string(b)
}

// lintDER runs the lint alone through zlint's API, configured with the
// TOML given, as a CA's Go pipeline would.
func lintDER(t *testing.T, der []byte, toml string) *lint.LintResult {
	t.Helper()
	return lintNamed(t, der, toml, Name)[Name]
}

// lintNamed runs the lints named through zlint's API, configured with
// the TOML given, and returns their results.
func lintNamed(t *testing.T, der []byte, toml string, names ...string) map[string]*lint.LintResult {
	t.Helper()
	c, err := zx509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("zcrypto cannot parse the certificate: %v", err)
	}
	reg, err := lint.GlobalRegistry().Filter(lint.FilterOptions{IncludeNames: names})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := lint.NewConfigFromString(toml)
	if err != nil {
		t.Fatal(err)
	}
	reg.SetConfiguration(cfg)
	res := zlint.LintCertificateEx(c, reg).Results
	for _, name := range names {
		if res[name] == nil {
			t.Fatalf("zlint ran no %s", name)
		}
	}
	return res
}

func TestLintThroughZlintAPI(t *testing.T) {
	filter, certs := makeCerts(t)
	for _, c := range certs {
		res := lintDER(t, c.der, config(filter))
		want := map[bool]lint.LintStatus{true: lint.Error, false: lint.Pass}[c.inFilter]
		if res.Status != want {
			t.Errorf("%s: %v (%s), want %v", c.name, res.Status, res.Details, want)
		}
		if c.inFilter {
			spki := mustSPKI(t, c.der)
			fp := keys.Fingerprint(mustCanonical(t, spki))
			if !strings.Contains(res.Details, fp) || !strings.Contains(res.Details, filter) {
				t.Errorf("%s: details %q do not name the filter and the fingerprint %s", c.name, res.Details, fp)
			}
		}
	}
}

func mustSPKI(t *testing.T, der []byte) []byte {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c.RawSubjectPublicKeyInfo
}

func mustCanonical(t *testing.T, spki []byte) []byte {
	t.Helper()
	canonical, err := keys.Canonical(spki)
	if err != nil {
		t.Fatal(err)
	}
	return canonical
}

// Without a filter, or with one that cannot be read, the lint is Fatal
// and says why: a pipeline that stops on Fatal never passes a key
// unchecked.
func TestLintFatalWithoutFilter(t *testing.T) {
	_, certs := makeCerts(t)
	der := certs[0].der
	dir := t.TempDir()
	notFilter := filepath.Join(dir, "not-a-filter")
	os.WriteFile(notFilter, []byte("this is not a filter"), 0o644)
	for _, tc := range []struct {
		name, toml, want string
	}{
		{"no configuration", "", "no filter configured"},
		{"an empty path", config(""), "no filter configured"},
		{"a missing file", config(filepath.Join(dir, "missing.pkbf")), "missing.pkbf"},
		{"not a filter", config(notFilter), "not-a-filter"},
		{"a directory", config(dir), dir},
	} {
		res := lintDER(t, der, tc.toml)
		if res.Status != lint.Fatal || !strings.Contains(res.Details, tc.want) {
			t.Errorf("%s: %v %q, want Fatal naming %q", tc.name, res.Status, res.Details, tc.want)
		}
	}
}

// With confirm, a key the filter holds is asked about: the API's 404
// (the filter's false positive) passes, its failure stays an Error, and
// only keys the filter holds are asked about. An Ed25519 key is never
// asked: pwnedkeys has no attestation it could verify for one, so it
// stays an Error.
func TestLintConfirm(t *testing.T) {
	filter, certs := makeCerts(t)
	var mu sync.Mutex
	asked := map[string]bool{}
	status := http.StatusNotFound
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked[strings.TrimPrefix(r.URL.Path, "/")] = true
		code := status
		mu.Unlock()
		w.WriteHeader(code)
	}))
	defer api.Close()
	toml := config(filter, "confirm = true", "api = "+strconvQuote(api.URL))
	for _, code := range []int{http.StatusNotFound, http.StatusForbidden} {
		mu.Lock()
		status = code
		clear(asked)
		mu.Unlock()
		for _, c := range certs {
			res := lintDER(t, c.der, toml)
			confirmable := c.inFilter && !strings.HasPrefix(c.name, "ed25519")
			want := lint.Pass
			if c.inFilter && (code != http.StatusNotFound || !confirmable) {
				want = lint.Error
			}
			if res.Status != want {
				t.Errorf("API answering %d: %s: %v (%s), want %v", code, c.name, res.Status, res.Details, want)
			}
			fp := keys.Fingerprint(mustCanonical(t, mustSPKI(t, c.der)))
			mu.Lock()
			if asked[fp] != confirmable {
				t.Errorf("API answering %d: %s: asked about %s: %v, want %v", code, c.name, fp, asked[fp], confirmable)
			}
			mu.Unlock()
		}
	}
}

// The lint's result on every certificate under testdata, and on the
// publisher's example certificates against its example filter, is what
// pkbf check answers about the same file.
func TestLintAgreesWithPkbfCheck(t *testing.T) {
	bin := t.TempDir()
	pkbfCmd := filepath.Join(bin, "pkbf")
	build := exec.Command("go", "build", "-o", pkbfCmd, "./cmd/pkbf")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building pkbf: %v\n%s", err, out)
	}
	files, _ := filepath.Glob("../testdata/keys/*.cert.*")
	sort.Strings(files)
	if len(files) < 10 {
		t.Fatalf("only %d certificates under ../testdata/keys", len(files))
	}
	// A filter holding the keys of every other certificate.
	w, _ := pkbf.New(4, 14)
	for i, f := range files {
		if i%4 < 2 {
			if _, err := keycheck.AddKey(w, readFile(t, f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	filter := filepath.Join(t.TempDir(), "half.pkbf")
	w.WriteFile(filter)
	agree(t, pkbfCmd, filter, files)

	vectors, _ := filepath.Glob("../../shared/vectors/pwnedkeys/*_cert.*")
	if len(vectors) == 0 {
		t.Skip("../shared/vectors is absent (a clone outside CI): the publisher's certificates were not checked")
	}
	agree(t, pkbfCmd, "../../shared/vectors/pwnedkeys/12_18_filter_example.pkbf", append(vectors, files...))
}

func agree(t *testing.T, pkbfCmd, filter string, files []string) {
	t.Helper()
	probably := 0
	for _, file := range files {
		out, err := exec.Command(pkbfCmd, "check", "--json", filter, file).Output()
		if code := exitCode(err); code != 0 && code != 1 {
			t.Fatalf("pkbf check %s: %v", file, err)
		}
		var v struct{ Probably *bool }
		if err := json.Unmarshal(bytes.TrimSpace(out), &v); err != nil || v.Probably == nil {
			t.Fatalf("pkbf check --json %s: %q: %v", file, out, err)
		}
		res := lintDER(t, certDER(t, file), config(filter))
		if want := map[bool]lint.LintStatus{true: lint.Error, false: lint.Pass}[*v.Probably]; res.Status != want {
			t.Errorf("%s: lint %v (%s); pkbf check says probably %v", file, res.Status, res.Details, *v.Probably)
		}
		if *v.Probably {
			probably++
		}
	}
	if probably == 0 || probably == len(files) {
		t.Errorf("%d of %d certificates probably in %s: the comparison proves nothing", probably, len(files), filter)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(*exec.ExitError); ok {
		return e.ExitCode()
	}
	return -1
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// certDER is a certificate file's DER, PEM or not.
func certDER(t *testing.T, path string) []byte {
	t.Helper()
	b := readFile(t, path)
	if block, _ := pem.Decode(b); block != nil {
		return block.Bytes
	}
	return b
}

// BenchmarkLint times the lint alone through zlint's API on one
// certificate, next to zlint running no lint at all on it (its own cost
// a certificate: the configuration's TOML decoded for each lint, the
// result set).
func BenchmarkLint(b *testing.B) {
	t := &testing.T{}
	filter, certs := makeCerts(t)
	c, err := zx509.ParseCertificate(certs[0].der)
	if err != nil {
		b.Fatal(err)
	}
	for _, names := range [][]string{{Name}, {"e_sub_cert_aia_missing"}} {
		reg, err := lint.GlobalRegistry().Filter(lint.FilterOptions{IncludeNames: names})
		if err != nil {
			b.Fatal(err)
		}
		cfg, _ := lint.NewConfigFromString(config(filter))
		reg.SetConfiguration(cfg)
		b.Run(names[0], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				zlint.LintCertificateEx(c, reg)
			}
		})
	}
}
