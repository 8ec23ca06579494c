package keys

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

// Every curve over GF(2^m) openssl generates keys on, in every form openssl writes (named
// and explicit, uncompressed, compressed, hybrid; SEC 1 private keys too),
// gives the canonical SPKI openssl gives and the compressed SPKI openssl
// writes, and a filter holding either form finds every file, both ways
// (testdata/keys/binary/gen.sh).
func TestBinaryCurves(t *testing.T) {
	dir := filepath.Join(keysDir, "binary")
	forms, err := os.ReadFile(filepath.Join(dir, "FORMS"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(forms)), "\n")
	if len(lines) < 30 {
		t.Fatalf("%d curves in FORMS", len(lines))
	}
	files := []string{"sec1.pem", "sec1-explicit.pem", "spki-uncompressed.pem", "spki-compressed.pem", "spki-hybrid.pem",
		"spki-explicit-uncompressed.pem", "spki-explicit-compressed.pem", "spki-explicit-hybrid.pem"}
	for _, line := range lines {
		f := strings.Fields(line)
		curve := f[0]
		// The fingerprints openssl gives, canonical and compressed, for
		// the named key's forms and for the explicit key's.
		want := map[bool][2]string{false: {f[1], f[2]}, true: {f[3], f[4]}}
		for _, name := range files {
			path := filepath.Join(dir, curve+"."+name)
			spki, err := SPKI(testkit.ReadFile(t, path))
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			encs, err := Encodings(spki)
			if err != nil {
				t.Errorf("%s: Encodings: %v", path, err)
				continue
			}
			w := want[strings.Contains(name, "explicit")]
			if len(encs) < 2 || Fingerprint(encs[0]) != w[0] || Fingerprint(encs[1]) != w[1] {
				t.Errorf("%s: canonical and compressed %s, openssl %s", path, fingerprints(encs), w)
				continue
			}
			// A filter holding the canonical form (as the reference stores
			// a key) or the compressed one (as the publisher stores it too)
			// finds the key in this form.
			if !lookup(encs[0], spki) || !lookup(encs[1], spki) {
				t.Errorf("%s: not found in a filter holding the canonical or the compressed form", path)
			}
		}
		// And the other way: the compressed SPKI openssl wrote is found
		// in a filter holding the canonical form of the named key.
		named, err1 := SPKI(testkit.ReadFile(t, filepath.Join(dir, curve+".sec1.pem")))
		compressed, err2 := SPKI(testkit.ReadFile(t, filepath.Join(dir, curve+".spki-compressed.pem")))
		if err1 != nil || err2 != nil || Fingerprint(compressed) != want[false][1] || !lookup(named, compressed) {
			t.Errorf("%s: the compressed SPKI openssl wrote is not found under the named key (%v, %v)", curve, err1, err2)
		}
	}
}
