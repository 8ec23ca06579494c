package pkbflint

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	zx509 "github.com/zmap/zcrypto/x509"
	"github.com/zmap/zlint/v3"
	"github.com/zmap/zlint/v3/lint"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/weakkeys"
)

// weakVectors holds the weak-key vectors, with a README giving each
// file's verdict, beside the project.
const weakVectors = "../../shared/vectors/weak"

func weakVectorsDir(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(weakVectors, "README.md")); err != nil {
		t.Skipf("the weak-key vectors are not at %s (they live beside the project, in shared/): %v", weakVectors, err)
	}
	return weakVectors
}

// brNames are the names of the BR lints.
func brNames() []string {
	var names []string
	for _, l := range brLints {
		names = append(names, l.name)
	}
	return names
}

// brVector is one row of the vectors' README: a file and its verdict.
type brVector struct{ file, verdict string }

func readWeakVectors(t *testing.T, dir string) []brVector {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []brVector
	s := bufio.NewScanner(f)
	for s.Scan() {
		cells := strings.Split(s.Text(), "|")
		if len(cells) != 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		out = append(out, brVector{strings.Trim(strings.TrimSpace(cells[1]), "`"), strings.TrimSpace(cells[2])})
	}
	if len(out) < 50 {
		t.Fatalf("%d files in the vectors' README table", len(out))
	}
	return out
}

// vectorSPKIs reads every key of a vector file with package keys (an
// OpenPGP key's keys, a PKCS#7 bundle's certificates), as pkbf check
// does.
func vectorSPKIs(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	s := keys.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		k := s.Key()
		spki, err := k.SPKI()
		if err != nil {
			t.Fatalf("%s: %s: %v", path, k.Source(), err)
		}
		out = append(out, spki)
	}
	if s.Err() != nil || len(out) == 0 {
		t.Fatalf("%s: %d keys, %v", path, len(out), s.Err())
	}
	return out
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

