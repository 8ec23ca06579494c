package keys

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// SPKI returns the DER SubjectPublicKeyInfo of the one key, certificate or
// certificate request in data, the form filters store. It accepts, as PEM
// or DER (PEM may start with a byte-order mark, and have CR, LF or CR LF
// line ends):
//
//   - a SubjectPublicKeyInfo ("PUBLIC KEY") of any algorithm, returned byte
//     for byte, EC keys with compressed points or explicit parameters
//     included;
//   - a PKCS#1 RSA public key ("RSA PUBLIC KEY");
//   - a private key in PKCS#1 ("RSA PRIVATE KEY"), PKCS#8 ("PRIVATE KEY":
//     RSA, RSA-PSS, EC, Ed25519, Ed448, X25519, X448, DSA, DH), SEC 1 ("EC
//     PRIVATE KEY", also after an "EC PARAMETERS" block; any curve, named
//     or explicit) or OpenSSL's DSA ("DSA PRIVATE KEY") form;
//   - an X.509 certificate ("CERTIFICATE", or OpenSSL's "TRUSTED
//     CERTIFICATE") or PKCS#10 request, whose SPKI is returned byte for
//     byte, whatever its algorithm;
//   - a PKCS#7/CMS bundle or a PKCS#12 file that holds one key (perhaps
//     with its certificates), unencrypted or encrypted with the empty
//     password; read bundles of several keys with [Scanner];
//   - an OpenSSH private key, even one protected by a passphrase (its public
//     half is stored in clear), and a PuTTY .ppk file (likewise);
//   - an OpenSSH public key line (a .pub file, an authorized_keys line with
//     options, or a known_hosts line; sk- keys give their inner key; lines
//     of text around it are ignored) or an RFC 4716 public key block.
//
// The SPKI of a private key, a PKCS#1 or an OpenSSH key is built in the
// canonical encoding OpenSSL writes ([Canonical]); a private key's public
// key is the one the file carries, else computed from the private key (for
// EC keys only on P-256, P-384 and P-521). See [Encodings] for the other
// encodings a filter may hold a key under.
//
// SPKI checks the structure of what it returns, not the mathematics: it does
// not check that a point is on its curve. Errors wrap [ErrInvalidKey] and say
// what is wrong, in words, including that a key is encrypted. To read several keys
// from one input, use [Scanner]. The result does not alias data unless
// it is the input's own SPKI, which is then a subslice of data.
func SPKI(data []byte) ([]byte, error) {
	if len(data) > 0 && data[0] == 0x30 { // DER: an ASN.1 SEQUENCE
		return derSPKI(data)
	}
	text := trimSpace(bytes.TrimPrefix(data, []byte(utf8BOM)))
	if i := bytes.IndexByte(text, '\r'); i >= 0 && bytes.IndexByte(text, '\n') < 0 {
		text = bytes.ReplaceAll(text, []byte("\r"), []byte("\n")) // old Mac line ends
	}
	switch {
	case len(text) == 0:
		return nil, keyErrorf("empty input")
	case bytes.HasPrefix(text, []byte("-----BEGIN ")):
		return pemSPKI(text)
	case bytes.HasPrefix(text, []byte(opensshMagic)):
		return opensshPrivateSPKI(text)
	case bytes.HasPrefix(text, []byte(rfc4716Begin)):
		return rfc4716SPKI(text)
	case bytes.HasPrefix(text, []byte(puttyMagic)):
		return puttySPKI(text)
	}
	return sshTextSPKI(text)
}

// trimSpace drops leading ASCII white space.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}

// Fingerprint returns the pwnedkeys fingerprint of a DER SubjectPublicKeyInfo:
// the lowercase hex SHA-256 of its bytes.
func Fingerprint(spki []byte) string {
	sum := sha256.Sum256(spki)
	return hex.EncodeToString(sum[:])
}

func keyErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidKey}, args...)...)
}

// ErrInvalidKey is wrapped by every error that reports a key, certificate
// or CSR that could not be read: from [SPKI], [Canonical], [Encodings],
// [Forms] and [Key.SPKI].
var ErrInvalidKey = errors.New("pkbf: invalid key")

// ErrUnsupportedKey is wrapped, beside [ErrInvalidKey], by the errors that
// report a key that is valid as far as pkbf can tell but that pkbf cannot
// give the SPKI of: an OpenSSH key type or an algorithm it does not know,
// a private key on a curve it cannot compute on that does not carry its
// public key, a container in a form it does not read.
var ErrUnsupportedKey = errors.New("pkbf: unsupported key")

