package keys

import (
	"crypto/ecdsa"

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
// is computed, for the NIST curves.
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
	c, name := curveOfParams(curveParams)
	if c == nil {
		return nil, unsupportedErrorf("EC private key on curve %s carries no public key, and pkbf computes one only on P-224, P-256, P-384 and P-521", name)
	}
	if len(scalar) > c.size {
		return nil, keyErrorf("%s private key is %d bytes, want at most %d", c.name, len(scalar), c.size)
	}
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
	return ecSPKI(c, point), nil
}

// goCurveByOID returns the curve of a named curve's OID content bytes if
// crypto/ecdsa computes on it (P-224, P-256, P-384, P-521), or nil.
func goCurveByOID(oid []byte) *ecCurve {
	if c := curveByNamedOID(oid); c != nil && c.plain != nil {
		return c
	}
	return nil
}

// curveOfParams returns the curve of EC parameters (a named curve's OID,
// or explicit parameters of one) if crypto/ecdsa computes on it, or nil
// and the curve's name.
func curveOfParams(params []byte) (*ecCurve, string) {
	d := der.Reader(params)
	tag, _, content, ok := d.Next()
	if !ok {
		return nil, "(malformed parameters)"
	}
	var named *ecCurve
	switch tag {
	case der.TagOID:
		if c := goCurveByOID(content); c != nil {
			return c, c.name
		}
		named = curveByNamedOID(content)
		if named == nil {
			return nil, oidString(content)
		}
	case der.TagSequence:
		explicit, err := parseExplicitCurve(params)
		if err != nil {
			return nil, "(explicit parameters pkbf cannot read)"
		}
		if named = curveByParams(explicit); named == nil {
			return nil, "(explicit parameters of no named curve)"
		}
		if c := goCurveByOID(named.oid); c != nil {
			return c, c.name
		}
	default:
		return nil, "(implicit)"
	}
	return nil, named.name
}
