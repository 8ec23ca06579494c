package weakkeys

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/keys"
)

// vectorsDir holds the weak-key vectors: real keys from the published
// sets (Debian, ROCA) and generated ones, with a README that gives each
// file's verdict. It lives beside the project, in shared/.
const vectorsDir = "../../shared/vectors/weak"

func vectors(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(vectorsDir, "README.md")); err != nil {
		t.Skipf("weak-key vectors not found at %s (they live beside the project, in shared/): %v", vectorsDir, err)
	}
	return vectorsDir
}

// vector is one row of the README's table.
type vector struct {
	file, verdict, facts string
}

// readVectors reads the README's table of files.
func readVectors(t testing.TB, dir string) []vector {
	f, err := os.Open(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vector
	s := bufio.NewScanner(f)
	for s.Scan() {
		cells := strings.Split(s.Text(), "|")
		if len(cells) != 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		out = append(out, vector{
			file:    strings.Trim(strings.TrimSpace(cells[1]), "`"),
			verdict: strings.TrimSpace(cells[2]),
			facts:   strings.TrimSpace(cells[4]),
		})
	}
	if len(out) == 0 {
		t.Fatal("no files in the vectors' README table")
	}
	return out
}

// vectorKeys reads a vector file's keys: a hex modulus (.txt, returned as
// a nil SPKI and the modulus), or every key package keys reads in it (an
// OpenPGP key's RSA keys, a BER PKCS#7 bundle's certificates).
func vectorKeys(t *testing.T, path string) (spkis [][]byte, modulus []byte) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	switch filepath.Ext(path) {
	case ".txt":
		n, ok := new(big.Int).SetString(strings.TrimPrefix(strings.TrimSpace(string(data)), "0x"), 16)
		if !ok {
			t.Fatalf("%s: not a hex modulus", path)
		}
		return nil, n.Bytes()
	}
	s := keys.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		k := s.Key()
		spki, err := k.SPKI()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		spkis = append(spkis, spki)
	}
	if s.Err() != nil || len(spkis) == 0 {
		t.Fatalf("%s: %d keys, %v", path, len(spkis), s.Err())
	}
	return spkis, nil
}