// ErrEncryptedKey is wrapped, beside [ErrInvalidKey], by the errors that
// report a key whose public key cannot be read without a passphrase: an
// encrypted PKCS#8 or PEM key, a PKCS#12 file without (or with the wrong)
// passphrase.
var ErrEncryptedKey = errors.New("pkbf: encrypted key")

// kindError is an error of a kind callers branch on, wrapping ErrInvalidKey
// too.
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }

func unsupportedErrorf(format string, args ...any) error {
	return &kindError{ErrUnsupportedKey, keyErrorf(format, args...)}
}

func encryptedErrorf(format string, args ...any) error {
	return &kindError{ErrEncryptedKey, keyErrorf(format, args...)}
}

// Object identifiers, as the content bytes of their DER encoding, so that
// parsing compares bytes instead of decoding (and allocating) every OID.
var (
	oidRSA         = oidBytes(1, 2, 840, 113549, 1, 1, 1)
	oidECPublicKey = oidBytes(1, 2, 840, 10045, 2, 1)
	oidEd25519     = oidBytes(1, 3, 101, 112)
	oidP256        = oidBytes(1, 2, 840, 10045, 3, 1, 7)
	oidP384        = oidBytes(1, 3, 132, 0, 34)
	oidP521        = oidBytes(1, 3, 132, 0, 35)
	oidPBES2       = oidBytes(1, 2, 840, 113549, 1, 5, 13)
	oidRSAPSS      = oidBytes(1, 2, 840, 113549, 1, 1, 10)
	oidEd448       = oidBytes(1, 3, 101, 113)
	oidX25519      = oidBytes(1, 3, 101, 110)
	oidX448        = oidBytes(1, 3, 101, 111)
	oidDSA         = oidBytes(1, 2, 840, 10040, 4, 1)
	oidDHPKCS3     = oidBytes(1, 2, 840, 113549, 1, 3, 1)
	oidDHX942      = oidBytes(1, 2, 840, 10046, 2, 1)
	oidPrimeField  = oidBytes(1, 2, 840, 10045, 1, 1)

	ed25519KeyBytes = ed25519.PublicKeySize
)

func oidBytes(arcs ...int) []byte {
	der, err := asn1.Marshal(asn1.ObjectIdentifier(arcs))
	if err != nil {
		panic(err)
	}
	return der[2:] // every OID here is short: a 2-byte header
}

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

// A curve is one of the NIST curves SPKI knows by name.
type curve struct {
	name string // "P-256"
	ssh  string // "nistp256"
	oid  []byte
	size int // bytes in a coordinate or scalar
	ecdh ecdh.Curve
}

var curves = []*curve{
	{"P-256", "nistp256", oidP256, 32, ecdh.P256()},
	{"P-384", "nistp384", oidP384, 48, ecdh.P384()},
	{"P-521", "nistp521", oidP521, 66, ecdh.P521()},
}

func curveByOID(oid []byte) *curve {
	for _, c := range curves {
		if bytes.Equal(c.oid, oid) {
			return c
		}
	}
	return nil
}

// pointKind checks the length and prefix of an encoded point on c and
// reports whether it is compressed.
func (c *curve) pointKind(point []byte) (compressed bool, err error) {
	switch {
	case len(point) == 1+2*c.size && (point[0] == 4 || point[0] == 6 || point[0] == 7): // 6, 7: hybrid
		return false, nil
	case len(point) == 1+c.size && (point[0] == 2 || point[0] == 3):
		return true, nil
	}
	return false, keyErrorf("%s point is %d bytes with prefix %#02x, want %d uncompressed (or hybrid) or %d compressed", c.name, len(point), first(point), 1+2*c.size, 1+c.size)
}

