package keys

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"testing"
)

// PKCS#8 private keys of every type crypto/x509 writes.
func TestPKCS8(t *testing.T) {
	type signer interface{ Public() crypto.PublicKey }
	var ks []signer
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ks = append(ks, r)
	for _, c := range []elliptic.Curve{elliptic.P224(), elliptic.P256(), elliptic.P384(), elliptic.P521()} {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	x, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ks = append(ks, ed, x)
	for _, k := range ks {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		checkForms(t, "PRIVATE KEY "+keyTypeName(t, wantSPKI(t, k.Public())), "PRIVATE KEY", der, wantSPKI(t, k.Public()))
	}
}

// keyTypeName names an SPKI's key type, for test names.
func keyTypeName(t *testing.T, spki []byte) string {
	pub, err := x509.ParsePKIXPublicKey(spki)
	if err != nil {
		t.Fatal(err)
	}
	switch p := pub.(type) {
	case *ecdsa.PublicKey:
		return p.Curve.Params().Name
	case *rsa.PublicKey:
		return "RSA"
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return "X25519"
}
