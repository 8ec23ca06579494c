package keys

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"testing"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// SEC 1 EC private keys as crypto/x509 writes them, and without their
// optional public key, which pkbf then computes from the private scalar.
func TestSEC1(t *testing.T) {
	for _, c := range []elliptic.Curve{elliptic.P224(), elliptic.P256(), elliptic.P384(), elliptic.P521()} {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		want := wantSPKI(t, &k.PublicKey)
		name := "EC PRIVATE KEY " + c.Params().Name
		checkForms(t, name, "EC PRIVATE KEY", der, want)
		checkForms(t, name+" without its public key", "EC PRIVATE KEY", withoutPublicKey(t, der), want)
	}
}

// withoutPublicKey re-encodes an ECPrivateKey without its [1] publicKey.
func withoutPublicKey(t *testing.T, der []byte) []byte {
	in := cryptobyte.String(der)
	var seq, priv, params cryptobyte.String
	var version int64
	if !in.ReadASN1(&seq, cbasn1.SEQUENCE) || !seq.ReadASN1Integer(&version) ||
		!seq.ReadASN1(&priv, cbasn1.OCTET_STRING) || !seq.ReadASN1Element(&params, cbasn1.Tag(0).Constructed().ContextSpecific()) {
		t.Fatal("cannot read the ECPrivateKey crypto/x509 wrote")
	}
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1Int64(version)
		b.AddASN1OctetString(priv)
		b.AddBytes(params)
	})
	return b.BytesOrPanic()
}
