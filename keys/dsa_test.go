package keys

import (
	"math/big"
	"strings"
	"testing"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// A DH private value may be no longer than its modulus: one of any length
// would be exponentiated (a minute for 126 KB).
func TestModPPrivateValueLimit(t *testing.T) {
	p := new(big.Int).Lsh(big.NewInt(1), 511)
	p.Add(p, big.NewInt(1))
	var params cryptobyte.Builder
	params.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1BigInt(p)
		b.AddASN1BigInt(big.NewInt(2))
	})
	priv := func(bits int) cryptobyte.String {
		var b cryptobyte.Builder
		b.AddASN1BigInt(new(big.Int).Lsh(big.NewInt(1), uint(bits-1)))
		return cryptobyte.String(b.BytesOrPanic())
	}
	if _, err := modpSPKI(oidDHPKCS3, params.BytesOrPanic(), priv(512)); err != nil {
		t.Errorf("DH private value as long as its modulus: %v", err)
	}
	if _, err := modpSPKI(oidDHPKCS3, params.BytesOrPanic(), priv(513)); err == nil || !strings.Contains(err.Error(), "private value is 513 bits, longer than its 512-bit modulus") {
		t.Errorf("DH private value one bit longer than its modulus: %v", err)
	}
}
