// Package testkit holds helpers the tests of several pkbf packages share.
package testkit

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
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// SeedFiles adds the files matching patterns to a fuzz corpus.
func SeedFiles(f *testing.F, patterns ...string) {
	f.Helper()
	for _, p := range patterns {
		names, _ := filepath.Glob(p)
		for _, name := range names {
			if b, err := os.ReadFile(name); err == nil {
				f.Add(b)
			}
		}
	}
}

// ReadFile returns the file's bytes, or fails the test.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Post posts body to url and returns the status and the answer's body,
// or fails the test.
func Post(t testing.TB, url string, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// CheckErr fails the test unless err wraps sentinel and its message starts
// with "pkbf: ", as every error pkbf returns does.
func CheckErr(t testing.TB, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) || !strings.HasPrefix(err.Error(), "pkbf: ") {
		t.Fatalf("error %q: want %v and the pkbf: prefix", err, sentinel)
	}
}

// WithCounter returns a copy of der with i written into its public key
// spki (a part of der, or der itself): four bytes ending 5 before the
// SPKI's end, inside an RSA modulus (the exponent's INTEGER is the last 5
// bytes) or an EC point's y. The benchmarks make distinct keys this way,
// at no cost of key generation or signing; an EC point leaves its curve,
// which reading a key does not check.
func WithCounter(der, spki []byte, i int) []byte {
	at := bytes.Index(der, spki) + len(spki) - 9
	out := bytes.Clone(der)
	binary.BigEndian.PutUint32(out[at:], uint32(i))
	return out
}

// Signer makes a key of kind "RSA" (2048 bits), "P-256" or "Ed25519", or
// fails the test.
func Signer(t testing.TB, kind string) crypto.Signer {
	t.Helper()
	var k crypto.Signer
	var err error
	switch kind {
	case "RSA":
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case "P-256":
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "Ed25519":
		_, k, err = ed25519.GenerateKey(rand.Reader)
	default:
		err = errors.New("testkit: no key kind " + kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Cert makes a P-256 key and a certificate for it named cn, valid from
// an hour ago for a day, shaped by edit (which may be nil) and signed by
// parent's key (self-signed when parent is nil); or fails the test.
func Cert(t testing.TB, cn string, parent *x509.Certificate, parentKey crypto.Signer, edit func(*x509.Certificate)) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key := Signer(t, "P-256").(*ecdsa.PrivateKey)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	if edit != nil {
		edit(tmpl)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

// WritePEM writes der as one PEM block of type typ to dir/name, mode
// 0600, and returns the file's path; or fails the test.
func WritePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// NixEnv returns the environment to run Debian's Nix (nix-bin) in, offline
// and without a daemon, with its own cache directory; the test skips where
// Nix is missing, unless PKBF_REQUIRE_NIX is set (as .ci/run sets it,
// having installed nix-bin), and then fails.
func NixEnv(t testing.TB) []string {
	t.Helper()
	for _, tool := range []string{"nix", "nix-store", "nix-hash"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("PKBF_REQUIRE_NIX") != "" {
				t.Fatalf("%s is missing (apt-get install nix-bin)", tool)
			}
			t.Skipf("%s is missing (apt-get install nix-bin): the test needs Nix itself", tool)
		}
	}
	return append(os.Environ(),
		"NIX_CONFIG=build-users-group =\nsubstituters =\nsandbox = false\nexperimental-features = nix-command",
		"XDG_CACHE_HOME="+t.TempDir())
}

// Nix runs a Nix command in env (from NixEnv) and returns its standard
// output, or fails the test with its standard error.
func Nix(t testing.TB, env []string, name string, args ...string) string {
	t.Helper()
	out, err := NixTry(env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return out
}

// NixTry runs a Nix command in env and returns its standard output, or an
// error holding its standard error.
func NixTry(env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
