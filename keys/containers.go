package keys

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rc4"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"strconv"

	"github.com/pkbf/pkbf/internal/pkcs12"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// Containers hold several keys and certificates: PKCS#7/CMS certificate
// bundles (.p7b, .p7c) and PKCS#12 files (.p12, .pfx). Scanner reports
// each object in them as a Key of its own.

// A part is one object of a container.
type part struct {
	what string // "certificate 2", "private key 1"
	spki []byte
	err  error
}

// singleSPKI is the SPKI of a container that holds one key (possibly as
// a key and its certificate), for SPKI, which returns one.
func singleSPKI(parts []part, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	var found []byte
	for _, p := range parts {
		switch {
		case p.err != nil:
			return nil, p.err
		case found == nil:
			found = p.spki
		case !bytes.Equal(mustCanonical(found), mustCanonical(p.spki)):
			return nil, keyErrorf("container holds %d keys and certificates of more than one key; read them with Scanner", len(parts))
		}
	}
	if found == nil {
		return nil, keyErrorf("container holds no key or certificate")
	}
	return found, nil
}

func mustCanonical(spki []byte) []byte {
	if c, err := Canonical(spki); err == nil {
		return c
	}
	return spki
}

var (
	oidPKCS7Data          = oidBytes(1, 2, 840, 113549, 1, 7, 1)
	oidPKCS7SignedData    = oidBytes(1, 2, 840, 113549, 1, 7, 2)
	oidPKCS7EncryptedData = oidBytes(1, 2, 840, 113549, 1, 7, 6)
)

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

