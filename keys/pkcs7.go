package keys

import (
	"bytes"
	"strconv"

	"github.com/pkbf/pkbf/internal/der"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"golang.org/x/crypto/cryptobyte"
)

// pkcs7PEMTypes are the PEM types of PKCS#7/CMS bundles.
var pkcs7PEMTypes = [...]string{"PKCS7", "PKCS #7 SIGNED DATA", "CMS"}

func isPKCS7PEMType(typ string) bool {
	return typ == pkcs7PEMTypes[0] || typ == pkcs7PEMTypes[1] || typ == pkcs7PEMTypes[2]
}

var (
	oidPKCS7Data          = der.OID(1, 2, 840, 113549, 1, 7, 1)
	oidPKCS7SignedData    = der.OID(1, 2, 840, 113549, 1, 7, 2)
	oidPKCS7EncryptedData = der.OID(1, 2, 840, 113549, 1, 7, 6)
)

// pkcs7Parts reads the certificates of a PKCS#7/CMS ContentInfo holding
// SignedData: SEQUENCE { version, digestAlgorithms, encapContentInfo,
// [0] IMPLICIT certificates OPTIONAL, [1] crls OPTIONAL, signerInfos }.
// The container may be DER or BER (ber.go); the certificates in it are
// read as they are.
func pkcs7Parts(encoded []byte) ([]part, error) {
	parts, err := pkcs7PartsDER(encoded)
	if err == nil {
		return parts, nil
	}
	converted, berErr := berToDER(encoded)
	switch {
	case berErr != nil:
		return nil, keyErrorf("PKCS#7 structure is neither DER nor BER: %v", berErr)
	case bytes.Equal(converted, encoded): // DER already: the first error stands
		return nil, err
	}
	return pkcs7PartsDER(converted)
}

// pkcs7PartsDER is pkcs7Parts on a container in DER.
func pkcs7PartsDER(der []byte) ([]part, error) {
	s := cryptobyte.String(der)
	var info, contentType, content, signed, certs cryptobyte.String
	var hasCerts bool
	if !s.ReadASN1(&info, cbasn1.SEQUENCE) || !s.Empty() || !info.ReadASN1(&contentType, cbasn1.OBJECT_IDENTIFIER) {
		return nil, keyErrorf("PKCS#7 structure is not a ContentInfo")
	}
	if !bytes.Equal(contentType, oidPKCS7SignedData) {
		return nil, keyErrorf("PKCS#7 content type %s is not SignedData: it holds no certificates", oidString(contentType))
	}
	if !info.ReadASN1(&content, cbasn1.Tag(0).Constructed().ContextSpecific()) ||
		!content.ReadASN1(&signed, cbasn1.SEQUENCE) ||
		!signed.SkipASN1(cbasn1.INTEGER) || !signed.SkipASN1(cbasn1.SET) || !signed.SkipASN1(cbasn1.SEQUENCE) ||
		!signed.ReadOptionalASN1(&certs, &hasCerts, cbasn1.Tag(0).Constructed().ContextSpecific()) {
		return nil, keyErrorf("PKCS#7 SignedData is malformed")
	}
	var parts []part
	for n := 1; !certs.Empty(); n++ {
		var tag cbasn1.Tag
		var cert cryptobyte.String
		if !certs.ReadAnyASN1Element(&cert, &tag) {
			return parts, keyErrorf("PKCS#7 certificate %d is malformed", n)
		}
		if tag != cbasn1.SEQUENCE {
			n-- // an attribute certificate or other choice: no public key
			continue
		}
		if len(parts) == maxContainerParts {
			return nil, keyErrorf("PKCS#7 bundle holds more than %d certificates: refused", maxContainerParts)
		}
		spki, err := certificateSPKI(cert)
		parts = append(parts, part{what: "certificate " + strconv.Itoa(n), spki: spki, err: err})
	}
	if len(parts) == 0 {
		return nil, keyErrorf("PKCS#7 SignedData holds no certificates")
	}
	return parts, nil
}
