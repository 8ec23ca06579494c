package keys

import (
	"bytes"
	"crypto/hmac"
	"strconv"

	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/pkbf/pkbf/internal/der"
	"github.com/pkbf/pkbf/keys/internal/pkcs12"
	"golang.org/x/crypto/cryptobyte"
)

// isPKCS12 reports whether the contents of a DER SEQUENCE starting with
// an INTEGER and a SEQUENCE are a PFX (version 3, a ContentInfo) rather
// than a PKCS#8 key (whose third field is an OCTET STRING).
func isPKCS12(body []byte) bool {
	d := der.Reader(body)
	version, ok1 := d.Read(der.TagInteger)
	authSafe, ok2 := d.Read(der.TagSequence)
	ci := der.Reader(authSafe)
	oid, ok3 := ci.Read(der.TagOID)
	return ok1 && ok2 && ok3 && bytes.Equal(version, []byte{3}) &&
		(bytes.Equal(oid, oidPKCS7Data) || bytes.Equal(oid, oidPKCS7SignedData))
}

// Limits on what a PKCS#12 file may ask of pkbf.
const maxPKCS12Depth = 4

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
// iterations, with the caller's own bound (Scanner.SetKDFWork), if any.
type kdfBudget struct {
	left   int
	shared func(iterations int) error
}

func newKDFBudget(shared func(int) error) *kdfBudget {
	return &kdfBudget{left: pkcs12WorkRuns * maxPKCS12Iterations, shared: shared}
}

// spend takes from the budget for runs derivations of the given iteration
// count, or says why they may not run: what names them in the message.
func (b *kdfBudget) spend(what string, iterations, runs int) error {
	if iterations < 1 || iterations > maxPKCS12Iterations {
		return keyErrorf("%s iteration count %d is out of range", what, iterations)
	}
	if iterations*runs > b.left {
		return errTooCostly
	}
	if b.shared != nil {
		if err := b.shared(iterations * runs); err != nil {
			return keyErrorf("PKCS#12 file's key derivations refused: %w", err)
		}
	}
	b.left -= iterations * runs
	return nil
}

// errTooCostly stops reading a PKCS#12 file whose derivations would pass
// its budget.
var errTooCostly = keyErrorf("PKCS#12 file asks for more key derivations than pkbf allows one file (%d at the highest iteration count, counting its MAC, its encrypted parts and each passphrase tried): refused as too costly", pkcs12WorkRuns)

// pkcs12Parts reads the certificates and keys of a PKCS#12 file (RFC
// 7292). Encrypted parts are decrypted with the empty password first, then
// with each of passphrases; the file's MAC, where it has one, tells which
// is right. Private keys give their public keys as [SPKI] does. kdfWork,
// if not nil, is asked before each key derivation.
func pkcs12Parts(der []byte, passphrases []string, kdfWork func(int) error) ([]part, error) {
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
	budget := newKDFBudget(kdfWork)
	if hasMAC {
		pw, ok, err := pkcs12MACPassword(macData, data, candidates, budget)
		if err != nil {
			return nil, err
		}
		if !ok {
			if len(passphrases) == 0 {
				return nil, passphraseErrorf("PKCS#12 file is protected by a password, and no passphrase was given")
			}
			return nil, passphraseErrorf("PKCS#12 file's integrity check fails with the passphrases given: wrong passphrase, or a damaged file")
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
	oidKeyBag          = der.OID(1, 2, 840, 113549, 1, 12, 10, 1, 1)
	oidShroudedKeyBag  = der.OID(1, 2, 840, 113549, 1, 12, 10, 1, 2)
	oidCertBag         = der.OID(1, 2, 840, 113549, 1, 12, 10, 1, 3)
	oidSafeContentsBag = der.OID(1, 2, 840, 113549, 1, 12, 10, 1, 6)
	oidX509Cert        = der.OID(1, 2, 840, 113549, 1, 9, 22, 1)
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
		return nil, passphraseErrorf("PKCS#12 %s is encrypted with a password, and no passphrase was given", what)
	}
	return nil, passphraseErrorf("PKCS#12 %s does not decrypt with the passphrases given: wrong passphrase, or damaged data", what)
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
