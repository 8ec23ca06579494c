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

// algorithmNames names public-key algorithms in words, for messages.
var algorithmNames = []struct {
	oid  []byte
	name string
}{
	{oidRSA, "RSA"},
	{oidRSAPSS, "RSA-PSS"},
	{oidECPublicKey, "EC"},
	{oidEd25519, "Ed25519"},
	{oidEd448, "Ed448"},
	{oidX25519, "X25519"},
	{oidX448, "X448"},
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
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 17), "ML-DSA-44"},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 18), "ML-DSA-65"},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 3, 19), "ML-DSA-87"},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 4, 1), "ML-KEM-512"},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 4, 2), "ML-KEM-768"},
	{der.OID(2, 16, 840, 1, 101, 3, 4, 4, 3), "ML-KEM-1024"},
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
	return "unknown algorithm " + oidString(oid)
}

// rawKeySize is the public key size of the EdDSA and XDH algorithms.
func rawKeySize(oid []byte) int {
	switch {
	case bytes.Equal(oid, oidEd25519), bytes.Equal(oid, oidX25519):
		return 32
	case bytes.Equal(oid, oidEd448):
		return 57
	}
	return 56 // X448
}
