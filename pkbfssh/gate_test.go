package pkbfssh

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
)

// newSSHKey returns a new Ed25519 key, its SSH public key and its SPKI.
func newSSHKey(t *testing.T) (crypto.Signer, ssh.PublicKey, []byte) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return priv, pub, spki
}

// certKey returns the Key pkbfssh reads from a user certificate of pub,
// for alice, signed by ca.
func certKey(t *testing.T, pub ssh.PublicKey, ca crypto.Signer) *Key {
	t.Helper()
	signer, err := ssh.NewSignerFromSigner(ca)
	if err != nil {
		t.Fatal(err)
	}
	cert := &ssh.Certificate{Key: pub, CertType: ssh.UserCert, KeyId: "alice", ValidPrincipals: []string{"alice"}, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, signer); err != nil {
		t.Fatal(err)
	}
	k, err := ParseKey(cert.Type(), base64.StdEncoding.EncodeToString(cert.Marshal()))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// failing is a filter whose file was cut short under it.
type failing struct{}

func (failing) CheckKey([]byte) keycheck.Verdict { return keycheck.Verdict{Err: pkbf.ErrFileChanged} }

// Issue 43, item 1: which key of a certificate is compromised, its own or
// its CA's, is decided in one place, Key.CompromisedKey, which
// PublicKeyCallback and the Gate's reasons share.
func TestCompromisedKey(t *testing.T) {
	_, plainPub, plainSPKI := newSSHKey(t)
	_, certPub, certSPKI := newSSHKey(t)
	caPriv, _, caSPKI := newSSHKey(t)
	plain, err := ParseKey(plainPub.Type(), base64.StdEncoding.EncodeToString(plainPub.Marshal()))
	if err != nil {
		t.Fatal(err)
	}
	cert := certKey(t, certPub, caPriv)
	holding := func(spkis ...[]byte) keycheck.KeyChecker {
		w, err := pkbf.New(4, 16)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range spkis {
			if _, err := keycheck.AddKey(w, s); err != nil {
				t.Fatal(err)
			}
		}
		return keycheck.New(w, keycheck.Options{})
	}
	for _, tc := range []struct {
		name string
		key  *Key
		f    keycheck.KeyChecker
		want *Key
		err  error
	}{
		{"plain key held", plain, holding(plainSPKI), plain, nil},
		{"plain key clean", plain, holding(certSPKI), nil, nil},
		{"certified key held", cert, holding(certSPKI), cert, nil},
		{"CA key held", cert, holding(caSPKI), cert.CA, nil},
		{"both held: the certified key first", cert, holding(certSPKI, caSPKI), cert, nil},
		{"certificate clean", cert, holding(plainSPKI), nil, nil},
		{"filter failed: the key itself, not clean", cert, failing{}, cert, pkbf.ErrFileChanged},
	} {
		got, err := tc.key.CompromisedKey(tc.f)
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, got, err, tc.want, tc.err)
		}
		if bad, _ := tc.key.Compromised(tc.f); bad != (tc.want != nil) {
			t.Errorf("%s: Compromised says %v", tc.name, bad)
		}
	}
}
