package weakkeys

import (
	"bytes"
	"crypto/ecdh"
	"crypto/elliptic"
	"math/big"

	"github.com/pkbf/pkbf/internal/der"
)

// curve is one of the curves BR 6.1.5 allows.
type curve struct {
	name string
	oid  []byte // the named curve's OID, content bytes
	bits int
	size int // bytes of a coordinate
	ecdh ecdh.Curve
	p, b *big.Int // y² = x³ - 3x + b (mod p), to decompress points
}

var curves = []*curve{
	newCurve("P-256", der.OID(1, 2, 840, 10045, 3, 1, 7), ecdh.P256(), elliptic.P256()),
	newCurve("P-384", der.OID(1, 3, 132, 0, 34), ecdh.P384(), elliptic.P384()),
	newCurve("P-521", der.OID(1, 3, 132, 0, 35), ecdh.P521(), elliptic.P521()),
}

func newCurve(name string, oid []byte, c ecdh.Curve, params elliptic.Curve) *curve {
	p := params.Params()
	return &curve{name: name, oid: oid, bits: p.BitSize, size: (p.BitSize + 7) / 8, ecdh: c, p: p.P, b: p.B}
}

func curveByOID(oid []byte) *curve {
	for _, c := range curves {
		if bytes.Equal(c.oid, oid) {
			return c
		}
	}
	return nil
}

func curveByBits(bits int) *curve {
	for _, c := range curves {
		if c.bits == bits {
			return c
		}
	}
	return nil
}

func curveByName(name string) *curve {
	for _, c := range curves {
		if c.name == name {
			return c
		}
	}
	return nil
}

// validate checks an encoded point on c as SP 800-56A's full public-key
// validation does (5.6.2.3.3): coordinates in the field, on the curve,
// not the point at infinity; these curves' cofactor is 1, so a point on
// the curve also has the subgroup's order. It returns the x-coordinate,
// or a reason the point is not valid. RFC 5480 allows the uncompressed
// and compressed forms only.
func (c *curve) validate(point []byte) (x []byte, reason string) {
	switch {
	case len(point) == 1+2*c.size && point[0] == 4:
		if _, err := c.ecdh.NewPublicKey(point); err != nil {
			return nil, "not a point of the curve"
		}
		return point[1 : 1+c.size], ""
	case len(point) == 1+c.size && (point[0] == 2 || point[0] == 3):
		xi := new(big.Int).SetBytes(point[1:])
		if xi.Cmp(c.p) >= 0 {
			return nil, "x-coordinate not below the field's prime"
		}
		y := new(big.Int).Mul(xi, xi)
		y.Sub(y, big.NewInt(3))
		y.Mul(y, xi)
		y.Add(y, c.b)
		y.Mod(y, c.p)
		if y.ModSqrt(y, c.p) == nil {
			return nil, "no point of the curve has this x-coordinate"
		}
		if y.Bit(0) != uint(point[0]&1) {
			y.Sub(c.p, y)
		}
		full := make([]byte, 1+2*c.size)
		full[0] = 4
		xi.FillBytes(full[1 : 1+c.size])
		y.FillBytes(full[1+c.size:])
		if _, err := c.ecdh.NewPublicKey(full); err != nil {
			return nil, "not a point of the curve"
		}
		return point[1:], ""
	case len(point) == 1+2*c.size && (point[0] == 6 || point[0] == 7):
		return nil, "in the hybrid form, which RFC 5480 does not allow"
	}
	return nil, "not an encoded point of the curve's size"
}