func first(b []byte) byte {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// pemSPKI reads one key from PEM text: an optional "EC PARAMETERS" block, one
// key block, and nothing but text outside blocks.
func pemSPKI(text []byte) ([]byte, error) {
	var (
		found   []byte
		blocks  int
		ecCurve []byte // the DER OID of a preceding "EC PARAMETERS" block
		rest    = text
	)
	for {
		block, after := pem.Decode(rest)
		if block == nil {
			if blocks == 0 {
				return nil, keyErrorf("PEM block %q is incomplete or malformed: no matching END line or bad base64", pemType(rest))
			}
			if bytes.Contains(rest, []byte("-----BEGIN ")) {
				return nil, keyErrorf("PEM block %q after block %d is incomplete or malformed", pemType(rest), blocks)
			}
			break
		}
		rest = after
		blocks++
		if block.Type == "EC PARAMETERS" {
			ecCurve = block.Bytes
			continue
		}
		if found != nil {
			return nil, keyErrorf("more than one key in PEM input (block %d is %q); read bundles with Scanner", blocks, block.Type)
		}
		spki, err := pemBlockSPKI(block, ecCurve)
		if err != nil {
			return nil, err
		}
		found = spki
	}
	if found == nil {
		return nil, keyErrorf("PEM input has only EC PARAMETERS, no key")
	}
	return found, nil
}

// pemType returns the type named on the first BEGIN line of text, for errors.
func pemType(text []byte) string {
	_, after, ok := bytes.Cut(text, []byte("-----BEGIN "))
	if !ok {
		return ""
	}
	name, _, _ := bytes.Cut(after, []byte("-----"))
	if len(name) > 40 {
		name = append(name[:40:40], "..."...)
	}
	return string(name)
}

// pemBlockSPKI returns the SPKI of one decoded PEM block. ecParams is the
// content of a preceding "EC PARAMETERS" block, or nil.
func pemBlockSPKI(block *pem.Block, ecParams []byte) ([]byte, error) {
	if strings.Contains(block.Headers["Proc-Type"], "ENCRYPTED") {
		return nil, encryptedErrorf("%s is encrypted (Proc-Type %s): its public key cannot be read without the passphrase", block.Type, block.Headers["Proc-Type"])
	}
	return typedSPKI(block.Type, block.Bytes, ecParams)
}

// typedSPKI returns the SPKI of the DER contents b of a PEM block of type typ.
func typedSPKI(typ string, b []byte, ecParams []byte) ([]byte, error) {
	switch typ {
	case "PUBLIC KEY":
		return checkedSPKI(b)
	case "RSA PUBLIC KEY":
		return pkcs1PublicSPKI(b)
	case "RSA PRIVATE KEY":
		return pkcs1PrivateSPKI(b)
	case "PRIVATE KEY":
		return pkcs8SPKI(b)
	case "ENCRYPTED PRIVATE KEY":
		return nil, encryptedErrorf("ENCRYPTED PRIVATE KEY is an encrypted PKCS#8 key: its public key cannot be read without the passphrase")
	case "EC PRIVATE KEY":
		return sec1SPKI(b, ecParams)
	case "OPENSSH PRIVATE KEY":
		return opensshPrivateSPKI(b)
	case "CERTIFICATE", "X509 CERTIFICATE":
		return certificateSPKI(b)
	case "TRUSTED CERTIFICATE":
		// OpenSSL's trusted form: the certificate, then its trust settings.
		return trustedCertificateSPKI(b)
	case "CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST":
		return csrSPKI(b)
	case "DSA PRIVATE KEY":
		return dsaPrivateSPKI(b)
	case pkcs7PEMTypes[0], pkcs7PEMTypes[1], pkcs7PEMTypes[2]:
		return singleSPKI(pkcs7Parts(b))
	case "EC PARAMETERS", "DSA PARAMETERS", "DH PARAMETERS", "X9.42 DH PARAMETERS":
		return nil, keyErrorf("%s holds domain parameters, not a key", typ)
	case "X509 CRL":
		return nil, keyErrorf("X509 CRL is a certificate revocation list: it holds no public key")
	case "SSH2 ENCRYPTED PRIVATE KEY":
		return nil, unsupportedErrorf("SSH2 ENCRYPTED PRIVATE KEY (ssh.com format) is not supported: convert it with ssh-keygen -i")
	}
	return nil, keyErrorf("PEM block type %q is not a key, certificate or certificate request", typ)
}

// derSPKI tells the DER structures apart by the tags of their first fields.
func derSPKI(der []byte) ([]byte, error) {
	d := derReader(der)
	body, ok := d.read(tagSequence)
	if !ok {
		return nil, keyErrorf("DER input is not a complete ASN.1 SEQUENCE")
	}
	if !d.empty() {
		return nil, keyErrorf("DER input has %d bytes after its ASN.1 SEQUENCE", len(d))
	}
	fields := derReader(body)
	firstTag, _, firstField, ok1 := fields.next()
	secondTag, _, _, ok2 := fields.next()
	if !ok1 || !ok2 {
		return nil, keyErrorf("DER SEQUENCE has fewer than two well-formed fields: not a key, certificate or request")
	}
	switch {
	case firstTag == tagSequence && secondTag == tagBitString:
		return checkedSPKI(der)
	case firstTag == tagSequence && secondTag == tagSequence:
		// A signed structure, body and signature algorithm: a certificate or
		// a request, told apart by their bodies (a certificate has an issuer
		// and a validity before its SPKI).
		if !fields.skip(tagBitString) || !fields.empty() {
			return nil, keyErrorf("DER signed structure does not end with its signature")
		}
		if spki, ok := tbsCertificateSPKI(firstField); ok {
			return checkedSPKI(spki)
		}
		if spki, ok := certificationRequestInfoSPKI(firstField); ok {
			return checkedSPKI(spki)
		}
		return nil, keyErrorf("DER signed structure is neither a certificate nor a certificate request")
	case firstTag == tagSequence && secondTag == tagOctetString:
		return nil, encryptedErrorf("DER input is an encrypted PKCS#8 key: its public key cannot be read without the passphrase")
	case firstTag == tagInteger && secondTag == tagSequence:
		if isPKCS12(body) {
			return singleSPKI(pkcs12Parts(der, nil))
		}
		return pkcs8SPKI(der)
	case firstTag == tagInteger && secondTag == tagOctetString:
		return sec1SPKI(der, nil)
	case firstTag == tagInteger && secondTag == tagInteger:
		// PKCS#1 public (n, e), DSA private (0, p, q, g, y, x) or PKCS#1
		// private (0, n, e, d, p, q, dp, dq, qinv): told apart by count.
		ints := 2
		for fields.skip(tagInteger) {
			ints++
		}
		switch ints {
		case 2:
			return pkcs1PublicSPKI(der)
		case 6:
			return dsaPrivateSPKI(der)
		}
		return pkcs1PrivateSPKI(der)
	case firstTag == tagOID:
		return singleSPKI(pkcs7Parts(der))
	}
	return nil, keyErrorf("DER SEQUENCE starting with tags %#02x, %#02x is not a key, certificate or certificate request", firstTag, secondTag)
}

// checkedSPKI checks the structure of a DER SubjectPublicKeyInfo and returns
// it unchanged. For RSA, EC on a known curve and Ed25519 it checks the shape
// of the key too (an RSA key's two INTEGERs, a point's size and prefix);
// other algorithms are returned after the structural check.
func checkedSPKI(der []byte) ([]byte, error) {
	if _, err := parseSPKI(der); err != nil {
		return nil, err
	}
	return der, nil
}

// spkiInfo is what parseSPKI learns of a SubjectPublicKeyInfo.
type spkiInfo struct {
	algorithm []byte // OID content bytes
	curve     *curve // EC keys on a known curve
	key       []byte // the BIT STRING's content: the public key
}

func parseSPKI(der []byte) (spkiInfo, error) {
	var info spkiInfo
	d := derReader(der)
	spki, ok := d.read(tagSequence)
	if !ok || !d.empty() {
		return info, keyErrorf("SubjectPublicKeyInfo is not one complete ASN.1 SEQUENCE")
	}
	fields := derReader(spki)
	algContent, ok1 := fields.read(tagSequence)
	alg := derReader(algContent)
	algorithm, ok2 := alg.read(tagOID)
	if !ok1 || !ok2 || len(algorithm) == 0 {
		return info, keyErrorf("SubjectPublicKeyInfo has no algorithm identifier")
	}
	key, keyBits, ok := fields.readBitString()
	if !ok || !fields.empty() {
		return info, keyErrorf("SubjectPublicKeyInfo's public key is not a BIT STRING ending the structure")
	}
	info.algorithm, info.key = algorithm, key
	switch {
	case bytes.Equal(algorithm, oidRSA):
		if !alg.empty() {
			if null, ok := alg.read(tagNull); !ok || len(null) != 0 || !alg.empty() {
				return info, keyErrorf("RSA algorithm parameters are not NULL")
			}
		}
		// Only the structure: certificates with keys Go refuses (a modulus
		// encoded as negative, say) must still give their SPKI.
		k := derReader(key)
		rsaKey, ok := k.read(tagSequence)
		fields := derReader(rsaKey)
		if keyBits%8 != 0 || !ok || !k.empty() || !fields.skip(tagInteger) || !fields.skip(tagInteger) || !fields.empty() {
			return info, keyErrorf("RSA public key is not a SEQUENCE of modulus and exponent")
		}
	case bytes.Equal(algorithm, oidECPublicKey):
		tag, _, params, ok := alg.next()
		if !ok || !alg.empty() || (tag != tagOID && tag != tagSequence && tag != tagNull) {
			return info, keyErrorf("EC algorithm parameters are neither a named curve nor explicit parameters")
		}
		if keyBits%8 != 0 || len(key) == 0 {
			return info, keyErrorf("EC public key BIT STRING is empty or has unused bits")
		}
		if tag == tagOID {
			if info.curve = curveByOID(params); info.curve != nil {
				if _, err := info.curve.pointKind(key); err != nil {
					return info, err
				}
			}
		}
	case bytes.Equal(algorithm, oidEd25519):
		if !alg.empty() {
			return info, keyErrorf("Ed25519 algorithm identifier has parameters")
		}
		if keyBits != 8*ed25519KeyBytes {
			return info, keyErrorf("Ed25519 public key is %d bits, want %d", keyBits, 8*ed25519KeyBytes)
		}
	}
	return info, nil
}

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

// addUnsigned adds a DER INTEGER with the magnitude mag, which has no
// leading zero bytes.
func addUnsigned(b *cryptobyte.Builder, mag []byte) {
	b.AddASN1(cbasn1.INTEGER, func(b *cryptobyte.Builder) {
		if mag[0] >= 0x80 {
			b.AddUint8(0)
		}
		b.AddBytes(mag)
	})
}

func addOID(b *cryptobyte.Builder, oid []byte) {
	b.AddASN1(cbasn1.OBJECT_IDENTIFIER, func(b *cryptobyte.Builder) { b.AddBytes(oid) })
}

func buildSPKI(alg func(*cryptobyte.Builder), key func(*cryptobyte.Builder)) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, alg)
		b.AddASN1(cbasn1.BIT_STRING, func(b *cryptobyte.Builder) {
			b.AddUint8(0) // no unused bits
			key(b)
		})
	})
	return b.BytesOrPanic() // cannot fail: every length is in range
}

