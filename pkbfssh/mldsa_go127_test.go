//go:build go1.27

package pkbfssh_test

import (
	"crypto/mldsa"
	"crypto/x509"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/pkbfssh"
)

// mldsaSigner is a new ML-DSA key of params as an SSH signer.
func mldsaSigner(t *testing.T, params mldsa.Parameters) ssh.Signer {
	k, err := mldsa.GenerateKey(params)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// F3 of red-team round 1, end to end under Go 1.27, where x/crypto/ssh
// v0.58 offers and accepts ML-DSA keys and ML-DSA certificates by default:
// over TCP with x/crypto/ssh's client, a server wrapped by
// pkbfssh.ServerConfig lets in a clean ML-DSA key of each parameter set,
// a clean Ed25519 and a clean ML-DSA key certified by an ML-DSA CA, and
// refuses a compromised ML-DSA key, as a key and certified, and a clean
// key certified by a compromised ML-DSA CA. The SPKI pkbf reads from each
// SSH key is the one crypto/x509 writes for it.
func TestServerConfigMLDSA(t *testing.T) {
	ids := newSSHIDs(t) // the Ed25519 and P-256 keys, for contrast
	keyOf := map[string]ssh.Signer{
		"ML-DSA-44": mldsaSigner(t, mldsa.MLDSA44()),
		"ML-DSA-65": mldsaSigner(t, mldsa.MLDSA65()),
		"ML-DSA-87": mldsaSigner(t, mldsa.MLDSA87()),
	}
	bad, cleanCA, badCA := mldsaSigner(t, mldsa.MLDSA65()), mldsaSigner(t, mldsa.MLDSA87()), mldsaSigner(t, mldsa.MLDSA44())
	f, err := pkbf.New(4, 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []ssh.Signer{bad, badCA} {
		if _, err := keycheck.AddKey(f, ssh.MarshalAuthorizedKey(s.PublicKey())); err != nil {
			t.Fatal(err)
		}
	}
	for name, s := range keyOf {
		want, err := x509.MarshalPKIXPublicKey(s.PublicKey().(ssh.CryptoPublicKey).CryptoPublicKey())
		if err != nil {
			t.Fatalf("%s: crypto/x509: %v", name, err)
		}
		if got, err := keys.SSHPublicKeySPKI(s.PublicKey().Marshal()); err != nil || string(got) != string(want) {
			t.Errorf("%s: the SPKI pkbf reads differs from crypto/x509's (%v)", name, err)
		}
	}

	step := &keyStep{checker: &ssh.CertChecker{IsUserAuthority: func(k ssh.PublicKey) bool {
		return string(k.Marshal()) == string(cleanCA.PublicKey().Marshal()) || string(k.Marshal()) == string(badCA.PublicKey().Marshal())
	}}}
	base := hostKey(t)
	base.PublicKeyCallback = step.callback
	addr := serveConfig(t, pkbfssh.ServerConfig(base, keycheck.New(f, keycheck.Options{})))
	cases := []struct {
		name string
		key  ssh.Signer
		in   bool
	}{
		{"compromised ML-DSA-65 key", bad, false},
		{"Ed25519 key certified by a clean ML-DSA CA", certSigner(t, ids.clean, cleanCA, "alice"), true},
		{"ML-DSA-44 key certified by a clean ML-DSA CA", certSigner(t, keyOf["ML-DSA-44"], cleanCA, "alice"), true},
		{"compromised ML-DSA key certified by a clean ML-DSA CA", certSigner(t, bad, cleanCA, "alice"), false},
		{"clean ML-DSA key certified by a compromised ML-DSA CA", certSigner(t, keyOf["ML-DSA-87"], badCA, "alice"), false},
	}
	for name, s := range keyOf {
		cases = append(cases, struct {
			name string
			key  ssh.Signer
			in   bool
		}{"clean " + name + " key", s, true})
	}
	for _, c := range cases {
		if got := login(t, addr, ssh.PublicKeys(c.key)); got != c.in {
			t.Errorf("%s (%s): logged in %v, want %v", c.name, c.key.PublicKey().Type(), got, c.in)
		}
		if !c.in && step.saw(c.key.PublicKey()) {
			t.Errorf("%s: the server's callback saw it", c.name)
		}
	}
}