// pkcs7Parts reads the certificates of a PKCS#7/CMS ContentInfo holding
// SignedData: SEQUENCE { version, digestAlgorithms, encapContentInfo,
// [0] IMPLICIT certificates OPTIONAL, [1] crls OPTIONAL, signerInfos }.
func pkcs7Parts(der []byte) ([]part, error) {
	s := cryptobyte.String(der)
	var info, contentType, content, signed, certs cryptobyte.String
	var hasCerts bool
	if !s.ReadASN1(&info, cbasn1.SEQUENCE) || !s.Empty() || !info.ReadASN1(&contentType, cbasn1.OBJECT_IDENTIFIER) {
		return nil, keyErrorf("PKCS#7 structure is not a ContentInfo (or uses BER indefinite lengths, which pkbf does not read)")
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

// isPKCS12 reports whether the contents of a DER SEQUENCE starting with
// an INTEGER and a SEQUENCE are a PFX (version 3, a ContentInfo) rather
// than a PKCS#8 key (whose third field is an OCTET STRING).
func isPKCS12(body []byte) bool {
	d := derReader(body)
	version, ok1 := d.read(tagInteger)
	authSafe, ok2 := d.read(tagSequence)
	ci := derReader(authSafe)
	oid, ok3 := ci.read(tagOID)
	return ok1 && ok2 && ok3 && bytes.Equal(version, []byte{3}) &&
		(bytes.Equal(oid, oidPKCS7Data) || bytes.Equal(oid, oidPKCS7SignedData))
}

// Limits on what a PKCS#12 file may ask of pkbf.
const maxPKCS12Depth = 4 // nested SafeContents

// maxPKCS12Iterations bounds one run of PBKDF2 or the PKCS#12 KDF: about
// half a second. A variable so that fuzzing, which explores structure, not
// cost, can keep every input quick.
var maxPKCS12Iterations = 1 << 21

// pkcs12WorkRuns bounds the key derivations of one PKCS#12 file in all,
// in runs at the highest iteration count: its MAC, its encrypted parts and
// every passphrase tried share the budget, so a file of many encrypted
// bags costs about two seconds at most, not half a second a bag.
const pkcs12WorkRuns = 4

// A kdfBudget is what is left of a PKCS#12 file's key-derivation
// iterations.
type kdfBudget struct{ left int }

func newKDFBudget() *kdfBudget { return &kdfBudget{left: pkcs12WorkRuns * maxPKCS12Iterations} }

// spend takes from the budget for runs derivations of the given iteration
// count, or says why they may not run: what names them in the message.
func (b *kdfBudget) spend(what string, iterations, runs int) error {
	if iterations < 1 || iterations > maxPKCS12Iterations {
		return keyErrorf("%s iteration count %d is out of range", what, iterations)
	}
	if iterations*runs > b.left {
		return errTooCostly
	}
	b.left -= iterations * runs
	return nil
}

// errTooCostly stops reading a PKCS#12 file whose derivations would pass
// its budget.
var errTooCostly = keyErrorf("PKCS#12 file asks for more key derivations than pkbf allows one file (%d at the highest iteration count, counting its MAC, its encrypted parts and each passphrase tried): refused as too costly", pkcs12WorkRuns)

// maxContainerParts bounds the certificates and keys read from one
// container, and so the memory a small hostile file can ask for (a
// megabyte holds half a million empty certificates).
const maxContainerParts = 10000

// pkcs12Parts reads the certificates and keys of a PKCS#12 file (RFC
// 7292). Encrypted parts are decrypted with the empty password first, then
// with each of passphrases; the file's MAC, where it has one, tells which
// is right. Private keys give their public keys as [SPKI] does.
func pkcs12Parts(der []byte, passphrases []string) ([]part, error) {
	s := cryptobyte.String(der)
	var pfx, authSafe, contentType, content, data cryptobyte.String
	var version int
	var macData cryptobyte.String
	var hasMAC bool
	if !s.ReadASN1(&pfx, cbasn1.SEQUENCE) || !s.Empty() || !pfx.ReadASN1Integer(&version) ||
		!pfx.ReadASN1(&authSafe, cbasn1.SEQUENCE) ||
		!pfx.ReadOptionalASN1(&macData, &hasMAC, cbasn1.SEQUENCE) || !pfx.Empty() ||
		!authSafe.ReadASN1(&contentType, cbasn1.OBJECT_IDENTIFIER) {
		return nil, keyErrorf("PKCS#12 file is malformed (or uses BER indefinite lengths, which pkbf does not read)")
	}
	if version != 3 {
		return nil, keyErrorf("PKCS#12 version is %d, want 3", version)
	}
	if !bytes.Equal(contentType, oidPKCS7Data) {
		return nil, unsupportedErrorf("PKCS#12 file is signed (public-key integrity mode), which pkbf does not read")
	}
	if !authSafe.ReadASN1(&content, cbasn1.Tag(0).Constructed().ContextSpecific()) || !readOctets(&content, &data) || !content.Empty() {
		return nil, keyErrorf("PKCS#12 authenticated safe is malformed")
	}
	candidates := append([]string{""}, passphrases...)
	budget := newKDFBudget()
	if hasMAC {
		pw, ok, err := pkcs12MACPassword(macData, data, candidates, budget)
		if err != nil {
			return nil, err
		}
		if !ok {
			if len(passphrases) == 0 {
				return nil, encryptedErrorf("PKCS#12 file is protected by a password: give it with a passphrase option")
			}
			return nil, encryptedErrorf("PKCS#12 file's integrity check fails with the passphrase given: wrong passphrase, or a damaged file")
		}
		candidates = []string{pw}
	}
	r := &pkcs12Reader{passwords: candidates, budget: budget}
	if err := r.authenticatedSafe(data); err != nil {
		return nil, err
	}
	if len(r.parts) == 0 {
		return nil, keyErrorf("PKCS#12 file holds no certificate or key")
	}
	return r.parts, nil
}

// readOctets reads an OCTET STRING, primitive or constructed of primitive
// pieces (as some writers use), into out.
func readOctets(s *cryptobyte.String, out *cryptobyte.String) bool {
	return readOctetsTagged(s, out, cbasn1.OCTET_STRING)
}

// readOctetsTagged reads octets under tag (OCTET STRING, or an IMPLICIT
// tag in its place), primitive or constructed of OCTET STRING pieces.
func readOctetsTagged(s *cryptobyte.String, out *cryptobyte.String, tag cbasn1.Tag) bool {
	if s.PeekASN1Tag(tag) {
		return s.ReadASN1(out, tag)
	}
	var pieces cryptobyte.String
	if !s.ReadASN1(&pieces, tag.Constructed()) {
		return false
	}
	var all []byte
	for !pieces.Empty() {
		var piece cryptobyte.String
		if !pieces.ReadASN1(&piece, cbasn1.OCTET_STRING) {
			return false
		}
		all = append(all, piece...)
	}
	*out = all
	return true
}

type pkcs12Reader struct {
	passwords []string // to try, in order
	budget    *kdfBudget
	parts     []part
	certs     int
	keys      int
}

// authenticatedSafe reads SEQUENCE OF ContentInfo, each data or encryptedData.
func (r *pkcs12Reader) authenticatedSafe(der []byte) error {
	s := cryptobyte.String(der)
	var infos cryptobyte.String
	if !s.ReadASN1(&infos, cbasn1.SEQUENCE) {
		return keyErrorf("PKCS#12 authenticated safe is not a SEQUENCE")
	}
	for !infos.Empty() {
		var info, contentType, content cryptobyte.String
		if !infos.ReadASN1(&info, cbasn1.SEQUENCE) || !info.ReadASN1(&contentType, cbasn1.OBJECT_IDENTIFIER) ||
			!info.ReadASN1(&content, cbasn1.Tag(0).Constructed().ContextSpecific()) {
			return keyErrorf("PKCS#12 content is malformed")
		}
		switch {
		case bytes.Equal(contentType, oidPKCS7Data):
			var data cryptobyte.String
			if !readOctets(&content, &data) {
				return keyErrorf("PKCS#12 data content is malformed")
			}
			if err := r.safeContents(data, 0); err != nil {
				return err
			}
		case bytes.Equal(contentType, oidPKCS7EncryptedData):
			// EncryptedData { version, EncryptedContentInfo { contentType,
			// algorithm, [0] IMPLICIT encryptedContent } }
			var ed, eci, alg, encrypted cryptobyte.String
			if !content.ReadASN1(&ed, cbasn1.SEQUENCE) || !ed.SkipASN1(cbasn1.INTEGER) ||
				!ed.ReadASN1(&eci, cbasn1.SEQUENCE) || !eci.SkipASN1(cbasn1.OBJECT_IDENTIFIER) ||
				!eci.ReadASN1Element(&alg, cbasn1.SEQUENCE) ||
				!readOctetsTagged(&eci, &encrypted, cbasn1.Tag(0).ContextSpecific()) {
				return keyErrorf("PKCS#12 encrypted content is malformed or missing")
			}
			plain, err := r.decrypt(alg, encrypted, "certificates")
			if err != nil {
				return err
			}
			if err := r.safeContents(plain, 0); err != nil {
				return err
			}
		default:
			return unsupportedErrorf("PKCS#12 content type %s is not supported (enveloped data?)", oidString(contentType))
		}
	}
	return nil
}

var (
	oidKeyBag          = oidBytes(1, 2, 840, 113549, 1, 12, 10, 1, 1)
	oidShroudedKeyBag  = oidBytes(1, 2, 840, 113549, 1, 12, 10, 1, 2)
	oidCertBag         = oidBytes(1, 2, 840, 113549, 1, 12, 10, 1, 3)
	oidSafeContentsBag = oidBytes(1, 2, 840, 113549, 1, 12, 10, 1, 6)
	oidX509Cert        = oidBytes(1, 2, 840, 113549, 1, 9, 22, 1)
)

// safeContents reads SEQUENCE OF SafeBag { bagId, [0] bagValue, attributes }.
func (r *pkcs12Reader) safeContents(der []byte, depth int) error {
	if depth > maxPKCS12Depth {
		return keyErrorf("PKCS#12 safe contents are nested too deeply")
	}
	s := cryptobyte.String(der)
	var bags cryptobyte.String
	if !s.ReadASN1(&bags, cbasn1.SEQUENCE) {
		return keyErrorf("PKCS#12 safe contents are not a SEQUENCE")
	}
	for !bags.Empty() {
		var bag, id, value cryptobyte.String
		if !bags.ReadASN1(&bag, cbasn1.SEQUENCE) || !bag.ReadASN1(&id, cbasn1.OBJECT_IDENTIFIER) ||
			!bag.ReadASN1(&value, cbasn1.Tag(0).Constructed().ContextSpecific()) {
			return keyErrorf("PKCS#12 safe bag is malformed")
		}
		switch {
		case bytes.Equal(id, oidCertBag):
			// CertBag { certId, [0] EXPLICIT OCTET STRING certValue }
			var cb, certID, wrapped, cert cryptobyte.String
			if !value.ReadASN1(&cb, cbasn1.SEQUENCE) || !cb.ReadASN1(&certID, cbasn1.OBJECT_IDENTIFIER) {
				return keyErrorf("PKCS#12 certificate bag is malformed")
			}
			if !bytes.Equal(certID, oidX509Cert) {
				continue // an SDSI certificate: no X.509 public key
			}
			if !cb.ReadASN1(&wrapped, cbasn1.Tag(0).Constructed().ContextSpecific()) || !readOctets(&wrapped, &cert) {
				return keyErrorf("PKCS#12 certificate bag is malformed")
			}
			r.certs++
			spki, err := certificateSPKI(cert)
			if err := r.add(part{what: "certificate " + strconv.Itoa(r.certs), spki: spki, err: err}); err != nil {
				return err
			}
		case bytes.Equal(id, oidKeyBag):
			var key cryptobyte.String
			if !value.ReadASN1Element(&key, cbasn1.SEQUENCE) {
				return keyErrorf("PKCS#12 key bag is malformed")
			}
			if err := r.addKey(pkcs8SPKI(key)); err != nil {
				return err
			}
		case bytes.Equal(id, oidShroudedKeyBag):
			// EncryptedPrivateKeyInfo { algorithm, OCTET STRING }
			var epki, alg, encrypted cryptobyte.String
			if !value.ReadASN1(&epki, cbasn1.SEQUENCE) || !epki.ReadASN1Element(&alg, cbasn1.SEQUENCE) ||
				!epki.ReadASN1(&encrypted, cbasn1.OCTET_STRING) {
				return keyErrorf("PKCS#12 encrypted key bag is malformed")
			}
			plain, err := r.decrypt(alg, encrypted, "private key")
			if err == errTooCostly {
				return err
			}
			if err == nil {
				err = r.addKey(pkcs8SPKI(plain))
			} else {
				err = r.addKey(nil, err)
			}
			if err != nil {
				return err
			}
		case bytes.Equal(id, oidSafeContentsBag):
			var inner cryptobyte.String
			if !value.ReadASN1Element(&inner, cbasn1.SEQUENCE) {
				return keyErrorf("PKCS#12 nested safe contents are malformed")
			}
			if err := r.safeContents(inner, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *pkcs12Reader) addKey(spki []byte, err error) error {
	r.keys++
	return r.add(part{what: "private key " + strconv.Itoa(r.keys), spki: spki, err: err})
}

// add records a part, unless the file already gave maxContainerParts.
func (r *pkcs12Reader) add(p part) error {
	if len(r.parts) == maxContainerParts {
		return keyErrorf("PKCS#12 file holds more than %d certificates and keys: refused", maxContainerParts)
	}
	r.parts = append(r.parts, p)
	return nil
}

// decrypt decrypts with the first password that gives well-padded plain
// text that is one DER SEQUENCE.
func (r *pkcs12Reader) decrypt(alg, data []byte, what string) ([]byte, error) {
	for _, pw := range r.passwords {
		plain, err := pbeDecrypt(alg, data, pw, r.budget)
		if err == nil {
			s := cryptobyte.String(plain)
			var seq cryptobyte.String
			if s.ReadASN1(&seq, cbasn1.SEQUENCE) && s.Empty() {
				return plain, nil
			}
			err = errBadPadding
		}
		if err != errBadPadding {
			return nil, err
		}
	}
	if len(r.passwords) == 1 && r.passwords[0] == "" {
		return nil, encryptedErrorf("PKCS#12 %s is encrypted with a password: give it with a passphrase option", what)
	}
	return nil, encryptedErrorf("PKCS#12 %s does not decrypt with the passphrase given: wrong passphrase, or damaged data", what)
}

// errBadPadding marks a decryption that did not end in valid padding: the
// wrong password, most likely.
var errBadPadding = keyErrorf("decryption gives bad padding")

var (
	oidPBKDF2      = oidBytes(1, 2, 840, 113549, 1, 5, 12)
	oidHMACSHA1    = oidBytes(1, 2, 840, 113549, 2, 7)
	oidHMACSHA224  = oidBytes(1, 2, 840, 113549, 2, 8)
	oidHMACSHA256  = oidBytes(1, 2, 840, 113549, 2, 9)
	oidHMACSHA384  = oidBytes(1, 2, 840, 113549, 2, 10)
	oidHMACSHA512  = oidBytes(1, 2, 840, 113549, 2, 11)
	oidAES128CBC   = oidBytes(2, 16, 840, 1, 101, 3, 4, 1, 2)
	oidAES192CBC   = oidBytes(2, 16, 840, 1, 101, 3, 4, 1, 22)
	oidAES256CBC   = oidBytes(2, 16, 840, 1, 101, 3, 4, 1, 42)
	oidDESEDE3CBC  = oidBytes(1, 2, 840, 113549, 3, 7)
	oidPBESHA1RC4  = oidBytes(1, 2, 840, 113549, 1, 12, 1, 1) // 128-bit
	oidPBESHA1RC4s = oidBytes(1, 2, 840, 113549, 1, 12, 1, 2) // 40-bit
	oidPBESHA13DES = oidBytes(1, 2, 840, 113549, 1, 12, 1, 3)
	oidPBESHA12DES = oidBytes(1, 2, 840, 113549, 1, 12, 1, 4)
	oidPBESHA1RC2  = oidBytes(1, 2, 840, 113549, 1, 12, 1, 5) // 128-bit
	oidPBESHA1RC2s = oidBytes(1, 2, 840, 113549, 1, 12, 1, 6) // 40-bit
	oidSHA1        = oidBytes(1, 3, 14, 3, 2, 26)
	oidSHA224      = oidBytes(2, 16, 840, 1, 101, 3, 4, 2, 4)
	oidSHA256      = oidBytes(2, 16, 840, 1, 101, 3, 4, 2, 1)
	oidSHA384      = oidBytes(2, 16, 840, 1, 101, 3, 4, 2, 2)
	oidSHA512      = oidBytes(2, 16, 840, 1, 101, 3, 4, 2, 3)
)

// hashByOID returns the hash of a digest or HMAC OID.
func hashByOID(oid []byte) func() hash.Hash {
	switch {
	case bytes.Equal(oid, oidSHA1), bytes.Equal(oid, oidHMACSHA1):
		return sha1.New
	case bytes.Equal(oid, oidSHA224), bytes.Equal(oid, oidHMACSHA224):
		return sha256.New224
	case bytes.Equal(oid, oidSHA256), bytes.Equal(oid, oidHMACSHA256):
		return sha256.New
	case bytes.Equal(oid, oidSHA384), bytes.Equal(oid, oidHMACSHA384):
		return sha512.New384
	case bytes.Equal(oid, oidSHA512), bytes.Equal(oid, oidHMACSHA512):
		return sha512.New
	}
	return nil
}

// pbeDecrypt decrypts data under a password-based encryption algorithm:
// PBES2 (PBKDF2 with AES-CBC or 3DES-CBC) or a PKCS#12 PBE (3DES, RC2, RC4).
// Each try spends from budget.
func pbeDecrypt(alg, data []byte, password string, budget *kdfBudget) ([]byte, error) {
	s := cryptobyte.String(alg)
	var algSeq, oid, params cryptobyte.String
	if !s.ReadASN1(&algSeq, cbasn1.SEQUENCE) || !algSeq.ReadASN1(&oid, cbasn1.OBJECT_IDENTIFIER) ||
		!algSeq.ReadASN1(&params, cbasn1.SEQUENCE) {
		return nil, keyErrorf("encryption algorithm identifier is malformed")
	}
	if bytes.Equal(oid, oidPBES2) {
		return pbes2Decrypt(params, data, password, budget)
	}
	var salt cryptobyte.String
	var iterations int
	if !params.ReadASN1(&salt, cbasn1.OCTET_STRING) || !params.ReadASN1Integer(&iterations) {
		return nil, keyErrorf("PKCS#12 PBE parameters are malformed")
	}
	// Runs of the KDF, one per 20-byte SHA-1 block: RC2 a key and an IV,
	// RC4 a key only, 3DES a 24-byte key (two blocks, or the two-key
	// variant's two calls) and an IV.
	runs := 2
	if bytes.Equal(oid, oidPBESHA1RC4) || bytes.Equal(oid, oidPBESHA1RC4s) {
		runs = 1
	} else if bytes.Equal(oid, oidPBESHA13DES) || bytes.Equal(oid, oidPBESHA12DES) {
		runs = 3
	}
	if err := budget.spend("PKCS#12 PBE", iterations, runs); err != nil {
		return nil, err
	}
	pw := pkcs12.BMPPassword(password)
	kdf := func(id byte, size int) []byte { return pkcs12.KDF(sha1.New, id, pw, salt, iterations, size) }
	switch {
	case bytes.Equal(oid, oidPBESHA13DES), bytes.Equal(oid, oidPBESHA12DES):
		key := kdf(1, 24)
		if bytes.Equal(oid, oidPBESHA12DES) {
			key = append(kdf(1, 16), kdf(1, 8)...)
		}
		block, err := des.NewTripleDESCipher(key)
		if err != nil {
			return nil, keyErrorf("3DES key: %v", err)
		}
		return cbcDecrypt(block, kdf(2, 8), data)
	case bytes.Equal(oid, oidPBESHA1RC2), bytes.Equal(oid, oidPBESHA1RC2s):
		size := 16
		if bytes.Equal(oid, oidPBESHA1RC2s) {
			size = 5
		}
		return cbcDecrypt(pkcs12.NewRC2(kdf(1, size), 8*size), kdf(2, 8), data)
	case bytes.Equal(oid, oidPBESHA1RC4), bytes.Equal(oid, oidPBESHA1RC4s):
		size := 16
		if bytes.Equal(oid, oidPBESHA1RC4s) {
			size = 5
		}
		c, err := rc4.NewCipher(kdf(1, size))
		if err != nil {
			return nil, keyErrorf("RC4 key: %v", err)
		}
		out := make([]byte, len(data))
		c.XORKeyStream(out, data)
		return out, nil
	}
	return nil, unsupportedErrorf("encryption algorithm %s is not supported", oidString(oid))
}

// pbes2Decrypt decrypts under PBES2 (RFC 8018): PBKDF2 and a CBC cipher.
func pbes2Decrypt(params cryptobyte.String, data []byte, password string, budget *kdfBudget) ([]byte, error) {
	var kdf, kdfOID, kdfParams, scheme, schemeOID, salt, iv cryptobyte.String
	var iterations, keyLength int
	var prf cryptobyte.String
	var hasPRF bool
	if !params.ReadASN1(&kdf, cbasn1.SEQUENCE) || !kdf.ReadASN1(&kdfOID, cbasn1.OBJECT_IDENTIFIER) ||
		!bytes.Equal(kdfOID, oidPBKDF2) || !kdf.ReadASN1(&kdfParams, cbasn1.SEQUENCE) ||
		!kdfParams.ReadASN1(&salt, cbasn1.OCTET_STRING) || !kdfParams.ReadASN1Integer(&iterations) ||
		kdfParams.PeekASN1Tag(cbasn1.INTEGER) && !kdfParams.ReadASN1Integer(&keyLength) ||
		!kdfParams.ReadOptionalASN1(&prf, &hasPRF, cbasn1.SEQUENCE) ||
		!params.ReadASN1(&scheme, cbasn1.SEQUENCE) || !scheme.ReadASN1(&schemeOID, cbasn1.OBJECT_IDENTIFIER) ||
		!scheme.ReadASN1(&iv, cbasn1.OCTET_STRING) {
		return nil, keyErrorf("PBES2 parameters are malformed or not PBKDF2")
	}
	h := sha1.New
	if hasPRF {
		var prfOID cryptobyte.String
		if !prf.ReadASN1(&prfOID, cbasn1.OBJECT_IDENTIFIER) || hashByOID(prfOID) == nil {
			return nil, keyErrorf("PBKDF2 pseudo-random function is not supported")
		}
		h = hashByOID(prfOID)
	}
	var size int
	var newBlock func([]byte) (cipher.Block, error)
	switch {
	case bytes.Equal(schemeOID, oidAES128CBC):
		size, newBlock = 16, aes.NewCipher
	case bytes.Equal(schemeOID, oidAES192CBC):
		size, newBlock = 24, aes.NewCipher
	case bytes.Equal(schemeOID, oidAES256CBC):
		size, newBlock = 32, aes.NewCipher
	case bytes.Equal(schemeOID, oidDESEDE3CBC):
		size, newBlock = 24, des.NewTripleDESCipher
	default:
		return nil, unsupportedErrorf("PBES2 cipher %s is not supported", oidString(schemeOID))
	}
	// PBKDF2 runs its iterations once for each block of the hash's size.
	if err := budget.spend("PBKDF2", iterations, (size+h().Size()-1)/h().Size()); err != nil {
		return nil, err
	}
	key, err := pbkdf2.Key(h, password, salt, iterations, size)
	if err != nil {
		return nil, keyErrorf("PBKDF2: %v", err)
	}
	block, err := newBlock(key)
	if err != nil {
		return nil, keyErrorf("PBES2 key: %v", err)
	}
	return cbcDecrypt(block, iv, data)
}

// cbcDecrypt decrypts CBC and removes PKCS#7 padding.
func cbcDecrypt(block cipher.Block, iv, data []byte) ([]byte, error) {
	out, err := pkcs12.DecryptCBC(block, iv, data)
	switch {
	case err == pkcs12.ErrBadPadding:
		return nil, errBadPadding
	case err != nil:
		return nil, keyErrorf("%v", err)
	}
	return out, nil
}

// pkcs12MACPassword finds which of candidates makes the PKCS#12 MAC
// (MacData { DigestInfo { algorithm, digest }, salt, iterations DEFAULT 1 })
// verify over data. The empty password is tried both as PKCS#12 encodes it
// and as no bytes at all, as writers differ.
func pkcs12MACPassword(macData cryptobyte.String, data []byte, candidates []string, budget *kdfBudget) (string, bool, error) {
	var digestInfo, alg, algOID, digest, salt cryptobyte.String
	iterations := 1
	if !macData.ReadASN1(&digestInfo, cbasn1.SEQUENCE) || !digestInfo.ReadASN1(&alg, cbasn1.SEQUENCE) ||
		!alg.ReadASN1(&algOID, cbasn1.OBJECT_IDENTIFIER) || !digestInfo.ReadASN1(&digest, cbasn1.OCTET_STRING) ||
		!macData.ReadASN1(&salt, cbasn1.OCTET_STRING) ||
		macData.PeekASN1Tag(cbasn1.INTEGER) && !macData.ReadASN1Integer(&iterations) {
		return "", false, keyErrorf("PKCS#12 MAC is malformed")
	}
	h := hashByOID(algOID)
	if h == nil {
		return "", false, unsupportedErrorf("PKCS#12 MAC algorithm %s is not supported", oidString(algOID))
	}
	var spent error
	try := func(pw []byte) bool {
		if spent = budget.spend("PKCS#12 MAC", iterations, 1); spent != nil {
			return false
		}
		key := pkcs12.KDF(h, 3, pw, salt, iterations, h().Size())
		m := hmac.New(h, key)
		m.Write(data)
		return hmac.Equal(m.Sum(nil), digest)
	}
	for _, c := range candidates {
		if try(pkcs12.BMPPassword(c)) || spent == nil && c == "" && try(nil) {
			return c, true, nil
		}
		if spent != nil {
			return "", false, spent
		}
	}
	return "", false, nil
}
