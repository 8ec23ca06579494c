package keys

import "github.com/pkbf/pkbf/internal/der"

// certificateSPKI returns the SPKI of a DER X.509 certificate, byte for
// byte, without parsing the rest of the certificate.
func certificateSPKI(encoded []byte) ([]byte, error) {
	tbs, ok := signedBody(encoded)
	if !ok {
		return nil, keyErrorf("certificate is not a complete signed ASN.1 structure")
	}
	spki, ok := tbsCertificateSPKI(tbs)
	if !ok {
		return nil, keyErrorf("certificate's to-be-signed part is malformed before its public key")
	}
	return checkedSPKI(spki)
}

// csrSPKI returns the SPKI of a DER PKCS#10 certificate request, byte for byte.
func csrSPKI(encoded []byte) ([]byte, error) {
	info, ok := signedBody(encoded)
	if !ok {
		return nil, keyErrorf("certificate request is not a complete signed ASN.1 structure")
	}
	spki, ok := certificationRequestInfoSPKI(info)
	if !ok {
		return nil, keyErrorf("certificate request's info is malformed")
	}
	return checkedSPKI(spki)
}

// signedBody returns the contents of the body of SEQUENCE { body SEQUENCE,
// signatureAlgorithm SEQUENCE, signature BIT STRING }, the shape of
// certificates and requests.
func signedBody(encoded []byte) ([]byte, bool) {
	d := der.Reader(encoded)
	signed, ok := d.Read(der.TagSequence)
	fields := der.Reader(signed)
	body, ok2 := fields.Read(der.TagSequence)
	return body, ok && d.Empty() && ok2 && fields.Skip(der.TagSequence) && fields.Skip(der.TagBitString) && fields.Empty()
}

// tbsCertificateSPKI finds the SPKI in a TBSCertificate's contents:
// [0] version OPTIONAL, serial, signature, issuer, validity, subject, SPKI.
func tbsCertificateSPKI(tbs []byte) ([]byte, bool) {
	d := der.Reader(tbs)
	if !d.SkipOptional(der.TagContext0) || // version
		!d.Skip(der.TagInteger) || // serial number
		!d.Skip(der.TagSequence) || // signature algorithm
		!d.Skip(der.TagSequence) || // issuer
		!d.Skip(der.TagSequence) || // validity
		!d.Skip(der.TagSequence) { // subject
		return nil, false
	}
	return d.ReadElement(der.TagSequence)
}

// certificationRequestInfoSPKI finds the SPKI in a CertificationRequestInfo's
// contents: version, subject, SPKI, [0] attributes.
func certificationRequestInfoSPKI(info []byte) ([]byte, bool) {
	d := der.Reader(info)
	if !d.Skip(der.TagInteger) || !d.Skip(der.TagSequence) { // version, subject
		return nil, false
	}
	spki, ok := d.ReadElement(der.TagSequence)
	return spki, ok && d.Skip(der.TagContext0) && d.Empty() // attributes
}

// trustedCertificateSPKI reads OpenSSL's TRUSTED CERTIFICATE: a
// certificate followed by its trust settings (X509_CERT_AUX).
func trustedCertificateSPKI(encoded []byte) ([]byte, error) {
	d := der.Reader(encoded)
	cert, ok := d.ReadElement(der.TagSequence)
	if !ok || !(d.Empty() || d.Skip(der.TagSequence) && d.Empty()) {
		return nil, keyErrorf("TRUSTED CERTIFICATE is not a certificate followed by its trust settings")
	}
	return certificateSPKI(cert)
}