// rsaSPKI builds the SPKI of an RSA key from the magnitudes of n and e.
func rsaSPKI(n, e []byte) []byte {
	return buildSPKI(func(b *cryptobyte.Builder) {
		addOID(b, oidRSA)
		b.AddASN1NULL()
	}, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			addUnsigned(b, n)
			addUnsigned(b, e)
		})
	})
}

// ecSPKI builds the SPKI of an EC key from its encoded point.
func ecSPKI(c *curve, point []byte) []byte {
	return buildSPKI(func(b *cryptobyte.Builder) {
		addOID(b, oidECPublicKey)
		addOID(b, c.oid)
	}, func(b *cryptobyte.Builder) { b.AddBytes(point) })
}

func ed25519SPKI(pub []byte) []byte {
	return buildSPKI(func(b *cryptobyte.Builder) {
		addOID(b, oidEd25519)
	}, func(b *cryptobyte.Builder) { b.AddBytes(pub) })
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
	{oidBytes(1, 2, 840, 113549, 1, 1, 7), "RSA-OAEP"},
	{oidBytes(1, 3, 132, 1, 12), "ECDH"},
	{oidBytes(1, 3, 132, 1, 13), "ECMQV"},
	{oidBytes(1, 2, 156, 10197, 1, 301), "SM2"},
	{oidBytes(1, 2, 643, 2, 2, 19), "GOST R 34.10-2001"},
	{oidBytes(1, 2, 643, 7, 1, 1, 1, 1), "GOST R 34.10-2012 (256 bits)"},
	{oidBytes(1, 2, 643, 7, 1, 1, 1, 2), "GOST R 34.10-2012 (512 bits)"},
	{oidBytes(2, 16, 840, 1, 101, 3, 4, 3, 17), "ML-DSA-44"},
	{oidBytes(2, 16, 840, 1, 101, 3, 4, 3, 18), "ML-DSA-65"},
	{oidBytes(2, 16, 840, 1, 101, 3, 4, 3, 19), "ML-DSA-87"},
	{oidBytes(2, 16, 840, 1, 101, 3, 4, 4, 1), "ML-KEM-512"},
	{oidBytes(2, 16, 840, 1, 101, 3, 4, 4, 2), "ML-KEM-768"},
	{oidBytes(2, 16, 840, 1, 101, 3, 4, 4, 3), "ML-KEM-1024"},
	{oidBytes(1, 2, 840, 113549, 1, 5, 3), "PBES1 (encrypted)"},
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
