package keys

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"

	"github.com/pkbf/pkbf/internal/der"
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
//   - a PKCS#7/CMS bundle (DER, or BER: indefinite lengths) or a PKCS#12
//     file that holds one key (perhaps with its certificates), unencrypted
//     or encrypted with the empty password, or an armored OpenPGP public
//     key of one RSA key; read bundles of several keys with [Scanner];
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
	if bareModulus(data) {
		return nil, errBareModulus
	}
	if len(data) > 0 && data[0] == 0x30 { // DER: an ASN.1 SEQUENCE
		return derSPKI(data)
	}
	text := textOf(data)
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
	spki, _, err := sshTextSPKI(text)
	if err != nil && bareModulus(text) {
		err = errBareModulus
	}
	return spki, err
}

// ParseKey returns the one key in data, anything [SPKI] reads, as a Key:
// its [Key.Forms] then reads a key in DER in the same parse that finds its
// encodings, and its [Key.SSHFingerprint] names an SSH key. For data SPKI
// cannot read, the Key carries SPKI's error. Raw is data (the key line,
// for OpenSSH text); the positions are zero.
func ParseKey(data []byte) Key {
	if bareModulus(data) {
		return Key{Raw: data, kind: kindModulus}
	}
	if len(data) > 0 && data[0] == 0x30 {
		return Key{Raw: data, kind: kindDER}
	}
	text := textOf(data)
	k := Key{Raw: data}
	switch {
	case bytes.HasPrefix(text, []byte(rfc4716Begin)):
		k.Raw, k.kind = text, kindRFC4716
	case bytes.HasPrefix(text, []byte(puttyMagic)):
		k.Raw, k.kind = text, kindPuTTY
	case len(text) > 0 && !bytes.HasPrefix(text, []byte("-----BEGIN ")) && !bytes.HasPrefix(text, []byte(opensshMagic)):
		var line []byte
		if k.spki, line, k.err = sshTextSPKI(text); k.err == nil {
			k.Raw, k.kind = line, kindLine
		} else if bareModulus(text) {
			k.kind, k.err = kindModulus, nil
		}
		return k
	}
	k.spki, k.err = SPKI(data)
	return k
}

// textOf is text input as SPKI and ParseKey read it: without a UTF-8 BOM
// and leading white space, old Mac line ends (CR alone) made line feeds.
func textOf(data []byte) []byte {
	text := trimSpace(bytes.TrimPrefix(data, []byte(utf8BOM)))
	if bytes.IndexByte(text, '\r') >= 0 && bytes.IndexByte(text, '\n') < 0 {
		text = bytes.ReplaceAll(text, []byte("\r"), []byte("\n"))
	}
	return text
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
	return string(AppendFingerprint(make([]byte, 0, 2*sha256.Size), spki))
}

// AppendFingerprint appends the pwnedkeys fingerprint of spki to dst, as
// [Fingerprint] returns it, without allocating: for programs that write a
// fingerprint for every key.
func AppendFingerprint(dst, spki []byte) []byte {
	sum := sha256.Sum256(spki)
	return hex.AppendEncode(dst, sum[:])
}

// Object identifiers, as the content bytes of their DER encoding, so that
// parsing compares bytes instead of decoding (and allocating) every OID.
var (
	oidRSA          = der.OID(1, 2, 840, 113549, 1, 1, 1)
	oidECPublicKey  = der.OID(1, 2, 840, 10045, 2, 1)
	oidEd25519      = der.OID(1, 3, 101, 112)
	oidPBES2        = der.OID(1, 2, 840, 113549, 1, 5, 13)
	oidRSAPSS       = der.OID(1, 2, 840, 113549, 1, 1, 10)
	oidRSAOAEP      = der.OID(1, 2, 840, 113549, 1, 1, 7)
	oidEd448        = der.OID(1, 3, 101, 113)
	oidX25519       = der.OID(1, 3, 101, 110)
	oidX448         = der.OID(1, 3, 101, 111)
	oidDSA          = der.OID(1, 2, 840, 10040, 4, 1)
	oidDHPKCS3      = der.OID(1, 2, 840, 113549, 1, 3, 1)
	oidDHX942       = der.OID(1, 2, 840, 10046, 2, 1)
	oidPrimeField   = der.OID(1, 2, 840, 10045, 1, 1)
	oidCharTwoField = der.OID(1, 2, 840, 10045, 1, 2)
	oidTPBasis      = der.OID(1, 2, 840, 10045, 1, 2, 3, 2)
	oidPPBasis      = der.OID(1, 2, 840, 10045, 1, 2, 3, 3)

	ed25519KeyBytes = ed25519.PublicKeySize
)

