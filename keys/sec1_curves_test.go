package keys

import (
	"encoding/pem"
	"errors"
	"path/filepath"
	"testing"

	"github.com/pkbf/pkbf/internal/der"
	"github.com/pkbf/pkbf/internal/testkit"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// An EC private key without its public point, on every prime curve openssl generates keys on, named
// and with explicit parameters, and on a curve with no name: pkbf derives
// the public key openssl derives (testdata/keys/curves/gen.sh).
func TestEveryCurveWithoutPublicKey(t *testing.T) {
	dir := filepath.Join(keysDir, "curves")
	want := readPairs(t, filepath.Join(dir, "CANONICAL"))
	if len(want) < 60 {
		t.Fatalf("%d files in %s/CANONICAL, want one for each of openssl's prime curves", len(want), dir)
	}
	for name, fp := range want {
		spki, err := SPKI(testkit.ReadFile(t, filepath.Join(dir, name)))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		canonical, err := Canonical(spki)
		if err != nil {
			t.Errorf("%s: Canonical: %v", name, err)
			continue
		}
		if got := Fingerprint(canonical); got != fp {
			t.Errorf("%s: pkbf derives %s, openssl %s", name, got, fp)
		}
	}
}

// A private scalar that is zero or a multiple of the order has no public
// key: an error, not a point at infinity.
func TestPrivateKeyWithoutPublicPoint(t *testing.T) {
	k1 := curveByNamedOID(der.OID(1, 3, 132, 0, 10)) // secp256k1, computed in math/big
	p256 := curveByNamedOID(der.OID(1, 2, 840, 10045, 3, 1, 7))
	for _, tc := range []struct {
		c      *ecCurve
		scalar []byte
	}{{k1, []byte{0}}, {k1, k1.n.Bytes()}, {p256, []byte{0}}, {p256, p256.n.Bytes()}} {
		var b cryptobyte.Builder
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1Int64(1)
			b.AddASN1OctetString(tc.scalar)
			b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.OBJECT_IDENTIFIER, func(b *cryptobyte.Builder) { b.AddBytes(tc.c.oid) })
			})
		})
		_, err := SPKI(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: b.BytesOrPanic()}))
		if !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%s private key %x: %v, want ErrInvalidKey", tc.c.name, tc.scalar, err)
		}
	}
}
