package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// weakVectorsDir holds the weak-key vectors (real Debian and ROCA keys,
// generated Fermat and small-factor keys, controls), with a README whose
// table gives each file's verdict: the oracle of these tests. They live
// beside the project, in shared/.
const weakVectorsDir = "../../../shared/vectors/weak"

// weakVector is one row of the README's table.
type weakVector struct{ file, verdict, facts string }

// weakVectors returns the README's rows, or skips the test when the
// vectors are absent.
func weakVectors(t *testing.T) []weakVector {
	f, err := os.Open(filepath.Join(weakVectorsDir, "README.md"))
	if err != nil {
		t.Skipf("weak-key vectors not found at %s (they live beside the project, in shared/): %v", weakVectorsDir, err)
	}
	defer f.Close()
	var rows []weakVector
	for s := bufio.NewScanner(f); s.Scan(); {
		cells := strings.Split(s.Text(), "|")
		if len(cells) == 6 && strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			rows = append(rows, weakVector{strings.Trim(strings.TrimSpace(cells[1]), "`"), strings.TrimSpace(cells[2]), strings.TrimSpace(cells[4])})
		}
	}
	if len(rows) < 50 {
		t.Fatalf("%d files in the vectors' README table", len(rows))
	}
	return rows
}

// weakDebianFile builds, with pkbf weak build, the Debian weak-key file
// the tests check against: the Debian vectors' own keys (a list named
// "debian", for RSA-2048 and RSA-4096) and a P-256 list of hashes of no
// key, so that the P-256 control is covered.
func weakDebianFile(t *testing.T) string {
	dir := t.TempDir()
	var p256 strings.Builder
	for i := range 1000 {
		sum := sha256.Sum256([]byte(fmt.Sprint("no key ", i)))
		p256.WriteString(hex.EncodeToString(sum[:]) + "\n")
	}
	csv := filepath.Join(dir, "sha256_xcoord_P-256.csv")
	if err := os.WriteFile(csv, []byte(p256.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "debian.pkwk")
	if r := runWith(t, nil, "weak", "build", out, filepath.Join(weakVectorsDir, "debian"), csv); r.code != exitOK {
		t.Fatalf("weak build: %d %s", r.code, r.stderr)
	}
	return out
}

// The findings beyond BR 6.1.1.3's that the README's notes give some
// vectors (sizes, exponents, algorithms), and the sizes no Debian list
// covers; and the rule of each 6.1.1.3 verdict.
var (
	vectorOtherRules = map[string][]string{
		"misc/rsa2048_e3_a.pub.pem": {"rsa-exponent-range"},
		"misc/rsa2048_e1_a.pem":     {"rsa-exponent"},
		"misc/rsa2048_e1_a.der":     {"rsa-exponent"},
		"misc/rsa1024_a.pub.pem":    {"rsa-size", "debian-not-covered"},
		"misc/ed25519.pub.pem":      {"algorithm"},
		"roca/ssh05.pub":            {"rsa-size", "debian-not-covered"},
		"roca/mod01.txt":            {"rsa-size", "debian-not-covered"}, // 512 bits
		"roca/cert04.pem":           {"rsa-size", "debian-not-covered"}, // 2050 bits
	}
	vectorRules   = map[string]string{"debian": "debian-weak", "roca": "roca", "fermat": "fermat", "small-factor": "small-factor"}
	factsRounds   = regexp.MustCompile(`rounds=(\d+)`)
	fileRounds    = regexp.MustCompile(`fermat_r(\d+)\.`)
	factsFactors  = regexp.MustCompile(`N = ([0-9*]+) \* prime`)
	openPGPSubkey = regexp.MustCompile(`OpenPGP key [23]$`)
)

// checkJSON is what a test reads of check --json's line.
type checkJSON struct {
	Source, File, Fingerprint, Verdict, Error string
	Probably                                  *bool
	Findings                                  []struct{ Rule, Detail, Reason string }
}

// wantVectorRules returns the rules a vector's key should be found to
// break: its verdict's, and those its notes give.
func wantVectorRules(t *testing.T, v weakVector, source string) []string {
	var want []string
	if rule, ok := vectorRules[v.verdict]; ok {
		want = append(want, rule)
	} else if v.verdict != "clean" {
		t.Fatalf("%s: verdict %q", v.file, v.verdict)
	}
	want = append(want, vectorOtherRules[v.file]...)
	if v.file == "roca/key04.pgp" && openPGPSubkey.MatchString(source) {
		want = append(want, "debian-not-covered") // the subkeys are RSA-4032 and RSA-3968
	}
	slices.Sort(want)
	return want
}

// TestCheckBRVectors: every weak-key vector through pkbf check --br (in
// process; br_unix_test.go runs the command), with the Debian file pkbf
// weak build makes: each key gets the finding the README gives it (the
// Debian list, the ROCA flaw, the Fermat round, the small primes), and
// the findings its notes give; the clean controls get none of BR
// 6.1.1.3's. Keys in every form the vectors hold are read: PEM keys,
// certificates and requests, OpenSSH keys, armored OpenPGP keys, a BER
// PKCS#7 bundle, DER SPKIs, and bare hex moduli.
func TestCheckBRVectors(t *testing.T) {
	rows := weakVectors(t)
	debian := weakDebianFile(t)
	byFile := map[string]weakVector{}
	args := []string{"check", "--br", "--debian", debian, "--no-filter", "--json"}
	for _, v := range rows {
		byFile[filepath.Join(weakVectorsDir, v.file)] = v
		args = append(args, filepath.Join(weakVectorsDir, v.file))
	}
	r := runWith(t, nil, args...)
	if r.code != exitFound {
		t.Errorf("exit %d, want 1; stderr %s", r.code, r.stderr)
	}
	seen := map[string]int{}
	for line := range strings.Lines(r.stdout) {
		var got checkJSON
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		v, ok := byFile[got.File]
		if !ok {
			t.Fatalf("a verdict on %s, which is no vector", got.File)
		}
		seen[v.file]++
		var rules []string
		for _, f := range got.Findings {
			if !slices.Contains(rules, f.Rule) {
				rules = append(rules, f.Rule)
			}
			checkVectorDetail(t, v, f.Rule, f.Detail)
			if f.Reason == "" {
				t.Errorf("%s: finding %s without a reason", got.Source, f.Rule)
			}
		}
		slices.Sort(rules)
		want := wantVectorRules(t, v, got.Source)
		wantStatus := map[bool]string{true: "weak", false: "no"}[len(want) > 0]
		if !slices.Equal(rules, want) || got.Verdict != wantStatus || got.Error != "" || got.Probably != nil {
			t.Errorf("%s: findings %v, verdict %q, error %q; want %v, %q", got.Source, rules, got.Verdict, got.Error, want, wantStatus)
		}
		if m := factsFactors.FindStringSubmatch(v.facts); m != nil {
			var primes []string
			for _, f := range got.Findings {
				if f.Rule == "small-factor" {
					primes = append(primes, f.Detail)
				}
			}
			if strings.Join(primes, "*") != m[1] {
				t.Errorf("%s: small factors %v, the README says %s", got.Source, primes, m[1])
			}
		}
		if v.file == "roca/mod06.txt" && !slices.ContainsFunc(got.Findings, func(f struct{ Rule, Detail, Reason string }) bool { return f.Detail == "19" }) {
			t.Errorf("mod06: %v, want the factor 19 the README names", got.Findings)
		}
	}
	for _, v := range rows {
		want := 1
		if v.file == "roca/key04.pgp" {
			want = 3 // a primary key and two subkeys
		}
		if seen[v.file] != want {
			t.Errorf("%s: %d verdicts, want %d", v.file, seen[v.file], want)
		}
	}
}

// checkVectorDetail checks a finding's detail against what the README
// says of the vector: the Fermat round, the Debian list.
func checkVectorDetail(t *testing.T, v weakVector, rule, detail string) {
	t.Helper()
	switch rule {
	case "fermat":
		m := factsRounds.FindStringSubmatch(v.facts)
		if m == nil {
			m = fileRounds.FindStringSubmatch(v.file) // "key form of fermat_r57"
		}
		if m == nil || detail != m[1] {
			t.Errorf("%s: Fermat round %s, the README says %q", v.file, detail, v.facts)
		}
	case "debian-weak":
		if detail != "debian" {
			t.Errorf("%s: Debian list %q, want the list weak build made of the vectors' directory", v.file, detail)
		}
	}
}

// TestCheckBRModulus: with a filter, a bare modulus is checked by the
// weak-key checks but not looked up: a weak one exits 1 with its line
// and the error, a clean one exits 2 (not checked by the filter); without
// --br it is an unsupported key, exit 2.
func TestCheckBRModulus(t *testing.T) {
	weakVectors(t)
	debian := weakDebianFile(t)
	weak, clean := filepath.Join(weakVectorsDir, "roca/mod03.txt"), filepath.Join(weakVectorsDir, "roca/mod05.txt")
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"check", "--br", "--debian", debian, exampleFilter, weak}, exitFound, "weak\t-\t" + weak + ": line 1\troca: RSA modulus has the ROCA fingerprint", "mod03.txt: line 1: invalid key: not looked up in the filter: a bare RSA modulus has no SPKI\npkbf: checked 1 key: 0 probably, 1 weak, 0 no; 1 object not checked: 1 unsupported\n"},
		{[]string{"check", "--br", "--debian", debian, exampleFilter, clean}, exitTrouble, "", "mod05.txt: line 1: invalid key: not looked up in the filter: a bare RSA modulus has no SPKI\npkbf: checked 0 keys: 0 probably, 0 weak, 0 no; 1 object not checked: 1 unsupported\n"},
		{[]string{"check", "--br", "--debian", debian, "--no-filter", clean}, exitOK, "no\t-\t" + clean + ": line 1\n", "pkbf: checked 1 key: 0 weak, 1 no\n"},
		{[]string{"check", exampleFilter, weak}, exitTrouble, "", "mod03.txt: line 1: invalid key: a bare RSA modulus (one hex integer, no exponent) has no SubjectPublicKeyInfo"},
	} {
		r := runWith(t, nil, tc.args...)
		if r.code != tc.code || !strings.HasPrefix(r.stdout, tc.stdout) || (tc.stdout == "") != (r.stdout == "") || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%q: exit %d\n%s%s\nwant exit %d\n%s\n%s", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}

// TestCheckBRFlags: the weak-key flags go with --br, --no-filter too;
// their values are checked before anything is read.
func TestCheckBRFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--debian", "x.pkwk", exampleFilter}, "--debian goes with --br"},
		{[]string{"--rsa-sizes", "2048", "--curves", "P-256", exampleFilter}, "--curves, --rsa-sizes go with --br"},
		{[]string{"--no-filter", key("p256.pub")}, "--no-filter goes with --br"},
		{[]string{"--br", "--no-filter", "--confirm"}, "--confirm asks the API about keys a filter holds"},
		{[]string{"--br"}, "missing arguments"},
		{[]string{"--br", "--fermat-rounds", "99", exampleFilter}, "--fermat-rounds 99: BR 6.1.1.3 requires at least 100 rounds"},
		{[]string{"--br", "--rsa-sizes", "2048,big", exampleFilter}, `--rsa-sizes "2048,big": "big" is not a number of bits`},
		{[]string{"--br", "--rsa-sizes", "1024", exampleFilter}, "1024 bits is not a multiple of 8 from 2048 to 16384"},
		{[]string{"--br", "--curves", "P-256,P-192", exampleFilter}, `curve "P-192" is not P-256, P-384 or P-521`},
		{[]string{"--br", "--debian", exampleFilter, exampleFilter}, "invalid Debian weak-key file"},
	} {
		r := runWith(t, nil, append([]string{"check"}, tc.args...)...)
		if r.code != exitTrouble || r.stdout != "" || !strings.Contains(r.stderr, tc.err) {
			t.Errorf("check %q: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.err)
		}
	}
	// With --rsa-sizes and --curves a key of another size or curve is weak.
	r := runWith(t, nil, "check", "--br", "--rsa-sizes", "3072, 4096", "--curves", "P-384", "--no-filter", key("p256.pub"), key("rsa2048.pub"))
	if r.code != exitFound || !strings.Contains(r.stdout, "ec-curve: EC curve P-256 is not among the curves this checker allows (P-384)") || !strings.Contains(r.stdout, "rsa-size: RSA-2048 is not among the sizes this checker allows (3072, 4096)") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