func first(b []byte) byte {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// derSPKI tells the DER structures apart by the tags of their first fields.
func derSPKI(encoded []byte) ([]byte, error) {
	var info spkiInfo
	return derSPKIInfo(encoded, &info)
}

// derSPKIInfo is derSPKI, also filling info with what parseSPKI read of
// the SPKI when the object is one or holds one byte for byte (a
// certificate, a request); for objects whose SPKI is built, info is left
// as it was. (A pointer, not a result: copying the struct through the
// calls cost more than the parse it saves.)
func derSPKIInfo(encoded []byte, info *spkiInfo) ([]byte, error) {
	d := der.Reader(encoded)
	body, ok := d.Read(der.TagSequence)
	switch {
	case !ok && isBERContentInfo(encoded):
		return singleSPKI(pkcs7Parts(encoded))
	case !ok && len(encoded) > 1 && encoded[1] == 0x80:
		return nil, keyErrorf("DER input uses an indefinite length (BER), which pkbf reads only in a PKCS#7 container")
	case !ok:
		return nil, keyErrorf("DER input is not a complete ASN.1 SEQUENCE")
	}
	if !d.Empty() {
		return nil, keyErrorf("DER input has %d bytes after its ASN.1 SEQUENCE", len(d))
	}
	fields := der.Reader(body)
	firstTag, _, firstField, ok1 := fields.Next()
	secondTag, _, _, ok2 := fields.Next()
	if !ok1 || !ok2 {
		return nil, keyErrorf("DER SEQUENCE has fewer than two well-formed fields: not a key, certificate or request")
	}
	switch {
	case firstTag == der.TagSequence && secondTag == der.TagBitString:
		return parsedSPKI(encoded, info)
	case firstTag == der.TagSequence && secondTag == der.TagSequence:
		// A signed structure, body and signature algorithm: a certificate or
		// a request, told apart by their bodies (a certificate has an issuer
		// and a validity before its SPKI).
		if !fields.Skip(der.TagBitString) || !fields.Empty() {
			return nil, keyErrorf("DER signed structure does not end with its signature")
		}
		if spki, ok := tbsCertificateSPKI(firstField); ok {
			return parsedSPKI(spki, info)
		}
		if spki, ok := certificationRequestInfoSPKI(firstField); ok {
			return parsedSPKI(spki, info)
		}
		return nil, keyErrorf("DER signed structure is neither a certificate nor a certificate request")
	case firstTag == der.TagSequence && secondTag == der.TagOctetString:
		return nil, encryptedErrorf("DER input is an encrypted PKCS#8 key: pkbf decrypts no private keys but PKCS#12 files: check its public key or certificate instead")
	case firstTag == der.TagInteger && secondTag == der.TagSequence:
		if isPKCS12(body) {
			return singleSPKI(pkcs12Parts(encoded, nil, nil))
		}
		return pkcs8SPKI(encoded)
	case firstTag == der.TagInteger && secondTag == der.TagOctetString:
		return sec1SPKI(encoded, nil)
	case firstTag == der.TagInteger && secondTag == der.TagInteger:
		// PKCS#1 public (n, e), DSA private (0, p, q, g, y, x) or PKCS#1
		// private (0, n, e, d, p, q, dp, dq, qinv): told apart by count.
		ints := 2
		for fields.Skip(der.TagInteger) {
			ints++
		}
		switch ints {
		case 2:
			return pkcs1PublicSPKI(encoded)
		case 6:
			return dsaPrivateSPKI(encoded)
		}
		return pkcs1PrivateSPKI(encoded)
	case firstTag == der.TagOID:
		return singleSPKI(pkcs7Parts(encoded))
	}
	return nil, keyErrorf("DER SEQUENCE starting with tags %#02x, %#02x is not a key, certificate or certificate request", firstTag, secondTag)
}

// checkedSPKI checks the structure of a DER SubjectPublicKeyInfo and returns
// it unchanged. For RSA, EC on a known curve and Ed25519 it checks the shape
// of the key too (an RSA key's two INTEGERs, a point's size and prefix);
// other algorithms are returned after the structural check.
func checkedSPKI(encoded []byte) ([]byte, error) {
	var info spkiInfo
	return parsedSPKI(encoded, &info)
}

// parsedSPKI is checkedSPKI, also filling info with what parseSPKI read.
func parsedSPKI(encoded []byte, info *spkiInfo) ([]byte, error) {
	if err := parseSPKIInto(info, encoded); err != nil {
		return nil, err
	}
	return encoded, nil
}

// spkiInfo is what parseSPKI learns of a SubjectPublicKeyInfo.
type spkiInfo struct {
	algorithm []byte   // OID content bytes
	params    []byte   // the AlgorithmIdentifier's parameters, whole, or nil
	curve     *ecCurve // EC keys on a NIST curve
	key       []byte   // the BIT STRING's content: the public key
	keyBits   int      // the BIT STRING's length in bits
	n, e      []byte   // an RSA key's modulus and exponent, as INTEGER contents
	kind      algKind  // the algorithms parseSPKI checks further
	// An EC key's parameters, one element: a named curve's OID, explicit
	// parameters or NULL (implicitlyCA), by its tag and content.
	ecTag    byte
	ecParams []byte
}

// algKind tells apart the algorithms whose keys parseSPKI checks, so that
// what reads its spkiInfo need not compare their OIDs again.
type algKind uint8

const (
	algOther algKind = iota
	algRSA
	algEC
	algEd25519
)

func parseSPKI(encoded []byte) (spkiInfo, error) {
	var info spkiInfo
	err := parseSPKIInto(&info, encoded)
	return info, err
}

// parseSPKIInto is parseSPKI filling info.
func parseSPKIInto(info *spkiInfo, encoded []byte) error {
	d := der.Reader(encoded)
	spki, ok := d.Read(der.TagSequence)
	if !ok || !d.Empty() {
		return keyErrorf("SubjectPublicKeyInfo is not one complete ASN.1 SEQUENCE")
	}
	fields := der.Reader(spki)
	algContent, ok1 := fields.Read(der.TagSequence)
	alg := der.Reader(algContent)
	algorithm, ok2 := alg.Read(der.TagOID)
	if !ok1 || !ok2 || len(algorithm) == 0 {
		return keyErrorf("SubjectPublicKeyInfo has no algorithm identifier")
	}
	key, keyBits, ok := fields.ReadBitString()
	if !ok || !fields.Empty() {
		return keyErrorf("SubjectPublicKeyInfo's public key is not a BIT STRING ending the structure")
	}
	info.algorithm, info.params, info.key, info.keyBits = algorithm, []byte(alg), key, keyBits
	switch {
	case bytes.Equal(algorithm, oidRSA):
		info.kind = algRSA
		if !alg.Empty() && !bytes.Equal(alg, derNull) {
			return keyErrorf("RSA algorithm parameters are not NULL")
		}
		// Only the structure: certificates with keys Go refuses (a modulus
		// encoded as negative, say) must still give their SPKI.
		k := der.Reader(key)
		rsaKey, ok := k.Read(der.TagSequence)
		fields := der.Reader(rsaKey)
		var ok1, ok2 bool
		info.n, ok1 = fields.Read(der.TagInteger)
		info.e, ok2 = fields.Read(der.TagInteger)
		if keyBits%8 != 0 || !ok || !k.Empty() || !ok1 || !ok2 || !fields.Empty() {
			return keyErrorf("RSA public key is not a SEQUENCE of modulus and exponent")
		}
	case bytes.Equal(algorithm, oidECPublicKey):
		info.kind = algEC
		tag, _, params, ok := alg.Next()
		info.ecTag, info.ecParams = tag, params
		if !ok || !alg.Empty() || (tag != der.TagOID && tag != der.TagSequence && tag != der.TagNull) {
			return keyErrorf("EC algorithm parameters are neither a named curve nor explicit parameters")
		}
		if keyBits%8 != 0 || len(key) == 0 {
			return keyErrorf("EC public key BIT STRING is empty or has unused bits")
		}
		if tag == der.TagOID {
			if info.curve = nistCurveByOID(params); info.curve != nil {
				if _, err := info.curve.pointKind(key); err != nil {
					return err
				}
			}
		}
	case bytes.Equal(algorithm, oidEd25519):
		info.kind = algEd25519
		if !alg.Empty() {
			return keyErrorf("Ed25519 algorithm identifier has parameters")
		}
		if keyBits != 8*ed25519KeyBytes {
			return keyErrorf("Ed25519 public key is %d bits, want %d", keyBits, 8*ed25519KeyBytes)
		}
	}
	return nil
}

// appendUnsigned appends a DER INTEGER with the magnitude mag, which has
// no leading zero bytes.
func appendUnsigned(dst, mag []byte) []byte {
	if mag[0] >= 0x80 {
		return append(append(der.AppendHeader(dst, der.TagInteger, 1+len(mag)), 0), mag...)
	}
	return append(der.AppendHeader(dst, der.TagInteger, len(mag)), mag...)
}

// unsignedLen is the size of the INTEGER appendUnsigned appends.
func unsignedLen(mag []byte) int {
	if mag[0] >= 0x80 {
		return der.Len(1 + len(mag))
	}
	return der.Len(len(mag))
}

// The SPKI builders write DER directly, in one allocation of the exact
// size where they can: reading an OpenSSH key builds one for every line,
// and a cryptobyte.Builder cost more than the rest of the line's reading.

// rsaSPKI builds the SPKI of an RSA key from the magnitudes of n and e.
func rsaSPKI(n, e []byte) []byte {
	seqLen := unsignedLen(n) + unsignedLen(e)
	key := der.AppendHeader(make([]byte, 0, der.Len(seqLen)), der.TagSequence, seqLen)
	return buildSPKIRaw(oidRSA, derNull, appendUnsigned(appendUnsigned(key, n), e))
}

// ecSPKI builds the SPKI of an EC key from its encoded point.
func ecSPKI(c *ecCurve, point []byte) []byte {
	return buildSPKIRaw(oidECPublicKey, oidDER(c.oid), point)
}

func ed25519SPKI(pub []byte) []byte {
	return buildSPKIRaw(oidEd25519, nil, pub)
}
