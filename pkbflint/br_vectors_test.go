package pkbflint

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
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
