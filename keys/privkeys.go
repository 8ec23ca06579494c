package keys

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"math/big"

	"github.com/cloudflare/circl/dh/x448"
	"github.com/cloudflare/circl/sign/ed448"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// Private keys: the public key is taken from the file where it carries
// one, or computed from the private key. The SPKI is returned in its
// canonical form (see Canonical), as OpenSSL writes it from the key.

// maxFieldBits bounds the DSA and DH moduli pkbf computes with (OpenSSL's
// own limit), so that a hostile file cannot ask for an endless
// exponentiation. A variable, for fuzzing as maxPKCS12Iterations.
var maxFieldBits = 10000

// pkcs8SPKI reads a PKCS#8 PrivateKeyInfo or OneAsymmetricKey: SEQUENCE {
// version, AlgorithmIdentifier, OCTET STRING privateKey, [0] attributes
// OPTIONAL, [1] publicKey OPTIONAL }.
func pkcs8SPKI(der []byte) ([]byte, error) {
	s := cryptobyte.String(der)
	var seq, alg, algorithm, priv, pub cryptobyte.String
	var version int
	var hasPub bool
	if !s.ReadASN1(&seq, cbasn1.SEQUENCE) || !s.Empty() ||
		!seq.ReadASN1Integer(&version) ||
		!seq.ReadASN1(&alg, cbasn1.SEQUENCE) || !readOID(&alg, &algorithm) ||
		!seq.ReadASN1(&priv, cbasn1.OCTET_STRING) ||
		!seq.SkipOptionalASN1(cbasn1.Tag(0).Constructed().ContextSpecific()) ||
		!seq.ReadOptionalASN1(&pub, &hasPub, cbasn1.Tag(1).ContextSpecific()) || !seq.Empty() {
		return nil, keyErrorf("PKCS#8 private key is malformed")
	}
	name := algorithmName(algorithm)
	if version != 0 && version != 1 {
		return nil, keyErrorf("PKCS#8 %s private key version is %d, want 0 or 1", name, version)
	}
	params := []byte(alg) // the parameters' whole encoding, or empty
	if hasPub {
		// The file carries the public key (RFC 5958): use it as it is.
		if len(pub) == 0 || pub[0] != 0 {
			return nil, keyErrorf("PKCS#8 %s public key BIT STRING is malformed", name)
		}
		return Canonical(buildSPKIRaw(algorithm, params, pub[1:]))
	}
	switch {
	case bytes.Equal(algorithm, oidRSA):
		return pkcs1PrivateSPKI(priv)
	case bytes.Equal(algorithm, oidRSAPSS):
		// OpenSSL writes the SPKI of an RSA-PSS key with the
		// AlgorithmIdentifier of the private key: the same parameters.
		n, e, err := pkcs1PrivatePublic(priv) // magnitudes: made INTEGER contents
		if err != nil {
			return nil, err
		}
		return Canonical(buildSPKIRaw(algorithm, params, rsaKeyDER(append([]byte{0}, n...), append([]byte{0}, e...))))
	case bytes.Equal(algorithm, oidECPublicKey):
		return sec1SPKI(priv, params)
	case bytes.Equal(algorithm, oidEd25519), bytes.Equal(algorithm, oidEd448),
		bytes.Equal(algorithm, oidX25519), bytes.Equal(algorithm, oidX448):
		var k cryptobyte.String
		if !priv.ReadASN1(&k, cbasn1.OCTET_STRING) || !priv.Empty() {
			return nil, keyErrorf("PKCS#8 %s private key is not an OCTET STRING", name)
		}
		pub, err := derivePublic(algorithm, k)
		if err != nil {
			return nil, err
		}
		return buildSPKIRaw(algorithm, nil, pub), nil
	case bytes.Equal(algorithm, oidDSA), bytes.Equal(algorithm, oidDHPKCS3), bytes.Equal(algorithm, oidDHX942):
		return modpSPKI(algorithm, params, priv)
	case bytes.Equal(algorithm, oidPBES2):
		return nil, encryptedErrorf("PKCS#8 key is encrypted: its public key cannot be read without the passphrase")
	}
	return nil, unsupportedErrorf("PKCS#8 private key of algorithm %s carries no public key, and pkbf cannot compute one", name)
}

// derivePublic computes the public key of an EdDSA or XDH private key.
func derivePublic(algorithm, k []byte) ([]byte, error) {
	name := algorithmName(algorithm)
	bad := func(want int) ([]byte, error) {
		return nil, keyErrorf("%s private key is %d bytes, want %d", name, len(k), want)
	}
	switch {
	case bytes.Equal(algorithm, oidEd25519):
		if len(k) != ed25519.SeedSize {
			return bad(ed25519.SeedSize)
		}
		return ed25519.NewKeyFromSeed(k).Public().(ed25519.PublicKey), nil
	case bytes.Equal(algorithm, oidX25519):
		priv, err := ecdh.X25519().NewPrivateKey(k)
		if err != nil {
			return bad(32)
		}
		return priv.PublicKey().Bytes(), nil
	case bytes.Equal(algorithm, oidEd448):
		if len(k) != ed448.SeedSize {
			return bad(ed448.SeedSize)
		}
		return ed448.NewKeyFromSeed(k).Public().(ed448.PublicKey), nil
	default: // X448
		var secret, pub x448.Key
		if len(k) != len(secret) {
			return bad(len(secret))
		}
		copy(secret[:], k)
		x448.KeyGen(&pub, &secret)
		return pub[:], nil
	}
}

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
		return nil, unsupportedErrorf("EC private key on curve %s carries no public key, and pkbf computes one only on P-256, P-384 and P-521", name)
	}
	if len(scalar) > c.size {
		return nil, keyErrorf("%s private key is %d bytes, want at most %d", c.name, len(scalar), c.size)
	}
	padded := make([]byte, c.size)
	copy(padded[c.size-len(scalar):], scalar)
	priv, err := c.ecdh.NewPrivateKey(padded)
	if err != nil {
		return nil, keyErrorf("%s private key is out of range", c.name)
	}
	return ecSPKI(c, priv.PublicKey().Bytes()), nil
}

// curveOfParams returns the NIST curve of EC parameters (a named curve's
// OID, or explicit parameters of one), or nil and the curve's name.
func curveOfParams(params []byte) (*curve, string) {
	d := derReader(params)
	tag, _, content, ok := d.next()
	if !ok {
		return nil, "(malformed parameters)"
	}
	var named *ecCurve
	switch tag {
	case tagOID:
		if c := curveByOID(content); c != nil {
			return c, c.name
		}
		named = curveByNamedOID(content)
		if named == nil {
			return nil, oidString(content)
		}
	case tagSequence:
		explicit, err := parseExplicitCurve(params)
		if err != nil {
			return nil, "(explicit parameters pkbf cannot read)"
		}
		if named = curveByParams(explicit); named == nil {
			return nil, "(explicit parameters of no named curve)"
		}
		if c := curveByOID(named.oid); c != nil {
			return c, c.name
		}
	default:
		return nil, "(implicit)"
	}
	return nil, named.name
}
