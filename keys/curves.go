package keys

import (
	"bytes"
	"crypto/ecdh"
	"crypto/elliptic"
	"encoding/hex"
	"math/big"
	"sync"

	"github.com/pkbf/pkbf/internal/curves"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// An ecCurve is an elliptic curve as OpenSSL knows it (internal/curves):
// over a prime field, y² = x³ + ax + b mod p, or over GF(2^m),
// y² + xy = x³ + ax² + b; enough to name a curve given by explicit
// parameters and to convert between point forms.
type ecCurve struct {
	name          string // OpenSSL's name, or P-256 and so on for the NIST curves
	oid           []byte // content bytes of the named-curve OID
	p, a, b, n    *big.Int
	gx, gy        *big.Int
	size          int            // bytes in a field element
	plain         elliptic.Curve // the standard library's, for NIST curves, or nil
	ecdh          ecdh.Curve     // for P-256, P-384 and P-521: computes public keys
	ssh           string         // OpenSSH's name for those ("nistp256"), or ""
	firstOfParams bool           // the first curve in the table with these parameters
	binary        *gf2m          // over GF(2^m): the field (p then holds its polynomial); nil over a prime field
}

// nistNames gives the NIST curves their usual names.
var nistNames = map[string]string{"prime192v1": "P-192", "secp224r1": "P-224", "prime256v1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}

// ecCurves parses the curve table once.
var ecCurves = sync.OnceValue(func() []*ecCurve {
	var out []*ecCurve
	for _, t := range curves.Table {
		oidDER, _ := hex.DecodeString(t.OID)
		explicit, _ := hex.DecodeString(t.Explicit)
		c, err := parseCurve(explicit, true)
		if err != nil || len(oidDER) < 2 {
			panic("pkbf: bad curve table entry " + t.Name) // generated: cannot happen
		}
		c.name, c.oid = t.Name, oidDER[2:]
		if n, ok := nistNames[t.Name]; ok {
			c.name = n
		}
		switch c.name {
		case "P-224":
			c.plain = elliptic.P224()
		case "P-256":
			c.plain, c.ecdh, c.ssh = elliptic.P256(), ecdh.P256(), "nistp256"
		case "P-384":
			c.plain, c.ecdh, c.ssh = elliptic.P384(), ecdh.P384(), "nistp384"
		case "P-521":
			c.plain, c.ecdh, c.ssh = elliptic.P521(), ecdh.P521(), "nistp521"
		}
		c.firstOfParams = true
		for _, o := range out {
			if o.sameParams(c) {
				c.firstOfParams = false
			}
		}
		out = append(out, c)
	}
	return out
})

// maxCurveBits bounds the prime of explicit curve parameters: OpenSSL's
// own limit (OPENSSL_ECC_MAX_FIELD_BITS), well above the 521 bits of the
// largest named prime curve. It keeps every square root and scalar
// multiplication on a hostile curve to a few milliseconds.
const maxCurveBits = 661

// parseExplicitCurve reads explicit ECParameters (SEC 1 C.2) over a prime
// field: version, fieldID {prime-field, p}, curve {a, b, seed}, base point,
// order, cofactor. The base point may be in any form. The parameters are
// validated before any arithmetic: p an odd prime of at most maxCurveBits
// bits, a and b reduced mod p, an order no longer than Hasse's bound
// allows, and a base point on the curve.
func parseExplicitCurve(der []byte) (*ecCurve, error) { return parseCurve(der, false) }

// parseCurve is parseExplicitCurve; for the generated table of named
// curves (tabled), it skips the primality test of p, tens of milliseconds
// for the whole table in every process that meets an EC key
// (TestCurveTable runs it on every entry).
func parseCurve(der []byte, tabled bool) (*ecCurve, error) {
	s := cryptobyte.String(der)
	var params, field, curveSeq, fieldType, a, b, base cryptobyte.String
	var version int
	n := new(big.Int)
	if !s.ReadASN1(&params, cbasn1.SEQUENCE) || !s.Empty() ||
		!params.ReadASN1Integer(&version) ||
		!params.ReadASN1(&field, cbasn1.SEQUENCE) || !field.ReadASN1(&fieldType, cbasn1.OBJECT_IDENTIFIER) {
		return nil, keyErrorf("EC explicit curve parameters are malformed")
	}
	c := &ecCurve{n: n}
	switch {
	case bytes.Equal(fieldType, oidPrimeField):
		c.p = new(big.Int)
		if !field.ReadASN1Integer(c.p) || !field.Empty() {
			return nil, keyErrorf("EC explicit curve parameters are malformed")
		}
		if !tabled {
			if err := checkCurvePrime(c.p); err != nil {
				return nil, err
			}
		}
		c.size = (c.p.BitLen() + 7) / 8
	case bytes.Equal(fieldType, oidCharTwoField):
		F, err := parseCharTwoField(field)
		if err != nil {
			return nil, err
		}
		c.binary, c.p, c.size = F, F.f, (F.m+7)/8
	default:
		return nil, unsupportedErrorf("EC explicit curve parameters are over field type %s, not a prime or binary field", oidString(fieldType))
	}
	if !params.ReadASN1(&curveSeq, cbasn1.SEQUENCE) ||
		!curveSeq.ReadASN1(&a, cbasn1.OCTET_STRING) || !curveSeq.ReadASN1(&b, cbasn1.OCTET_STRING) ||
		!curveSeq.SkipOptionalASN1(cbasn1.BIT_STRING) || !curveSeq.Empty() ||
		!params.ReadASN1(&base, cbasn1.OCTET_STRING) ||
		!params.ReadASN1Integer(n) ||
		!params.SkipOptionalASN1(cbasn1.INTEGER) || !params.Empty() {
		return nil, keyErrorf("EC explicit curve parameters are malformed")
	}
	if len(a) > c.size || len(b) > c.size {
		return nil, keyErrorf("EC explicit curve coefficients are %d and %d bytes, longer than the %d-byte field", len(a), len(b), c.size)
	}
	fieldBits := c.p.BitLen()
	if c.binary != nil {
		fieldBits = c.binary.m
	}
	if n.Sign() <= 0 || n.BitLen() > fieldBits+1 {
		return nil, keyErrorf("EC explicit curve order (%d bits) is out of range for a %d-bit field", n.BitLen(), fieldBits)
	}
	c.a = new(big.Int).SetBytes(a)
	c.b = new(big.Int).SetBytes(b)
	if c.binary != nil {
		if c.a.BitLen() > c.binary.m || c.b.BitLen() > c.binary.m {
			return nil, keyErrorf("EC explicit curve coefficients are not elements of GF(2^%d)", c.binary.m)
		}
	} else {
		c.a.Mod(c.a, c.p)
		c.b.Mod(c.b, c.p)
	}
	x, y, ok := c.decodePoint(base)
	if !ok {
		return nil, keyErrorf("EC explicit curve's base point (%d bytes, prefix %#02x) is malformed or not on the curve", len(base), first(base))
	}
	c.gx, c.gy = x, y
	return c, nil
}

// parseCharTwoField reads the parameters of a characteristic-two field
// (X9.62): SEQUENCE { m, basis OID, trinomial exponent k or pentanomial
// exponents k1 < k2 < k3 }, for the reduction polynomial x^m + x^k + 1 or
// x^m + x^k3 + x^k2 + x^k1 + 1. Normal bases are not supported (OpenSSL
// does not support them either).
func parseCharTwoField(field cryptobyte.String) (*gf2m, error) {
	var ch2, basis cryptobyte.String
	var m int
	if !field.ReadASN1(&ch2, cbasn1.SEQUENCE) || !field.Empty() || !ch2.ReadASN1Integer(&m) || !ch2.ReadASN1(&basis, cbasn1.OBJECT_IDENTIFIER) {
		return nil, keyErrorf("EC explicit characteristic-two field parameters are malformed")
	}
	if m < 2 || m > maxCurveBits {
		return nil, keyErrorf("EC explicit characteristic-two field has degree %d, want 2 to %d", m, maxCurveBits)
	}
	var exps []int
	switch {
	case bytes.Equal(basis, oidTPBasis):
		var k int
		if !ch2.ReadASN1Integer(&k) || !ch2.Empty() {
			return nil, keyErrorf("EC explicit trinomial basis is malformed")
		}
		exps = []int{k}
	case bytes.Equal(basis, oidPPBasis):
		var pp cryptobyte.String
		var k1, k2, k3 int
		if !ch2.ReadASN1(&pp, cbasn1.SEQUENCE) || !ch2.Empty() || !pp.ReadASN1Integer(&k1) || !pp.ReadASN1Integer(&k2) || !pp.ReadASN1Integer(&k3) || !pp.Empty() || !(k1 < k2 && k2 < k3) {
			return nil, keyErrorf("EC explicit pentanomial basis is malformed")
		}
		exps = []int{k1, k2, k3}
	default:
		return nil, unsupportedErrorf("EC explicit characteristic-two field has basis %s: only trinomial and pentanomial bases are supported", oidString(basis))
	}
	f := new(big.Int).SetBit(new(big.Int), m, 1)
	f.SetBit(f, 0, 1)
	for _, k := range exps {
		if k <= 0 || k >= m {
			return nil, keyErrorf("EC explicit characteristic-two field's polynomial has exponent %d outside 1 to %d", k, m-1)
		}
		f.SetBit(f, k, 1)
	}
	return &gf2m{m: m, f: f}, nil
}

// checkCurvePrime checks that p is an odd prime of at most maxCurveBits
// bits, as the arithmetic on its field needs: a square root mod an even
// or composite p can panic or never end.
func checkCurvePrime(p *big.Int) error {
	switch {
	case p.BitLen() > maxCurveBits:
		return keyErrorf("EC explicit curve's prime is %d bits, larger than the %d-bit limit", p.BitLen(), maxCurveBits)
	case p.Cmp(big.NewInt(3)) < 0 || p.Bit(0) == 0:
		return keyErrorf("EC explicit curve's field modulus %v is not an odd prime", p)
	case !p.ProbablyPrime(1): // Baillie-PSW and one Miller-Rabin round
		if p.BitLen() > 64 {
			return keyErrorf("EC explicit curve's %d-bit field modulus is not prime", p.BitLen())
		}
		return keyErrorf("EC explicit curve's field modulus %v is not prime", p)
	}
	return nil
}

func (c *ecCurve) sameParams(o *ecCurve) bool {
	return (c.binary == nil) == (o.binary == nil) && c.p.Cmp(o.p) == 0 && c.a.Cmp(o.a) == 0 && c.b.Cmp(o.b) == 0 && c.n.Cmp(o.n) == 0 && c.gx.Cmp(o.gx) == 0 && c.gy.Cmp(o.gy) == 0
}

// curveByParams returns the named curve with the parameters of c, as
// OpenSSL maps explicit parameters to a named curve, or nil.
func curveByParams(c *ecCurve) *ecCurve {
	for _, k := range ecCurves() {
		if k.firstOfParams && k.sameParams(c) {
			return k
		}
	}
	return nil
}

// curvesByOID indexes ecCurves by the named-curve OID's content bytes.
var curvesByOID = sync.OnceValue(func() map[string]*ecCurve {
	m := map[string]*ecCurve{}
	for _, c := range ecCurves() {
		if _, dup := m[string(c.oid)]; !dup {
			m[string(c.oid)] = c
		}
	}
	return m
})

// curveByNamedOID returns the curve whose named-curve OID has the content
// bytes oid, or nil. The NIST curves, which nearly every key uses, are
// compared first, before the map's string hash.
func curveByNamedOID(oid []byte) *ecCurve {
	for _, c := range nistCurves() {
		if bytes.Equal(oid, c.oid) {
			return c
		}
	}
	return curvesByOID()[string(oid)]
}

// nistCurves are P-256, P-384 and P-521 from ecCurves.
var nistCurves = sync.OnceValue(func() []*ecCurve {
	var out []*ecCurve
	for _, c := range ecCurves() {
		if c.name == "P-256" || c.name == "P-384" || c.name == "P-521" {
			out = append(out, c)
		}
	}
	return out
})

// decodePoint reads a point in uncompressed (04), compressed (02, 03) or
// hybrid (06, 07) form and returns its affine coordinates, checking that
// it lies on the curve.
func (c *ecCurve) decodePoint(pt []byte) (x, y *big.Int, ok bool) {
	if len(pt) == 0 {
		return nil, nil, false
	}
	if c.binary != nil {
		return c.decodeBinaryPoint(pt)
	}
	switch {
	case len(pt) == 1+c.size && (pt[0] == 2 || pt[0] == 3):
		x = new(big.Int).SetBytes(pt[1:])
		if x.Cmp(c.p) >= 0 {
			return nil, nil, false
		}
		if c.plain != nil {
			px, py := elliptic.UnmarshalCompressed(c.plain, pt)
			return px, py, px != nil
		}
		y = c.rhs(x)
		if y.ModSqrt(y, c.p) == nil {
			return nil, nil, false
		}
		if y.Bit(0) != uint(pt[0]&1) {
			y.Sub(c.p, y)
		}
		return x, y, true
	case len(pt) == 1+2*c.size && (pt[0] == 4 || pt[0] == 6 || pt[0] == 7):
		x = new(big.Int).SetBytes(pt[1 : 1+c.size])
		y = new(big.Int).SetBytes(pt[1+c.size:])
		if pt[0] != 4 && y.Bit(0) != uint(pt[0]&1) {
			return nil, nil, false
		}
		return x, y, c.onCurve(x, y)
	}
	return nil, nil, false
}

// rhs returns x³ + ax + b mod p.
func (c *ecCurve) rhs(x *big.Int) *big.Int {
	r := new(big.Int).Mul(x, x)
	r.Add(r, c.a)
	r.Mul(r, x)
	r.Add(r, c.b)
	return r.Mod(r, c.p)
}

func (c *ecCurve) onCurve(x, y *big.Int) bool {
	if c.binary != nil {
		return c.onBinaryCurve(x, y)
	}
	if x.Cmp(c.p) >= 0 || y.Cmp(c.p) >= 0 {
		return false
	}
	y2 := new(big.Int).Mul(y, y)
	return y2.Mod(y2, c.p).Cmp(c.rhs(x)) == 0
}

// uncompressed and compressed encode a point.
func (c *ecCurve) uncompressed(x, y *big.Int) []byte {
	b := make([]byte, 1+2*c.size)
	b[0] = 4
	x.FillBytes(b[1 : 1+c.size])
	y.FillBytes(b[1+c.size:])
	return b
}

func (c *ecCurve) compressed(x, y *big.Int) []byte {
	b := make([]byte, 1+c.size)
	b[0] = 2 | c.yBit(x, y)
	x.FillBytes(b[1:])
	return b
}

// nistCurveByOID returns P-256, P-384 or P-521 by its OID's content
// bytes, or nil: the curves pkbf computes public keys on.
func nistCurveByOID(oid []byte) *ecCurve {
	if c := curveByNamedOID(oid); c != nil && c.ecdh != nil {
		return c
	}
	return nil
}

// curveBySSHName returns the curve OpenSSH names name ("nistp256"), or nil.
func curveBySSHName(name string) *ecCurve {
	for _, c := range ecCurves() {
		if c.ssh != "" && c.ssh == name {
			return c
		}
	}
	return nil
}

// pointKind checks the length and prefix of an encoded point on c and
// reports whether it is compressed.
func (c *ecCurve) pointKind(point []byte) (compressed bool, err error) {
	switch {
	case len(point) == 1+2*c.size && (point[0] == 4 || point[0] == 6 || point[0] == 7): // 6, 7: hybrid
		return false, nil
	case len(point) == 1+c.size && (point[0] == 2 || point[0] == 3):
		return true, nil
	}
	return false, keyErrorf("%s point is %d bytes with prefix %#02x, want %d uncompressed (or hybrid) or %d compressed", c.name, len(point), first(point), 1+2*c.size, 1+c.size)
}

// scalarBaseMult returns d·G in affine coordinates, or ok false when d·G
// is the point at infinity (d a multiple of the order). It is plain
// double-and-add in math/big, variable-time: it serves only to compute the
// public key of a private key file that lacks one on a curve the standard
// library does not know, where speed does not matter.
func (c *ecCurve) scalarBaseMult(d *big.Int) (x, y *big.Int, ok bool) {
	var rx, ry *big.Int // nil: the point at infinity
	for i := d.BitLen() - 1; i >= 0; i-- {
		rx, ry = c.add(rx, ry, rx, ry)
		if d.Bit(i) == 1 {
			rx, ry = c.add(rx, ry, c.gx, c.gy)
		}
	}
	return rx, ry, rx != nil
}

// add returns the sum of two affine points, either of which may be the
// point at infinity (nil coordinates).
func (c *ecCurve) add(x1, y1, x2, y2 *big.Int) (x, y *big.Int) {
	switch {
	case x1 == nil:
		return x2, y2
	case x2 == nil:
		return x1, y1
	}
	p := c.p
	var lambda *big.Int
	if x1.Cmp(x2) == 0 {
		if new(big.Int).Add(y1, y2).Mod(new(big.Int).Add(y1, y2), p).Sign() == 0 {
			return nil, nil // P + (-P), or doubling a point of order 2
		}
		// λ = (3x² + a) / 2y
		num := new(big.Int).Mul(x1, x1)
		num.Mul(num, big.NewInt(3)).Add(num, c.a)
		den := new(big.Int).Lsh(y1, 1)
		lambda = num.Mul(num, den.ModInverse(den.Mod(den, p), p))
	} else {
		// λ = (y2 - y1) / (x2 - x1)
		num := new(big.Int).Sub(y2, y1)
		den := new(big.Int).Sub(x2, x1)
		lambda = num.Mul(num, den.ModInverse(den.Mod(den, p), p))
	}
	lambda.Mod(lambda, p)
	x = new(big.Int).Mul(lambda, lambda)
	x.Sub(x, x1).Sub(x, x2).Mod(x, p)
	y = new(big.Int).Sub(x1, x)
	y.Mul(y, lambda).Sub(y, y1).Mod(y, p)
	return x, y
}
