package keys

// certificateSPKI returns the SPKI of a DER X.509 certificate, byte for
// byte, without parsing the rest of the certificate.
func certificateSPKI(der []byte) ([]byte, error) {
	tbs, ok := signedBody(der)
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
func csrSPKI(der []byte) ([]byte, error) {
	info, ok := signedBody(der)
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
func signedBody(der []byte) ([]byte, bool) {
	d := derReader(der)
	signed, ok := d.read(tagSequence)
	fields := derReader(signed)
	body, ok2 := fields.read(tagSequence)
	return body, ok && d.empty() && ok2 && fields.skip(tagSequence) && fields.skip(tagBitString) && fields.empty()
}

// tbsCertificateSPKI finds the SPKI in a TBSCertificate's contents:
// [0] version OPTIONAL, serial, signature, issuer, validity, subject, SPKI.
func tbsCertificateSPKI(tbs []byte) ([]byte, bool) {
	d := derReader(tbs)
	if !d.skipOptional(tagContext0) || // version
		!d.skip(tagInteger) || // serial number
		!d.skip(tagSequence) || // signature algorithm
		!d.skip(tagSequence) || // issuer
		!d.skip(tagSequence) || // validity
		!d.skip(tagSequence) { // subject
		return nil, false
	}
	return d.readElement(tagSequence)
}

// certificationRequestInfoSPKI finds the SPKI in a CertificationRequestInfo's
// contents: version, subject, SPKI, [0] attributes.
func certificationRequestInfoSPKI(info []byte) ([]byte, bool) {
	d := derReader(info)
	if !d.skip(tagInteger) || !d.skip(tagSequence) { // version, subject
		return nil, false
	}
	spki, ok := d.readElement(tagSequence)
	return spki, ok && d.skip(tagContext0) && d.empty() // attributes
}

// trustedCertificateSPKI reads OpenSSL's TRUSTED CERTIFICATE: a
// certificate followed by its trust settings (X509_CERT_AUX).
func trustedCertificateSPKI(der []byte) ([]byte, error) {
	d := derReader(der)
	cert, ok := d.readElement(tagSequence)
	if !ok || !(d.empty() || d.skip(tagSequence) && d.empty()) {
		return nil, keyErrorf("TRUSTED CERTIFICATE is not a certificate followed by its trust settings")
	}
	return certificateSPKI(cert)
}