// weakDebianFile writes a Debian weak-key file holding the Debian
// vectors' keys among random hashes (RSA-2048, RSA-4096, P-256), as
// pkbf weak build would from lists of them.
func weakDebianFile(t *testing.T, dir string) string {
	t.Helper()
	var b weakkeys.Builder
	files, _ := filepath.Glob(filepath.Join(dir, "debian", "*.pub.pem"))
	if len(files) == 0 {
		t.Fatal("no Debian vectors")
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if err := b.AddKey("debian-vectors", data); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	addRandom(t, &b, weakkeys.List{Name: "debian-vectors", Key: "RSA-2048", Scheme: weakkeys.SHA256Modulus})
	addRandom(t, &b, weakkeys.List{Name: "debian-vectors", Key: "RSA-4096", Scheme: weakkeys.SHA256Modulus})
	addRandom(t, &b, weakkeys.List{Name: "sha256_xcoord_P-256.csv", Key: "P-256", Scheme: weakkeys.SHA256X})
	path := filepath.Join(t.TempDir(), "debian-weak-keys.pkwk")
	if err := b.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
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

// brWant is what each BR lint must say of a key: its family's findings
// as the library gives them (an Error with their reasons), or a Pass.
type brWant map[string][]string

// wantFor is brWant for spki, from the library's findings.
func wantFor(t *testing.T, checker *weakkeys.Checker, spki []byte) brWant {
	t.Helper()
	res, err := checker.Check(spki)
	if err != nil {
		t.Fatal(err)
	}
	want := brWant{}
	for _, l := range brLints {
		for _, f := range res.Findings {
			if slices.Contains(l.rules, f.Rule) {
				want[l.name] = append(want[l.name], f.Reason)
			}
		}
	}
	return want
}

// verdictLint is the lint of each verdict of the vectors' README.
var verdictLint = map[string]string{"debian": brDebian.name, "roca": brROCA.name, "fermat": brFermat.name, "small-factor": brSmallFactor.name}

// checkVerdict checks the results against the README's verdict: the
// verdict's lint is an Error, and a clean control has no BR 6.1.1.3
// finding (nor small factor, which the README counts with them).
func checkVerdict(t *testing.T, where string, v brVector, got map[string]string) {
	t.Helper()
	if name, ok := verdictLint[v.verdict]; ok {
		if !strings.HasPrefix(got[name], "error") {
			t.Errorf("%s: verdict %s, but %s is %s", where, v.verdict, name, got[name])
		}
		return
	}
	if v.verdict != "clean" {
		t.Fatalf("%s: verdict %q", where, v.verdict)
	}
	for _, name := range []string{brROCA.name, brFermat.name, brSmallFactor.name} {
		if got[name] != "pass" {
			t.Errorf("%s: a clean control, but %s is %s", where, name, got[name])
		}
	}
	if strings.Contains(got[brDebian.name], "Debian weak key (CVE-2008-0166), on the list") {
		t.Errorf("%s: a clean control, but %s is %s", where, brDebian.name, got[brDebian.name])
	}
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

// wanted words a brWant as results does, the lints not yet effective at
// notBefore being NE.
func wanted(w brWant, notBefore time.Time) map[string]string {
	out := map[string]string{}
	for _, l := range brLints {
		switch {
		case notBefore.Before(l.effective):
			out[l.name] = lint.NE.String()
		case len(w[l.name]) > 0:
			out[l.name] = lint.Error.String() + ": " + strings.Join(w[l.name], "; ")
		default:
			out[l.name] = lint.Pass.String()
		}
	}
	return out
}

// brCase is a certificate to lint and what the BR lints must say of it.
type brCase struct {
	where     string
	der       []byte
	notBefore time.Time
	vector    brVector
	want      map[string]string
}

// brCases are the certificates among the vectors (linted as they are,
// the lints that were not yet in force at their dates NE), and one
// certificate and one precertificate the test CA issues for every key of
// every other vector but the bare moduli (.txt, which have no exponent:
// weakkeys' TestVectors checks them with CheckModulus). What each lint
// must say is the library's finding for the key.
func brCases(t *testing.T, dir string, checker *weakkeys.Checker) []brCase {
	t.Helper()
	ca := newTestCA(t)
	var cases []brCase
	for _, v := range readWeakVectors(t, dir) {
		path := filepath.Join(dir, v.file)
		if strings.HasSuffix(v.file, ".txt") {
			continue
		}
		for i, spki := range vectorSPKIs(t, path) {
			want := wantFor(t, checker, spki)
			for _, precert := range []bool{false, true} {
				where := fmt.Sprintf("%s key %d, issued (precertificate %v)", v.file, i+1, precert)
				cases = append(cases, brCase{where, ca.issue(t, spki, v.file, precert), time.Now(), v, wanted(want, time.Now())})
			}
		}
		if strings.Contains(v.file, "cert") {
			der := certDER(t, path)
			c, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			cases = append(cases, brCase{v.file + " as it is", der, c.NotBefore, v, wanted(wantFor(t, checker, c.RawSubjectPublicKeyInfo), c.NotBefore)})
		}
	}
	return cases
}

// vectorCases are brCases, with the Debian file the lints must be
// configured with to say what they say.
func vectorCases(t *testing.T) (debian string, cases []brCase) {
	t.Helper()
	dir := weakVectorsDir(t)
	debian = weakDebianFile(t, dir)
	d, err := weakkeys.OpenDebian(debian)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	checker, err := weakkeys.New(weakkeys.WithDebian(d))
	if err != nil {
		t.Fatal(err)
	}
	return debian, brCases(t, dir, checker)
}

// TestBRLintsVectors lints, through zlint's API, every certificate among
// the weak-key vectors and certificates of every other vector's keys:
// the verdict the README gives is found (and none of BR 6.1.1.3's in a
// clean control), and every BR lint says what the library finds in the
// key, reasons included.
func TestBRLintsVectors(t *testing.T) {
	debian, cases := vectorCases(t)
	errors := 0
	for _, c := range cases {
		got := results(lintBR(t, c.der, brConfig(debian)))
		for _, l := range brLints {
			if got[l.name] != c.want[l.name] {
				t.Errorf("%s: %s is %q, want %q", c.where, l.name, got[l.name], c.want[l.name])
			}
			if strings.HasPrefix(got[l.name], "error") {
				errors++
			}
		}
		if !c.notBefore.Before(sc073Date) { // the issued copy of an older one is checked
			checkVerdict(t, c.where, c.vector, got)
		}
	}
	t.Logf("%d certificates linted, %d errors", len(cases), errors)
	if len(cases) < 120 || errors < 60 {
		t.Fatalf("%d certificates, %d errors: the vectors were not all linted", len(cases), errors)
	}
}

// TestBRLintsZlintCommand lints the same certificates with zlint's own
// command built with the lints, configured by -config, PEM and DER files
// alike: each BR lint says what it says through the API. Without a
// configuration the Debian lint is fatal, and -exampleConfig shows every
// BR lint's settings.
func TestBRLintsZlintCommand(t *testing.T) {
	debian, cases := vectorCases(t)
	files := t.TempDir()
	cfg := filepath.Join(files, "zlint.toml")
	os.WriteFile(cfg, []byte(brConfig(debian)), 0o644)
	var paths []string
	for i, c := range cases {
		path := filepath.Join(files, fmt.Sprintf("%03d.der", i))
		data := c.der
		if i%2 == 0 {
			path = strings.TrimSuffix(path, ".der") + ".pem"
			data = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.der})
		}
		os.WriteFile(path, data, 0o644)
		paths = append(paths, path)
	}
	out := zlintOutput(t, append([]string{"-config", cfg}, paths...)...)
	if len(out) != len(cases) {
		t.Fatalf("zlint printed %d results for %d files", len(out), len(cases))
	}
	for i, c := range cases {
		for _, l := range brLints {
			if out[i][l.name] != c.want[l.name] {
				t.Errorf("zlint %s (%s): %s is %q, want %q", filepath.Base(paths[i]), c.where, l.name, out[i][l.name], c.want[l.name])
			}
		}
	}

	noConfig := zlintOutput(t, paths[0])
	if !strings.HasPrefix(noConfig[0][brDebian.name], "fatal: no Debian weak-key file configured") {
		t.Errorf("zlint without -config: %s is %q, want fatal", brDebian.name, noConfig[0][brDebian.name])
	}
	example, err := exec.Command(zlintCommand(t), "-exampleConfig").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[e_br_debian_weak_key]\nDebianFile = \"\"", "[e_br_fermat_factorable_key]\nRounds = 100", "[e_br_rsa_key_size]\nRSASizes = []", "[e_br_ec_key]\nCurves = []"} {
		if !strings.Contains(string(example), want) {
			t.Errorf("zlint -exampleConfig lacks %q", want)
		}
	}
}

