package keys

import (
	"bytes"
	"encoding/asn1"
	"fmt"

	"github.com/pkbf/pkbf/internal/der"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// readOID reads an OBJECT IDENTIFIER's content bytes.
func readOID(s *cryptobyte.String, oid *cryptobyte.String) bool {
	return s.ReadASN1(oid, cbasn1.OBJECT_IDENTIFIER) && len(*oid) > 0
}

// oidString formats OID content bytes for an error message.
func oidString(content []byte) string {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.OBJECT_IDENTIFIER, func(b *cryptobyte.Builder) { b.AddBytes(content) })
	der, _ := b.Bytes()
	s := cryptobyte.String(der)
	var oid asn1.ObjectIdentifier
	if !s.ReadASN1ObjectIdentifier(&oid) {
		return fmt.Sprintf("(malformed OID %x)", content)
	}
	return oid.String()
}

// algorithmNames names public-key algorithms in words, for messages,
// beside rawKeyAlgorithms.
var algorithmNames = []struct {
	oid  []byte
	name string
}{
	{oidRSA, "RSA"},
	{oidRSAPSS, "RSA-PSS"},
	{oidECPublicKey, "EC"},
	{oidDSA, "DSA"},
	{oidDHPKCS3, "DH (PKCS #3)"},
	{oidDHX942, "DH (X9.42)"},
	{oidRSAOAEP, "RSA-OAEP"},
	{der.OID(1, 3, 132, 1, 12), "ECDH"},
	{der.OID(1, 3, 132, 1, 13), "ECMQV"},
	{der.OID(1, 2, 156, 10197, 1, 301), "SM2"},
	{der.OID(1, 2, 643, 2, 2, 19), "GOST R 34.10-2001"},
	{der.OID(1, 2, 643, 7, 1, 1, 1, 1), "GOST R 34.10-2012 (256 bits)"},
	{der.OID(1, 2, 643, 7, 1, 1, 1, 2), "GOST R 34.10-2012 (512 bits)"},
	{der.OID(1, 2, 840, 113549, 1, 5, 3), "PBES1 (encrypted)"},
	{oidPBES2, "PBES2 (encrypted)"},
}

// algorithmName names the algorithm of OID content bytes in words, with
// the dotted OID beside an unknown one.
func algorithmName(oid []byte) string {
	for _, a := range algorithmNames {
		if bytes.Equal(a.oid, oid) {
			return a.name
		}
	}
	for _, a := range rawKeyAlgorithms {
		if bytes.Equal(a.oid, oid) {
			return a.name
		}
	}
	return "unknown algorithm " + oidString(oid)
}

// rawKeyAlgo is an algorithm of rawKeyAlgorithms: its OID's content
// bytes, its name and its key's size in bytes.
type rawKeyAlgo struct {
	oid  []byte
	name string
	size int
}

// rawKeyAlgorithms are the algorithms whose key has one DER
// SubjectPublicKeyInfo: an AlgorithmIdentifier of the OID alone (its
// parameters absent) and a BIT STRING holding the key's bytes, of a
// length fixed by the algorithm, with nothing to choose between forms
// (no integers, no point compression). So the SPKI as given is the whole
// lookup, and a "no" for it is definite. Ed25519, Ed448, X25519 and X448
// are RFC 8410's (section 3: parameters absent; section 4: the key's
// bytes as the BIT STRING); ML-DSA is RFC 9881's (FIPS 204 keys of 1312,
// 1952 and 2592 bytes), SLH-DSA RFC 9909's (FIPS 205: PK.seed || PK.root,
// 2n bytes), ML-KEM draft-ietf-lamps-kyber-certificates' (FIPS 203 keys
// of 800, 1184 and 1568 bytes): each with parameters absent and the raw
// key, with no OCTET STRING around it, as the BIT STRING's content.
// HashML-DSA and HashSLH-DSA, which those documents do not define for
// certificates, are not among them: pkbf refuses to answer for them.
var rawKeyAlgorithms = []rawKeyAlgo{
	{oidEd25519, "Ed25519", 32},
	{oidX25519, "X25519", 32},
	{oidEd448, "Ed448", 57},
	{oidX448, "X448", 56},
	mlDSA44, mlDSA65, mlDSA87,
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 20), "SLH-DSA-SHA2-128s", 32},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 21), "SLH-DSA-SHA2-128f", 32},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 22), "SLH-DSA-SHA2-192s", 48},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 23), "SLH-DSA-SHA2-192f", 48},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 24), "SLH-DSA-SHA2-256s", 64},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 25), "SLH-DSA-SHA2-256f", 64},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 26), "SLH-DSA-SHAKE-128s", 32},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 27), "SLH-DSA-SHAKE-128f", 32},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 28), "SLH-DSA-SHAKE-192s", 48},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 29), "SLH-DSA-SHAKE-192f", 48},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 30), "SLH-DSA-SHAKE-256s", 64},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 31), "SLH-DSA-SHAKE-256f", 64},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 4, 1), "ML-KEM-512", 800},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 4, 2), "ML-KEM-768", 1184},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 4, 3), "ML-KEM-1024", 1568},
}

// The ML-DSA parameter sets, which SSH keys name too (sshMLDSA).
var (
	mlDSA44 = rawKeyAlgo{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 17), "ML-DSA-44", 1312}
	mlDSA65 = rawKeyAlgo{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 18), "ML-DSA-65", 1952}
	mlDSA87 = rawKeyAlgo{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 19), "ML-DSA-87", 2592}
)

// rawKeySize returns the key size of an algorithm of rawKeyAlgorithms,
// and whether oid is one.
func rawKeySize(oid []byte) (int, bool) {
	for _, a := range rawKeyAlgorithms {
		if bytes.Equal(a.oid, oid) {
			return a.size, true
		}
	}
	return 0, false
}
