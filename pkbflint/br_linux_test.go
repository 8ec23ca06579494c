package pkbflint

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/weakkeys"
)

// A Debian file cut short while it is mapped makes the Debian lint Fatal,
// naming the file, not the process crash, until a good file takes its
// place.
func TestBRDebianFileCutShort(t *testing.T) {
	ca := newTestCA(t)
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	spki, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	der := ca.issue(t, spki, "br-test", false)
	path := filepath.Join(t.TempDir(), "debian-weak-keys.pkwk")
	var b weakkeys.Builder
	for range 50 {
		addRandom(t, &b, weakkeys.List{Name: "random", Key: "RSA-2048", Scheme: weakkeys.SHA256Modulus})
	}
	if err := b.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	toml := brConfig(path)
	if got := results(lintBR(t, der, toml))[brDebian.name]; got != "pass" {
		t.Fatalf("before: %q, want pass", got)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	got := results(lintBR(t, der, toml))[brDebian.name]
	if !strings.HasPrefix(got, "fatal: pkbf: "+path+": invalid Debian weak-key file") {
		t.Fatalf("after the file was cut: %q, want fatal naming it", got)
	}
	if err := b.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if got := results(lintBR(t, der, toml))[brDebian.name]; got != "pass" {
		t.Fatalf("after a good file replaced it: %q, want pass", got)
	}
}
