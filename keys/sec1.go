package keys

import (
	"bytes"
	"crypto/ecdsa"
	"math/big"

	"github.com/pkbf/pkbf/internal/der"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// sec1SPKI reads an ECPrivateKey: SEQUENCE { version 1, OCTET STRING
// privateKey, [0] ECParameters OPTIONAL, [1] publicKey OPTIONAL }. outer is
// the encoding of the curve's parameters (a named curve's OID or explicit
// parameters) from around the key: a PKCS#8 AlgorithmIdentifier or an
// "EC PARAMETERS" PEM block; the key's own, when it has them, win. The
// public key the key carries is used as it is (any curve); without one it
// is computed, as OpenSSL computes it, on any prime curve.
func sec1SPKI(der []byte, outer []byte) ([]byte, error) {
	s := cryptobyte.String(der)
	var seq, scalar, params, pub cryptobyte.String
	var version int
	var hasParams, hasPub bool
	if !s.ReadASN1(&seq, cbasn1.SEQUENCE) || !s.Empty() ||
		!seq.ReadASN1Integer(&version) ||
		!seq.ReadASN1(&scalar, cbasn1.OCTET_STRING) ||
		!seq.ReadOptionalASN1(&params, &hasParams, cbasn1.Tag(0).Constructed().ContextSpecific()) ||
		!seq.ReadOptionalASN1(&pub, &hasPub, cbasn1.Tag(1).Constructed().ContextSpecific()) || !seq.Empty() {
		return nil, keyErrorf("EC private key is malformed")
	}
	if version != 1 {
		return nil, keyErrorf("EC private key version is %d, want 1", version)
	}
	curveParams := outer
	if hasParams {
		curveParams = params
	}
	if len(curveParams) == 0 {
		return nil, keyErrorf("EC private key does not name its curve")
	}
	if hasPub {
		var point cryptobyte.String
		if !pub.ReadASN1BitStringAsBytes((*[]byte)(&point)) || !pub.Empty() {
			return nil, keyErrorf("EC private key's public key is not a BIT STRING")
		}
		return Canonical(buildSPKIRaw(oidECPublicKey, curveParams, point))
	}
	c, err := curveOfParams(curveParams)
	if err != nil {
		return nil, err
	}
	// The scalar is as long as the curve's order, which may be a byte
	// longer than its field elements (secp160k1, secp224k1).
	scalar = bytes.TrimLeft(scalar, "\x00")
	if max := (c.n.BitLen() + 7) / 8; len(scalar) > max {
		return nil, keyErrorf("%s private key is %d bytes, want at most %d", c.name, len(scalar), max)
	}
	point, err := c.publicKey(scalar)
	if err != nil {
		return nil, err
	}
	return Canonical(buildSPKIRaw(oidECPublicKey, curveParams, point))
}

// publicKey computes the uncompressed public point of a private scalar, as
// OpenSSL does for a key file that lacks it: with crypto/ecdsa on the NIST
// curves (in constant time), else in math/big.
func (c *ecCurve) publicKey(scalar []byte) ([]byte, error) {
	if c.plain != nil && len(scalar) <= c.size {
		padded := make([]byte, c.size)
		copy(padded[c.size-len(scalar):], scalar)
		priv, err := ecdsa.ParseRawPrivateKey(c.plain, padded)
		if err != nil {
			return nil, keyErrorf("%s private key is out of range", c.name)
		}
		point, err := priv.PublicKey.Bytes()
		if err != nil {
			return nil, keyErrorf("%s private key: %v", c.name, err)
		}
		return point, nil
	}
	if c.binary != nil {
		return nil, unsupportedErrorf("EC private key on %s, a curve over GF(2^%d), carries no public key, and pkbf computes one only on prime curves", c.name, c.binary.m)
	}
	d := new(big.Int).SetBytes(scalar)
	x, y, ok := c.scalarBaseMult(d.Mod(d, c.n))
	if !ok {
		return nil, keyErrorf("%s private key is a multiple of the curve's order: it has no public key", c.name)
	}
	return c.uncompressed(x, y), nil
}

// curveOfParams returns the curve of EC parameters: a named curve's OID,
// or explicit parameters (of a named curve or of none).
func curveOfParams(params []byte) (*ecCurve, error) {
	d := der.Reader(params)
	tag, _, content, ok := d.Next()
	if !ok {
		return nil, keyErrorf("EC private key's curve parameters are malformed")
	}
	switch tag {
	case der.TagOID:
		if c := curveByNamedOID(content); c != nil {
			return c, nil
		}
		return nil, unsupportedErrorf("EC private key on curve %s carries no public key, and pkbf knows no parameters of that curve to compute one", oidString(content))
	case der.TagSequence:
		explicit, err := parseExplicitCurve(params)
		if err != nil {
			return nil, err
		}
		if named := curveByParams(explicit); named != nil {
			return named, nil
		}
		explicit.name = "an unnamed curve"
		return explicit, nil
	}
	return nil, unsupportedErrorf("EC private key has implicit curve parameters and no public key")
}
