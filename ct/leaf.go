package ct

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"math/big"

	ctx509 "github.com/google/certificate-transparency-go/x509"
	"github.com/pkbf/pkbf/keys"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// What a scan reads of an entry is what its Merkle leaf covers, nothing
// else: a certificate entry's certificate, a precertificate entry's
// TBSCertificate. A Static CT entry's pre_certificate and an RFC 6962
// entry's extra_data (the precertificate as submitted, the chain) are
// outside the leaf: a log can change them without changing its tree, so
// they decide nothing.

// tbs returns the TBSCertificate an entry's leaf covers: the
// precertificate entry's own, or the certificate's first field.
func (e *Entry) tbs() (cryptobyte.String, error) {
	if e.Precert {
		return e.Leaf, nil
	}
	in := cryptobyte.String(e.Leaf)
	var cert cryptobyte.String
	if !in.ReadASN1(&cert, cbasn1.SEQUENCE) || !in.Empty() {
		return nil, errors.New("the leaf's certificate is not one DER SEQUENCE")
	}
	var tbs cryptobyte.String
	if !cert.ReadASN1Element(&tbs, cbasn1.SEQUENCE) {
		return nil, errors.New("the leaf's certificate has no TBSCertificate")
	}
	return tbs, nil
}

// tbsFields reads a TBSCertificate up to its SubjectPublicKeyInfo:
// version, serial, signature algorithm, issuer, validity, subject, SPKI.
// The names and the SPKI are whole DER elements.
func tbsFields(tbs cryptobyte.String) (serial *big.Int, issuer, subject, spki []byte, ok bool) {
	var body, iss, subj, key cryptobyte.String
	serial = new(big.Int)
	if !tbs.ReadASN1(&body, cbasn1.SEQUENCE) || !tbs.Empty() ||
		!body.SkipOptionalASN1(cbasn1.Tag(0).Constructed().ContextSpecific()) ||
		!body.ReadASN1Integer(serial) || !body.SkipASN1(cbasn1.SEQUENCE) ||
		!body.ReadASN1Element(&iss, cbasn1.SEQUENCE) || !body.SkipASN1(cbasn1.SEQUENCE) ||
		!body.ReadASN1Element(&subj, cbasn1.SEQUENCE) || !body.ReadASN1Element(&key, cbasn1.SEQUENCE) {
		return nil, nil, nil, nil, false
	}
	return serial, iss, subj, key, true
}

// leafSPKI returns the DER SubjectPublicKeyInfo in the TBSCertificate the
// entry's leaf covers.
func (e *Entry) leafSPKI() ([]byte, error) {
	tbs, err := e.tbs()
	if err != nil {
		return nil, err
	}
	_, _, _, spki, ok := tbsFields(tbs)
	if !ok {
		return nil, errors.New("the leaf's TBSCertificate is malformed before its public key")
	}
	return spki, nil
}

// asTLSClientsRead returns the SubjectPublicKeyInfo a TLS client would
// take from spki, re-encoded: Go's crypto/x509 (or, where it fails,
// certificate-transparency-go's x509) reads SPKIs that pkbf's strict parse
// refuses (a NULL after the BIT STRING or in the algorithm's parameters,
// bytes after the RSA key), and Go-based clients use the key it yields: a
// scan must check that key. ok is false when neither yields one.
func asTLSClientsRead(spki []byte) (der []byte, ok bool) {
	key, err := x509.ParsePKIXPublicKey(spki)
	if err != nil {
		if key, err = ctx509.ParsePKIXPublicKey(spki); err != nil {
			return nil, false
		}
	}
	der, err = keys.MarshalPublicKey(key)
	return der, err == nil
}

// details returns the serial (hex), subject and issuer of the certificate
// the entry's leaf covers, as far as they can be read.
func (e *Entry) details() (serial, subject, issuer string) {
	tbs, err := e.tbs()
	if err != nil {
		return "", "", ""
	}
	ser, iss, subj, _, ok := tbsFields(tbs)
	if !ok {
		return "", "", ""
	}
	return hex.EncodeToString(ser.Bytes()), name(subj), name(iss)
}

func name(der []byte) string {
	var rdn pkix.RDNSequence
	if rest, err := asn1.Unmarshal(der, &rdn); err != nil || len(rest) > 0 {
		return ""
	}
	var n pkix.Name
	n.FillFromRDNSequence(&rdn)
	return n.String()
}
