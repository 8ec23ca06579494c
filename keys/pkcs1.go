package keys

import (
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// readUnsigned reads a DER INTEGER that must be minimally encoded and
// positive, and returns its magnitude without a leading zero byte.
func readUnsigned(s *cryptobyte.String, name string) ([]byte, error) {
	var v cryptobyte.String
	if !s.ReadASN1(&v, cbasn1.INTEGER) || len(v) == 0 {
		return nil, keyErrorf("%s is not a DER INTEGER", name)
	}
	if len(v) > 1 && (v[0] == 0 && v[1] < 0x80 || v[0] == 0xff && v[1] >= 0x80) {
		return nil, keyErrorf("%s INTEGER is not minimally encoded", name)
	}
	if v[0] >= 0x80 {
		return nil, keyErrorf("%s is negative", name)
	}
	if v[0] == 0 {
		v = v[1:]
	}
	if len(v) == 0 {
		return nil, keyErrorf("%s is zero", name)
	}
	return v, nil
}

// parsePKCS1Public reads RSAPublicKey ::= SEQUENCE { n INTEGER, e INTEGER }.
func parsePKCS1Public(der []byte) (n, e []byte, err error) {
	s := cryptobyte.String(der)
	var seq cryptobyte.String
	if !s.ReadASN1(&seq, cbasn1.SEQUENCE) || !s.Empty() {
		return nil, nil, keyErrorf("RSA public key is not one complete ASN.1 SEQUENCE")
	}
	if n, err = readUnsigned(&seq, "RSA modulus"); err != nil {
		return nil, nil, err
	}
	if e, err = readUnsigned(&seq, "RSA public exponent"); err != nil {
		return nil, nil, err
	}
	if !seq.Empty() {
		return nil, nil, keyErrorf("RSA public key has fields after the exponent")
	}
	return n, e, nil
}

func pkcs1PublicSPKI(der []byte) ([]byte, error) {
	n, e, err := parsePKCS1Public(der)
	if err != nil {
		return nil, err
	}
	return rsaSPKI(n, e), nil
}

// pkcs1PrivateSPKI reads the public half of an RSAPrivateKey.
func pkcs1PrivateSPKI(der []byte) ([]byte, error) {
	n, e, err := pkcs1PrivatePublic(der)
	if err != nil {
		return nil, err
	}
	return rsaSPKI(n, e), nil
}

// pkcs1PrivatePublic reads n and e from an RSAPrivateKey:
// SEQUENCE { version, n, e, d, p, q, dp, dq, qinv, otherPrimeInfos OPTIONAL }.
func pkcs1PrivatePublic(der []byte) (n, e []byte, err error) {
	s := cryptobyte.String(der)
	var seq cryptobyte.String
	var version int
	if !s.ReadASN1(&seq, cbasn1.SEQUENCE) || !s.Empty() || !seq.ReadASN1Integer(&version) {
		return nil, nil, keyErrorf("RSA private key is not a complete ASN.1 SEQUENCE starting with a version")
	}
	if version != 0 && version != 1 {
		return nil, nil, keyErrorf("RSA private key version is %d, want 0 or 1", version)
	}
	if n, err = readUnsigned(&seq, "RSA modulus"); err != nil {
		return nil, nil, err
	}
	if e, err = readUnsigned(&seq, "RSA public exponent"); err != nil {
		return nil, nil, err
	}
	for _, name := range []string{"d", "p", "q", "dp", "dq", "qinv"} {
		if !seq.SkipASN1(cbasn1.INTEGER) {
			return nil, nil, keyErrorf("RSA private key lacks INTEGER %s", name)
		}
	}
	if !seq.SkipOptionalASN1(cbasn1.SEQUENCE) || !seq.Empty() {
		return nil, nil, keyErrorf("RSA private key has unexpected fields after qinv")
	}
	return n, e, nil
}