// vectorsDebian builds a Debian file whose lists hold the hashes of the
// Debian vectors (from the files themselves: their sha256-modulus hashes,
// and their openssl-vulnkey lines as openssl prints the modulus, where
// openssl is on PATH) among thousands of random ones, for RSA-2048,
// RSA-4096 and P-256.
func vectorsDebian(t *testing.T, dir string) *Debian {
	var b Builder
	files, _ := filepath.Glob(filepath.Join(dir, "debian", "*.pub.pem"))
	if len(files) == 0 {
		t.Fatal("no Debian vectors")
	}
	openssl, _ := exec.LookPath("openssl")
	vulnkey := map[string]*strings.Builder{}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if err := b.AddKey("debian-vectors", data); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if openssl == "" {
			continue
		}
		// openssl-vulnkey hashes what "openssl rsa -noout -modulus" prints.
		out, err := exec.Command(openssl, "rsa", "-pubin", "-in", f, "-noout", "-modulus").Output()
		if err != nil {
			t.Fatalf("openssl rsa %s: %v", f, err)
		}
		bits := "RSA-2048"
		if strings.Contains(f, "_4096_") {
			bits = "RSA-4096"
		}
		if vulnkey[bits] == nil {
			vulnkey[bits] = &strings.Builder{}
		}
		sum := sha1Hex(out)
		vulnkey[bits].WriteString(sum[20:] + "\n")
	}
	for _, key := range []string{"RSA-2048", "RSA-4096"} {
		if err := b.ReadList(List{Name: "debian-vectors", Key: key, Scheme: SHA256Modulus}, strings.NewReader(randomHashes(t, 5000, 64))); err != nil {
			t.Fatal(err)
		}
		if w := vulnkey[key]; w != nil {
			w.WriteString(randomHashes(t, 5000, 20))
			if err := b.ReadList(List{Name: "blacklist." + key, Key: key, Scheme: VulnKey}, strings.NewReader("# openssl-vulnkey\n"+w.String())); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.ReadList(List{Name: "sha256_xcoord_P-256.csv", Key: "P-256", Scheme: SHA256X}, strings.NewReader(randomHashes(t, 5000, 64))); err != nil {
		t.Fatal(err)
	}
	return openDebian(t, writeDebian(t, &b))
}

// otherFindings are the findings beyond BR 6.1.1.3's that the README's
// notes give the clean controls and odd-sized keys.
var otherFindings = map[string][]Rule{
	"misc/rsa2048_e3_a.pub.pem": {RuleRSAExponentRange},
	"misc/rsa2048_e1_a.pem":     {RuleRSAExponent},
	"misc/rsa2048_e1_a.der":     {RuleRSAExponent},
	"misc/rsa1024_a.pub.pem":    {RuleRSASize, RuleDebianNotCovered},
	"misc/ed25519.pub.pem":      {RuleAlgorithm},
	"roca/ssh05.pub":            {RuleRSASize, RuleDebianNotCovered},
	"roca/mod01.txt":            {RuleRSASize, RuleDebianNotCovered}, // 512 bits
	"roca/cert04.pem":           {RuleRSASize, RuleDebianNotCovered}, // 2050 bits
	"roca/key04.pgp":            {RuleDebianNotCovered},              // 4096, 4032, 3968 bits: one finding per key but the first
}

var verdictRules = map[string]Rule{"debian": RuleDebian, "roca": RuleROCA, "fermat": RuleFermat, "small-factor": RuleSmallFactor}

// TestVectors checks every vector against the verdict the vectors' README
// gives it: the expected BR 6.1.1.3 finding (the Debian list, the Fermat
// round, the small primes) and none other of them for the clean controls,
// plus the size, exponent and algorithm findings its notes give.
func TestVectors(t *testing.T) {
	dir := vectors(t)
	rows := readVectors(t, dir)
	c, err := New(WithDebian(vectorsDebian(t, dir)))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, v := range rows {
		listed[v.file] = true
		t.Run(v.file, func(t *testing.T) {
			spkis, modulus := vectorKeys(t, filepath.Join(dir, v.file))
			var results []Result
			if modulus != nil {
				res, err := c.CheckModulus(modulus)
				if err != nil {
					t.Fatal(err)
				}
				results = append(results, res)
			}
			for _, spki := range spkis {
				res, err := c.Check(spki)
				if err != nil {
					t.Fatal(err)
				}
				results = append(results, res)
			}
			for i, res := range results {
				checkVector(t, v, i, res)
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		if !listed[filepath.ToSlash(rel)] {
			t.Errorf("%s is not in the README's table: no verdict to check", rel)
		}
	}
}

var (
	factsRounds = regexp.MustCompile(`rounds=(\d+)`)
	fileRounds  = regexp.MustCompile(`fermat_r(\d+)\.`)
	factsPrimes = regexp.MustCompile(`N = ([0-9*]+) \* prime`)
)

func checkVector(t *testing.T, v vector, key int, res Result) {
	t.Helper()
	var want []Rule
	if rule, ok := verdictRules[v.verdict]; ok {
		want = append(want, rule)
	} else if v.verdict != "clean" {
		t.Fatalf("verdict %q is none of debian, roca, fermat, small-factor, clean", v.verdict)
	}
	extra := otherFindings[v.file]
	if v.file == "roca/key04.pgp" && key == 0 {
		extra = nil // the primary key is RSA-4096, which a list covers
	}
	want = append(want, extra...)
	var got []Rule
	for _, f := range res.Findings {
		if !slices.Contains(got, f.Rule) {
			got = append(got, f.Rule)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("key %d: findings %v, want the rules %v", key, res.Findings, want)
	}
	for _, f := range res.Findings {
		switch f.Rule {
		case RuleFermat:
			// The key, certificate and request forms say "key form of
			// fermat_r57": the round is in the name.
			m := factsRounds.FindStringSubmatch(v.facts)
			if m == nil {
				m = fileRounds.FindStringSubmatch(v.file)
			}
			if m == nil || f.Detail != m[1] {
				t.Fatalf("Fermat round %s, the README says %q", f.Detail, v.facts)
			}
		case RuleDebian:
			if f.Detail != "debian-vectors" && !strings.HasPrefix(f.Detail, "blacklist.RSA-") {
				t.Fatalf("Debian finding on list %q", f.Detail)
			}
		}
	}
	if v.verdict == "debian" && countRule(res, RuleDebian) != debianLists(t) {
		t.Fatalf("found on %d Debian lists, want %d (every scheme)", countRule(res, RuleDebian), debianLists(t))
	}
	if m := factsPrimes.FindStringSubmatch(v.facts); m != nil {
		var primes []string
		for _, f := range res.Findings {
			if f.Rule == RuleSmallFactor {
				primes = append(primes, f.Detail)
			}
		}
		if got := strings.Join(primes, "*"); got != m[1] {
			t.Fatalf("small factors %s, the README says %s", got, m[1])
		}
	}
	if v.file == "roca/mod06.txt" && !slices.ContainsFunc(res.Findings, func(f Finding) bool { return f.Detail == "19" }) {
		t.Fatalf("mod06: findings %v, want the factor 19 the README names", res.Findings)
	}
}

// debianLists is how many lists hold a Debian vector: the sha256-modulus
// list, and the openssl-vulnkey list where openssl made it.
func debianLists(t *testing.T) int {
	if _, err := exec.LookPath("openssl"); err != nil {
		return 1
	}
	return 2
}

func countRule(r Result, rule Rule) int {
	n := 0
	for _, f := range r.Findings {
		if f.Rule == rule {
			n++
		}
	}
	return n
}

// TestVectorsFermatControls: the controls that Fermat's method factors in
// rounds 101 and 250 are found in exactly those rounds when the checker
// runs that many, and not one round earlier.
func TestVectorsFermatControls(t *testing.T) {
	dir := vectors(t)
	checked := 0
	for _, v := range readVectors(t, dir) {
		m := factsRounds.FindStringSubmatch(v.facts)
		if m == nil || !strings.HasSuffix(v.file, ".pub.pem") {
			continue
		}
		checked++
		rounds, _ := strconv.Atoi(m[1])
		spkis, _ := vectorKeys(t, filepath.Join(dir, v.file))
		for _, r := range []int{rounds - 1, rounds} {
			if r < 1 {
				continue
			}
			c, err := New(WithFermatRounds(r))
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Check(spkis[0])
			if err != nil {
				t.Fatal(err)
			}
			found := countRule(res, RuleFermat) == 1 && res.Findings[slices.IndexFunc(res.Findings, func(f Finding) bool { return f.Rule == RuleFermat })].Detail == m[1]
			if found != (r == rounds) {
				t.Fatalf("%s with %d rounds: findings %v", v.file, r, res.Findings)
			}
		}
	}
	if checked < 6 {
		t.Fatalf("%d Fermat vectors with a round count in the README, want 6", checked)
	}
}

func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// TestBuilderKeyTree builds lists from a tree laid out as the HARICA
// repository lays out its Debian weak keys (<arch>/<rnd>/rsa-<bits>/
// <PID>.key, openssl genrsa's PEM), from the vectors' private keys, and
// finds their public keys in it; a file it cannot read is an error naming
// it.
func TestBuilderKeyTree(t *testing.T) {
	dir := vectors(t)
	keyFiles, _ := filepath.Glob(filepath.Join(dir, "debian", "*.key.pem"))
	if len(keyFiles) == 0 {
		t.Fatal("no Debian private keys among the vectors")
	}
	tree := t.TempDir()
	name := regexp.MustCompile(`dwk_([a-z0-9]+)_([a-z]+)_(\d+)_(\d+)\.key\.pem$`)
	for _, f := range keyFiles {
		m := name.FindStringSubmatch(f)
		if m == nil {
			t.Fatalf("%s: not named dwk_<arch>_<rnd>_<bits>_<PID>.key.pem", f)
		}
		sub := filepath.Join(tree, m[1], m[2], "rsa-"+m[3])
		os.MkdirAll(sub, 0o755)
		data, _ := os.ReadFile(f)
		if err := os.WriteFile(filepath.Join(sub, m[4]+".key"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(tree, "README.md"), []byte("not a key"), 0o644)
	var b Builder
	if err := b.AddKeyTree("harica", tree); err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, WithDebian(openDebian(t, writeDebian(t, &b))))
	for _, f := range keyFiles {
		pub := strings.Replace(f, ".key.pem", ".pub.pem", 1)
		spkis, _ := vectorKeys(t, pub)
		res, err := c.Check(spkis[0])
		if err != nil {
			t.Fatal(err)
		}
		if rules(res) != "debian-weak=harica" {
			t.Fatalf("%s: %s, want debian-weak=harica", pub, rules(res))
		}
	}
	bad := filepath.Join(tree, "amd64", "bad.key")
	os.WriteFile(bad, []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"), 0o644)
	if err := b.AddKeyTree("harica", tree); err == nil || !strings.Contains(err.Error(), bad+": ") {
		t.Fatalf("AddKeyTree with a bad key = %v, want an error naming %s", err, bad)
	}
}
