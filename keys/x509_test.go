package keys

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
	"math/big"
	"testing"
	"time"
)

// Certificates and requests made by crypto/x509: their SPKI as it stands.
func TestCertificatesAndRequests(t *testing.T) {
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []crypto.Signer{r, e, ed} {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pkbf test"}, NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<31, 0)}
		certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(certDER)
		if err != nil {
			t.Fatal(err)
		}
		name := keyTypeName(t, cert.RawSubjectPublicKeyInfo)
		checkForms(t, name+" certificate", "CERTIFICATE", certDER, cert.RawSubjectPublicKeyInfo)
		csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: tmpl.Subject}, k)
		if err != nil {
			t.Fatal(err)
		}
		csr, err := x509.ParseCertificateRequest(csrDER)
		if err != nil {
			t.Fatal(err)
		}
		checkForms(t, name+" request", "CERTIFICATE REQUEST", csrDER, csr.RawSubjectPublicKeyInfo)
		if !bytes.Equal(cert.RawSubjectPublicKeyInfo, wantSPKI(t, k.Public())) {
			t.Fatalf("%s: crypto/x509 wrote a certificate whose SPKI is not its own encoding", name)
		}
	}
}
