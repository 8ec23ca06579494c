package keys

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"math/big"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/curves"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// explicitParams encodes ECParameters over the prime field of p with
// coefficients a and b (as given, not reduced), an encoded base point and
// an order.
func explicitParams(p *big.Int, a, b, base []byte, n *big.Int) []byte {
	var bld cryptobyte.Builder
	bld.AddASN1(cbasn1.SEQUENCE, func(b1 *cryptobyte.Builder) {
		b1.AddASN1Int64(1)
		b1.AddASN1(cbasn1.SEQUENCE, func(f *cryptobyte.Builder) {
			f.AddASN1ObjectIdentifier([]int{1, 2, 840, 10045, 1, 1})
			f.AddASN1BigInt(p)
		})
		b1.AddASN1(cbasn1.SEQUENCE, func(c *cryptobyte.Builder) {
			c.AddASN1OctetString(a)
			c.AddASN1OctetString(b)
		})
		b1.AddASN1OctetString(base)
		b1.AddASN1BigInt(n)
	})
	return bld.BytesOrPanic()
}

// testCurve is a curve y² = x³ + x - 1 mod p through the point (1, 1),
// with the explicit parameters and an SPKI of that point (compressed or
// not) for it.
func testCurve(p *big.Int, compressed bool) (params, spki []byte) {
	size := (p.BitLen() + 7) / 8
	one := make([]byte, size)
	one[size-1] = 1
	b := new(big.Int).Sub(p, big.NewInt(1)).FillBytes(make([]byte, size))
	point := append(append([]byte{4}, one...), one...)
	if compressed {
		point = append([]byte{3}, one...)
	}
	params = explicitParams(p, one, b, point, p)
	return params, buildSPKIRaw(oidECPublicKey, params, point)
}

// Moduli that are not odd primes are refused before any arithmetic: p = 10
// would panic in big.Jacobi, p = 9 (and every odd square) loop for ever in
// ModSqrt.
func TestExplicitCurveReproducers(t *testing.T) {
	const p10 = "MDMwKwYHKoZIzj0CATAgAgEBMAwGByqGSM49AQECAQowBgQBAAQBAQQCAgECAQcDBAAEAAE="
	for _, tc := range []struct{ name, b64, want string }{
		{"even prime p = 10", p10, "field modulus 10 is not an odd prime"},
		{"odd square p = 9", strings.Replace(p10, "AQo", "AQk", 1), "field modulus 9 is not prime"},
	} {
		der, err := base64.StdEncoding.DecodeString(tc.b64)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkKeyCalls(t, tc.name, der); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// Every p from 2 to 121 in the reproducer's shape: no panic, no hang, and
// only odd primes get past the field check.
func TestExplicitCurveSmallPrimes(t *testing.T) {
	for p := int64(2); p <= 121; p++ {
		for _, compressed := range []bool{false, true} {
			_, spki := testCurve(big.NewInt(p), compressed)
			err := checkKeyCalls(t, "p = "+big.NewInt(p).String(), spki)
			notPrime := err != nil && strings.Contains(err.Error(), "prime")
			if isPrime := p > 2 && big.NewInt(p).ProbablyPrime(20); isPrime == notPrime {
				t.Errorf("p = %d (compressed %v): error %v", p, compressed, err)
			}
		}
	}
}

func TestExplicitCurveLimits(t *testing.T) {
	prime := func(bits int) *big.Int {
		p, err := rand.Prime(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	largest, tooLarge := prime(maxCurveBits), prime(maxCurveBits+1)
	for _, compressed := range []bool{false, true} {
		_, spki := testCurve(largest, compressed)
		if err := checkKeyCalls(t, "largest prime", spki); err != nil {
			t.Errorf("a %d-bit prime (compressed %v): %v", maxCurveBits, compressed, err)
		}
		_, spki = testCurve(tooLarge, compressed)
		if err := checkKeyCalls(t, "prime one bit too long", spki); err == nil || !strings.Contains(err.Error(), "larger than the 661-bit limit") {
			t.Errorf("a %d-bit prime: error %v, want the limit", maxCurveBits+1, err)
		}
	}

	p := prime(256)
	size := 32
	one := make([]byte, size)
	one[size-1] = 1
	minusOne := new(big.Int).Sub(p, big.NewInt(1)).FillBytes(make([]byte, size))
	point := append(append([]byte{4}, one...), one...)
	order := func(bits int) *big.Int { return new(big.Int).Lsh(big.NewInt(1), uint(bits-1)) }
	// a + p is the same coefficient, unreduced, in as many bytes.
	aPlusP := new(big.Int).Add(p, big.NewInt(1))
	for _, tc := range []struct {
		name   string
		params []byte
		want   string // "" for accepted
	}{
		{"order of p's bits + 1", explicitParams(p, one, minusOne, point, order(257)), ""},
		{"order of p's bits + 2", explicitParams(p, one, minusOne, point, order(258)), "order (258 bits) is out of range"},
		{"order zero", explicitParams(p, one, minusOne, point, big.NewInt(0)), "order (0 bits) is out of range"},
		{"coefficient a unreduced", explicitParams(p, aPlusP.FillBytes(make([]byte, size)), minusOne, point, p), ""},
		{"coefficient longer than the field", explicitParams(p, append([]byte{1}, one...), minusOne, point, p), "longer than the 32-byte field"},
		{"base point off the curve", explicitParams(p, one, one, point, p), "base point (65 bytes, prefix 0x04) is malformed or not on the curve"},
	} {
		spki := buildSPKIRaw(oidECPublicKey, tc.params, point)
		err := checkKeyCalls(t, tc.name, spki)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestCurveTable checks every entry of the named-curve table as explicit
// parameters from a file are checked (ecCurves skips the primality test
// of p at run time), that the table parse gives the same curve, and that
// curveByNamedOID's shortcut for the NIST curves agrees with the map.
func TestCurveTable(t *testing.T) {
	if len(curves.Table) < 80 {
		t.Fatalf("the curve table has %d entries, want OpenSSL's 80 or more", len(curves.Table))
	}
	if n := len(nistCurves()); n != 3 {
		t.Errorf("curveByNamedOID's shortcut has %d NIST curves, want P-256, P-384 and P-521", n)
	}
	for i, e := range curves.Table {
		der, err := hex.DecodeString(e.Explicit)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		c, err := parseExplicitCurve(der)
		if err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		got := ecCurves()[i]
		if !got.sameParams(c) {
			t.Errorf("%s: the table parse gives other parameters than parseExplicitCurve", e.Name)
		}
		if byOID, want := curveByNamedOID(got.oid), curvesByOID()[string(got.oid)]; byOID != want || byOID == nil {
			t.Errorf("%s: curveByNamedOID gives %v, the map %v", e.Name, byOID, want)
		}
	}
}
