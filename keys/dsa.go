package keys

import (
	"bytes"
	//lint:ignore SA1019 crypto/x509 still reads DSA keys, which pkbf must look up
	"crypto/dsa"
	"crypto/x509"
	"math/big"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// maxFieldBits bounds the DSA and DH moduli pkbf computes with (OpenSSL's
// own limit), so that a hostile file cannot ask for an endless
// exponentiation. A variable, for fuzzing as maxPKCS12Iterations.
var maxFieldBits = 10000

// modpSPKI computes the public key y = g^x mod p of a DSA or DH private key
// in PKCS#8: params holds p and g (DSA: p, q, g; PKCS #3 DH: p, g, length;
// X9.42 DH: p, g, q, ...), priv the INTEGER x.
func modpSPKI(algorithm, params []byte, priv cryptobyte.String) ([]byte, error) {
	name := algorithmName(algorithm)
	var x cryptobyte.String
	if !priv.ReadASN1(&x, cbasn1.INTEGER) || !priv.Empty() {
		return nil, keyErrorf("PKCS#8 %s private key is not an INTEGER", name)
	}
	p, g, err := modpParams(algorithm, params)
	if err != nil {
		return nil, err
	}
	// A private value is smaller than the modulus (a DSA one than q, a
	// DH one than p or q), and the exponentiation's cost grows with its
	// length: a longer one is refused, not computed.
	exp := new(big.Int).SetBytes(x)
	if exp.BitLen() > p.BitLen() {
		return nil, keyErrorf("%s private value is %d bits, longer than its %d-bit modulus", name, exp.BitLen(), p.BitLen())
	}
	y := new(big.Int).Exp(g, exp, p)
	return Canonical(buildSPKIRaw(algorithm, params, intDER(signedMagnitude(y))))
}

// modpParams reads p and g from DSA or DH domain parameters.
func modpParams(algorithm, params []byte) (p, g *big.Int, err error) {
	name := algorithmName(algorithm)
	s := cryptobyte.String(params)
	var seq cryptobyte.String
	p, q, g := new(big.Int), new(big.Int), new(big.Int)
	ok := s.ReadASN1(&seq, cbasn1.SEQUENCE) && s.Empty() && seq.ReadASN1Integer(p)
	if bytes.Equal(algorithm, oidDSA) {
		ok = ok && seq.ReadASN1Integer(q) && seq.ReadASN1Integer(g)
	} else {
		ok = ok && seq.ReadASN1Integer(g)
	}
	switch {
	case !ok:
		return nil, nil, keyErrorf("%s private key's domain parameters are missing or malformed", name)
	case p.Sign() <= 0 || p.BitLen() > maxFieldBits || g.Sign() <= 0 || g.Cmp(p) >= 0:
		return nil, nil, keyErrorf("%s domain parameters are out of range (p of %d bits)", name, p.BitLen())
	}
	return p, g, nil
}

// signedMagnitude returns the content bytes of a non-negative INTEGER.
func signedMagnitude(v *big.Int) []byte {
	return append([]byte{0}, v.Bytes()...) // made minimal by intDER
}

// dsaPrivateSPKI reads an OpenSSL "DSA PRIVATE KEY": SEQUENCE { version 0,
// p, q, g, y, x }.
func dsaPrivateSPKI(der []byte) ([]byte, error) {
	s := cryptobyte.String(der)
	var seq, p, q, g, y cryptobyte.String
	var version int
	if !s.ReadASN1(&seq, cbasn1.SEQUENCE) || !s.Empty() || !seq.ReadASN1Integer(&version) ||
		!seq.ReadASN1(&p, cbasn1.INTEGER) || !seq.ReadASN1(&q, cbasn1.INTEGER) || !seq.ReadASN1(&g, cbasn1.INTEGER) ||
		!seq.ReadASN1(&y, cbasn1.INTEGER) || !seq.SkipASN1(cbasn1.INTEGER) || !seq.Empty() {
		return nil, keyErrorf("DSA private key is not a SEQUENCE of version, p, q, g, y and x")
	}
	if version != 0 {
		return nil, keyErrorf("DSA private key version is %d, want 0", version)
	}
	return dsaSPKI(p, q, g, y), nil
}

// MarshalPublicKey returns the SubjectPublicKeyInfo of a key crypto/x509
// parsed, in the form pkbf looks keys up under: x509.MarshalPKIXPublicKey's,
// and for a DSA key, which that cannot encode, OpenSSL's from its p, q, g
// and y. A program that takes a key as crypto/x509 reads an SPKI that
// [SPKI] refuses (a NULL after the BIT STRING, bytes after the key) checks
// the key under this encoding.
func MarshalPublicKey(pub any) ([]byte, error) {
	k, ok := pub.(*dsa.PublicKey)
	if !ok {
		return x509.MarshalPKIXPublicKey(pub)
	}
	if k.P == nil || k.Q == nil || k.G == nil || k.Y == nil {
		return nil, keyErrorf("DSA public key lacks p, q, g or y")
	}
	return dsaSPKI(signedMagnitude(k.P), signedMagnitude(k.Q), signedMagnitude(k.G), signedMagnitude(k.Y)), nil
}

// dsaSPKI builds the SPKI of a DSA key from the contents of its INTEGERs.
func dsaSPKI(p, q, g, y []byte) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddBytes(intDER(p))
		b.AddBytes(intDER(q))
		b.AddBytes(intDER(g))
	})
	return buildSPKIRaw(oidDSA, b.BytesOrPanic(), intDER(y))
}

// dsaParamsShape reports whether DSA domain parameters are absent (the
// key's issuer's, RFC 3279 section 2.3.2) or Dss-Parms: a SEQUENCE of
// three INTEGERs, p, q and g, and nothing else, as OpenSSL reads them. With
// more, pkbf would look the key up in a form no one writes, while
// crypto/x509 reads the key from the first three.
func dsaParamsShape(params []byte) bool {
	if len(params) == 0 {
		return true
	}
	s := cryptobyte.String(params)
	var seq cryptobyte.String
	return s.ReadASN1(&seq, cbasn1.SEQUENCE) && s.Empty() &&
		seq.SkipASN1(cbasn1.INTEGER) && seq.SkipASN1(cbasn1.INTEGER) && seq.SkipASN1(cbasn1.INTEGER) && seq.Empty()
}
