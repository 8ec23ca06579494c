package pkbf

import (
	"bytes"
	"flag"
	"path/filepath"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keys"
)

var update = flag.Bool("update", false, "rewrite the generated files in testdata/")

// exampleFilterKeys are the keys in testdata/example.pkbf, the filter the
// README's first command checks keys against. The other test keys (p384,
// p521, rsa1024) are left out, so checks show misses too.
var exampleFilterKeys = []string{"rsa2048.pkcs8.pem", "rsa512.pkcs8.pem", "p256.pkcs8.pem", "ed25519.pkcs8.pem"}

// buildExampleFilter builds testdata/example.pkbf from the test keys: a
// filter for 1000 entries at a one-in-a-million false-positive rate, with
// every EC key under both point forms.
func buildExampleFilter(t *testing.T) *Writable {
	k, l, err := Parameters(1000, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(k, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range exampleFilterKeys {
		if _, err := addKey(f, testkit.ReadFile(t, filepath.Join(keysDir, name))); err != nil {
			t.Fatalf("AddKey(%s): %v", name, err)
		}
	}
	return f
}

// TestExampleFilterFile checks that testdata/example.pkbf is what
// buildExampleFilter makes (all but the update time); with -update it
// rewrites the file: go test -run TestExampleFilterFile -update
func TestExampleFilterFile(t *testing.T) {
	path := filepath.Join("testdata", "example.pkbf")
	f := buildExampleFilter(t)
	if *update {
		if err := f.WriteFile(path); err != nil {
			t.Fatal(err)
		}
	}
	g, err := Open(path)
	if err != nil {
		t.Fatalf("%v (make it with: go test -run TestExampleFilterFile -update)", err)
	}
	defer g.Close()
	want, got := f.Header(), g.Header()
	want.Updated = got.Updated
	if got != want || !bytes.Equal(g.data, f.data) {
		t.Errorf("testdata/example.pkbf (%+v) differs from what the test keys make (%+v); run go test -run TestExampleFilterFile -update", got, want)
	}
	// The keys left out are not in it.
	for _, name := range []string{"p384.pub", "p521.pub", "rsa1024.pub"} {
		spki, _ := keys.SPKI(testkit.ReadFile(t, filepath.Join(keysDir, name)))
		if g.Probably(spki) {
			t.Errorf("%s is probably in the example filter, which leaves it out", name)
		}
	}
	// And the key the README's first command checks is in it, under the
	// encoding of its certificate.
	cert, err := keys.SPKI(testkit.ReadFile(t, filepath.Join(keysDir, "p256.cert.pem")))
	if err != nil {
		t.Fatal(err)
	}
	if !g.Probably(cert) {
		t.Error("the README's example key (p256.cert.pem) is not in testdata/example.pkbf")
	}
}
