package keys

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"testing"
)

// PKCS#1 public and private keys, as crypto/x509 writes them.
func TestPKCS1(t *testing.T) {
	for _, bits := range []int{1024, 2048} {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		want := wantSPKI(t, &k.PublicKey)
		checkForms(t, "RSA PUBLIC KEY", "RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&k.PublicKey), want)
		checkForms(t, "RSA PRIVATE KEY", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k), want)
	}
}