// zlintOutput runs zlint's command, with the lint compiled in, on files
// with the BR lints alone, and returns each file's results as results
// words them.
func zlintOutput(t *testing.T, args ...string) []map[string]string {
	t.Helper()
	cmd := exec.Command(zlintCommand(t), append([]string{"-includeNames", strings.Join(brNames(), ",")}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("zlint: %v\n%s", err, out)
	}
	var all []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var res map[string]struct {
			Result  string `json:"result"`
			Details string `json:"details"`
		}
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			t.Fatalf("zlint printed %q: %v", line, err)
		}
		words := map[string]string{}
		for name, r := range res {
			words[name] = r.Result
			if r.Result == "error" || r.Result == "fatal" {
				words[name] += ": " + r.Details
			}
		}
		all = append(all, words)
	}
	return all
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

// zlintCounterparts are zlint's own lints that cover a BR lint's ground,
// by the BR lint: docs/zlint.md's table.
var zlintCounterparts = map[string][]string{
	brFermat.name:      {"e_rsa_fermat_factorization"},
	brSmallFactor.name: {"w_rsa_mod_factors_smaller_than_752", "w_rsa_mod_not_odd"},
	brExponent.name:    {"e_rsa_public_exponent_not_odd", "e_rsa_public_exponent_too_small", "w_rsa_public_exponent_not_in_range"},
	brKeySize.name:     {"e_rsa_mod_less_than_2048_bits", "e_mp_modulus_must_be_divisible_by_8"},
	brECKey.name:       {"e_ec_improper_curves"},
	brAlgorithm.name:   {"e_public_key_type_not_allowed"},
}

// TestBRAgainstZlintLints compares the BR lints with zlint's own lints
// that cover the same rules, on the vectors' certificates: they find the
// same keys (zlint's SHOULDs as warnings), but for the named difference:
// zlint's e_public_key_type_not_allowed passes an Ed25519 key, which BR
// 6.1.5 (since 2.0.0: RSA and ECDSA only) does not allow. (zcrypto
// refuses to parse a certificate whose RSA or EC key it cannot read, so
// zlint's lints see no such key.)
func TestBRAgainstZlintLints(t *testing.T) {
	dir := weakVectorsDir(t)
	checker, _ := weakkeys.New()
	var names []string
	for _, l := range brLints {
		names = append(names, l.name)
		names = append(names, zlintCounterparts[l.name]...)
	}
	reg, err := lint.GlobalRegistry().Filter(lint.FilterOptions{IncludeNames: names})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := lint.NewConfigFromString(brConfig(randomDebianFile(t)))
	reg.SetConfiguration(cfg)
	compared := map[string]int{}
	for _, c := range brCases(t, dir, checker) {
		zc, err := zx509.ParseCertificate(c.der)
		if err != nil {
			t.Fatal(err)
		}
		res := zlint.LintCertificateEx(zc, reg).Results
		for ours, theirs := range zlintCounterparts {
			if res[ours].Status == lint.NE {
				continue
			}
			found, dated := false, false
			for _, name := range theirs {
				found = found || res[name].Status == lint.Warn || res[name].Status == lint.Error
				dated = dated || res[name].Status == lint.NE
			}
			if dated {
				continue // a rule zlint dates later than pkbf
			}
			if ours == brAlgorithm.name && zc.PublicKeyAlgorithm == zx509.Ed25519 {
				if found || res[ours].Status != lint.Error {
					t.Errorf("%s: the named difference is gone: %s is %v, zlint's %v %v", c.where, ours, res[ours].Status, theirs, found)
				}
				compared["Ed25519"]++
				continue
			}
			if (res[ours].Status == lint.Error) != found {
				t.Errorf("%s: %s is %v, zlint's %v say %v", c.where, ours, res[ours].Status, theirs, found)
			}
			compared[ours]++
		}
	}
	for _, l := range brLints {
		if _, ok := zlintCounterparts[l.name]; ok && compared[l.name] < 100 {
			t.Errorf("%s compared on %d certificates", l.name, compared[l.name])
		}
	}
	if compared["Ed25519"] == 0 {
		t.Error("no Ed25519 key compared")
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
