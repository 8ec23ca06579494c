package keys

import (
	"bufio"
	"bytes"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// The fixtures of testdata/keys/more (see its gen.sh): every encoding of a
// key users hold, with canonical fingerprints computed by openssl.

const moreDir = "../testdata/keys/more"

// readPairs reads "NAME VALUE" lines.
func readPairs(t testing.TB, path string) map[string]string {
	t.Helper()
	b := testkit.ReadFile(t, path)
	out := map[string]string{}
	for line := range strings.Lines(string(b)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok {
			out[name] = value
		}
	}
	return out
}

// scanAll reads every key of a file, with the test passphrase, and returns
// their canonical fingerprints and errors.
func scanFile(t *testing.T, path string, passphrases ...string) (fps []string, errs []error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := NewScanner(f)
	s.SetPassphrases(passphrases...)
	for s.Scan() {
		k := s.Key()
		spki, err := k.SPKI()
		if err == nil {
			spki, err = Canonical(spki)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fps = append(fps, Fingerprint(spki))
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return fps, errs
}

func testPassphrase(t *testing.T) string {
	return strings.TrimSpace(string(testkit.ReadFile(t, filepath.Join(moreDir, "passphrase"))))
}

// Every single-key file gives the key openssl gives, in canonical form,
// both through SPKI and through Scanner.
func TestCanonicalFingerprints(t *testing.T) {
	canonical := readPairs(t, filepath.Join(moreDir, "CANONICAL"))
	if len(canonical) < 90 {
		t.Fatalf("CANONICAL lists %d files", len(canonical))
	}
	for name, want := range canonical {
		path := filepath.Join(moreDir, name)
		spki, err := SPKI(testkit.ReadFile(t, path))
		if err == nil {
			spki, err = Canonical(spki)
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := Fingerprint(spki); got != want {
			t.Errorf("%s: canonical fingerprint %s, openssl says %s", name, got, want)
		}
		fps, errs := scanFile(t, path)
		if len(errs) != 0 || len(fps) != 1 || fps[0] != want {
			t.Errorf("%s: Scanner found %v, errors %v; want one key %s", name, fps, errs, want)
		}
	}
}

// Files that must fail, with the error EXPECT names.
func TestExpectedErrors(t *testing.T) {
	for name, want := range readPairs(t, filepath.Join(moreDir, "EXPECT")) {
		fps, errs := scanFile(t, filepath.Join(moreDir, name))
		if len(fps) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), want) {
			t.Errorf("%s: keys %v, errors %v; want one error saying %q", name, fps, errs, want)
		}
	}
	// The password of the Java truststore opens it.
	fps, errs := scanFile(t, filepath.Join(moreDir, "truststore.p12"), "changeit")
	if len(errs) != 0 || len(fps) != 1 {
		t.Errorf("truststore.p12 with changeit: %v, %v", fps, errs)
	}
}

// singleKeyFiles groups every file that holds one key (here and in the
// folder above) by the canonical fingerprint openssl gives it.
func singleKeyFiles(t *testing.T) map[string][]string {
	groups := map[string][]string{}
	for name, fp := range readPairs(t, filepath.Join(moreDir, "CANONICAL")) {
		groups[fp] = append(groups[fp], filepath.Join(moreDir, name))
	}
	compressed := map[string]string{} // compressed fingerprint -> canonical
	for line := range strings.Lines(string(testkit.ReadFile(t, filepath.Join(keysDir, "COMPRESSED")))) {
		if f := strings.Fields(line); len(f) == 3 {
			compressed[f[2]] = f[1]
		}
	}
	for name, fp := range manifest(t) {
		if fp == "encrypted" {
			continue
		}
		if c, ok := compressed[fp]; ok {
			fp = c
		}
		groups[fp] = append(groups[fp], filepath.Join(keysDir, name))
	}
	return groups
}

// TestNoFalseNoAcrossEncodings stores one encoding of a key, as the
// reference implementation or an independent one would (the SPKI bytes as
// a file gives them, the canonical form, the compressed form), and looks
// the key up from every other file that holds it as a filter's Contains
// does (lookup: the bytes given, then Forms): it must be found every time.
// It counts the answers the bytes alone give too: the false "no"s of a
// lookup of the exact bytes.
func TestNoFalseNoAcrossEncodings(t *testing.T) {
	groups := singleKeyFiles(t)
	spkis := map[string][]byte{}
	for _, files := range groups {
		for _, path := range files {
			spki, err := SPKI(testkit.ReadFile(t, path))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			spkis[path] = spki
		}
	}
	pairs, falseNo, outside, outsideFound := 0, 0, 0, 0
	for fp, files := range groups {
		// The encodings a filter may hold: the key's canonical and point
		// forms, and each file's own bytes when they are one of those.
		// Other stored forms (explicit EC parameters, RSA without NULL,
		// integers not in minimal form) are beyond the lookup's promise:
		// only counted.
		canonical, err := Canonical(spkis[files[0]])
		if err != nil {
			t.Fatalf("%s: %v", files[0], err)
		}
		encs, err := Encodings(canonical)
		if err != nil {
			t.Fatalf("%s: %v", files[0], err)
		}
		sources := map[string][]byte{}
		for i, e := range encs {
			sources["encoding "+string(rune('0'+i))] = e
		}
		for _, path := range files {
			if slices.ContainsFunc(encs, func(e []byte) bool { return bytes.Equal(e, spkis[path]) }) {
				sources["as in "+path] = spkis[path]
				continue
			}
			for _, other := range files {
				outside++
				if lookup(spkis[path], spkis[other]) {
					outsideFound++
				}
			}
		}
		for source, stored := range sources {
			for _, path := range files {
				pairs++
				if !bytes.Equal(stored, spkis[path]) {
					falseNo++
				}
				if !lookup(stored, spkis[path]) {
					t.Errorf("key %s stored %s: Contains(%s) = false", fp[:16], source, path)
				}
			}
			// A control that can fail: another key is not found.
			for otherFP, others := range groups {
				if otherFP != fp && lookup(stored, spkis[others[0]]) {
					t.Errorf("key %s stored %s: Contains(%s) = true, a different key", fp[:16], source, others[0])
				}
				break
			}
		}
	}
	t.Logf("%d keys, %d (stored encoding, queried file) pairs: Probably alone answers a false no for %d, Contains for none", len(groups), pairs, falseNo)
	t.Logf("stored in a form outside the promise (explicit parameters, no NULL, non-minimal): found from %d of %d files", outsideFound, outside)
	if falseNo == 0 {
		t.Error("no pair needed another encoding: the fixtures do not exercise Contains")
	}
}

func TestCanonicalRSAIsFree(t *testing.T) {
	spki, err := SPKI(testkit.ReadFile(t, filepath.Join(keysDir, "rsa2048.spki.der")))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Canonical(spki)
	if err != nil || !sameSlice(c, spki) {
		t.Errorf("Canonical of a canonical RSA SPKI is a copy or fails: %v", err)
	}
	var buf [256]byte
	if allocs := testing.AllocsPerRun(100, func() { Forms(buf[:0], spki) }); allocs != 0 {
		t.Errorf("Forms of a canonical RSA key: %v allocations", allocs)
	}
}

// Canonical returns its input, not a copy, when it is canonical, and
// Contains costs one query and no allocation for such an RSA key.
// The prose rule: lines of text that mention key types are text; a damaged
// key line is an error.
func TestProseAndDamagedLines(t *testing.T) {
	pub := strings.TrimSpace(string(testkit.ReadFile(t, filepath.Join(keysDir, "ed25519.pub"))))
	fields := strings.Fields(pub)
	for _, tc := range []struct {
		name, text string
		keys, errs int
	}{
		{"prose", "ssh-rsa keys are old\necdsa-sha2-nistp256 is fine\nuse ssh-ed25519 AAAA for new keys\n" + pub + "\n", 1, 0},
		{"damaged blob", fields[0] + " " + fields[1][:30] + "\n", 0, 1},
		{"bad base64", "ssh-rsa AAAA-not-base64 bob\n", 0, 1},
		{"mistyped type", "shh-ed25519 " + fields[1] + "\n", 0, 1},
		{"unknown type", "ssh-xmss@openssh.com AAAAFHNzaC14bXNzQG9wZW5zc2guY29tAAAA\n", 0, 1},
	} {
		s := NewScanner(bufio.NewReader(strings.NewReader(tc.text)))
		keys, errs := 0, 0
		for s.Scan() {
			k := s.Key()
			if _, err := k.SPKI(); err != nil {
				errs++
			} else {
				keys++
			}
		}
		if keys != tc.keys || errs != tc.errs {
			t.Errorf("%s: %d keys, %d errors; want %d, %d", tc.name, keys, errs, tc.keys, tc.errs)
		}
	}
}

// Errors name the format and algorithm in words.
func TestErrorsInWords(t *testing.T) {
	for _, tc := range []struct {
		name string
		der  []byte
		want string
	}{
		// PKCS#8 of ML-DSA-65 with an empty private key: cannot be derived.
		{"ML-DSA PKCS#8", []byte{0x30, 0x12, 0x02, 0x01, 0x00, 0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x12, 0x04, 0x00}, "ML-DSA-65"},
	} {
		_, err := SPKI(tc.der)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "2.16.840") {
			t.Errorf("%s: %v, want the algorithm in words: %s", tc.name, err, tc.want)
		}
	}
	// A DSA private key in DER is a DSA key, not a broken RSA one.
	_, err := SPKI(testkit.ReadFile(t, filepath.Join(moreDir, "dsa.traditional.der")))
	if err != nil {
		t.Errorf("DSA PRIVATE KEY in DER: %v", err)
	}
	if bytes.Contains([]byte(err2s(err)), []byte("RSA")) {
		t.Errorf("DSA key reported as RSA: %v", err)
	}
}

func err2s(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Both sides of the limits on what a hostile file may ask to compute: key
// derivation iterations and DSA/DH moduli.
func TestCostLimits(t *testing.T) {
	macData := func(iterations int) cryptobyte.String {
		var b cryptobyte.Builder
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { // DigestInfo
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { addOID(b, oidSHA1) })
			b.AddASN1OctetString(make([]byte, 20))
		})
		b.AddASN1OctetString([]byte("salt"))
		b.AddASN1Int64(int64(iterations))
		return cryptobyte.String(b.BytesOrPanic())
	}
	defer func(n int) { maxPKCS12Iterations = n }(maxPKCS12Iterations)
	maxPKCS12Iterations = 1000 // the same code at a size a test can afford
	if _, ok, err := pkcs12MACPassword(macData(1000), nil, []string{""}, newKDFBudget(nil)); err != nil || ok {
		t.Errorf("MAC with the most iterations allowed: %v, %v (want a mismatch, no error)", ok, err)
	}
	if _, _, err := pkcs12MACPassword(macData(1001), nil, []string{""}, newKDFBudget(nil)); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("MAC with one iteration too many: %v", err)
	}
	params := func(bits int) []byte {
		p := new(big.Int).Lsh(big.NewInt(1), uint(bits-1))
		var b cryptobyte.Builder
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1BigInt(p.Add(p, big.NewInt(1)))
			b.AddASN1BigInt(big.NewInt(2))
		})
		return b.BytesOrPanic()
	}
	if _, _, err := modpParams(oidDHPKCS3, params(maxFieldBits)); err != nil {
		t.Errorf("DH modulus of %d bits: %v", maxFieldBits, err)
	}
	if _, _, err := modpParams(oidDHPKCS3, params(maxFieldBits+1)); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("DH modulus of %d bits: %v", maxFieldBits+1, err)
	}
}

