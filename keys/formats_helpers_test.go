package keys

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"
)

// wantSPKI is what crypto/x509 encodes for pub: the SPKI pkbf must give
// for any form of the key that it reads as OpenSSL does.
func wantSPKI(t *testing.T, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// checkForms checks that SPKI reads der, and its PEM with the given type,
// to want; and that every strict prefix of der is refused with an error
// wrapping ErrInvalidKey, never read as something else.
func checkForms(t *testing.T, name, pemType string, der, want []byte) {
	t.Helper()
	for form, in := range map[string][]byte{"DER": der, "PEM": pem.EncodeToMemory(&pem.Block{Type: pemType, Bytes: der})} {
		got, err := SPKI(in)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s %s: SPKI = %x, %v; want %x", name, form, got, err, want)
		}
	}
	for _, n := range []int{len(der) - 1, len(der) / 2, 3} {
		if _, err := SPKI(der[:n]); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%s cut to %d of %d bytes: %v, want ErrInvalidKey", name, n, len(der), err)
		}
	}
}