// ExplicitCurve tells an EC key with explicit curve parameters from one on
// a named curve and from other keys, in every form SPKI reads.
func TestExplicitCurve(t *testing.T) {
	for name, want := range map[string]bool{
		"p256.spki-explicit.der":                       true,
		"p256.cert-explicit.pem":                       true,
		"brainpoolp256r1.spki-explicit-compressed.pem": true,
		"brainpoolp256r1.spki.pem":                     false,
		"brainpoolp256r1.spki-compressed.pem":          false,
	} {
		spki, err := SPKI(testkit.ReadFile(t, filepath.Join(moreDir, name)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := ExplicitCurve(spki); got != want {
			t.Errorf("ExplicitCurve(%s) = %v, want %v", name, got, want)
		}
		canonical, err := Canonical(spki)
		if err != nil || ExplicitCurve(canonical) {
			t.Errorf("%s: canonical form (%v) still has explicit parameters", name, err)
		}
	}
	for _, b := range [][]byte{nil, {0x30}, {0x30, 0x03, 0x30, 0x01, 0x06}, testkit.ReadFile(t, "../testdata/keys/rsa2048.spki.der")} {
		if ExplicitCurve(b) {
			t.Errorf("ExplicitCurve(% x) = true", b[:min(len(b), 8)])
		}
	}
}
