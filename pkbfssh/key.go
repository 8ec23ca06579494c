package pkbfssh

import (
	"bytes"
	"crypto/ecdh"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"golang.org/x/crypto/cryptobyte"

	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
)

// Key is an OpenSSH public key as sshd reads it, with what a filter needs
// to look it up. A Key is not changed after it is made and is safe for
// concurrent use.
type Key struct {
	// Type is the key's canonical type name, as sshd writes it:
	// "ssh-rsa" for a key given as rsa-sha2-256, say.
	Type string
	// Fingerprint is the key's SHA-256 fingerprint as ssh-keygen -l and
	// sshd's logs show it ("SHA256:" and unpadded base64); for a
	// certificate, that of the key it certifies, as there.
	Fingerprint string
	// SPKI is the DER SubjectPublicKeyInfo of the key, or of the key a
	// certificate certifies.
	SPKI []byte
	// CA is the key that signed a certificate, or nil for a plain key.
	CA *Key
	// Principals are a certificate's valid principals (user or host
	// names), as sshd reads them; nil for a plain key.
	Principals []string
}

// Compromised reports whether f finds k or, for a certificate, the CA key
// that signed it, probably compromised, as [Key.CompromisedKey] decides.
func (k *Key) Compromised(f keycheck.KeyChecker) (probably bool, err error) {
	held, err := k.CompromisedKey(f)
	return held != nil, err
}

// CompromisedKey returns the key of k that f finds probably compromised
// (a [keycheck.Checker] over a filter: one the filter probably holds, or
// the weak-key checks refuse: [keycheck.Verdict.Refuse]): k itself (a
// plain key, or the key a certificate certifies), else, for a
// certificate, its CA key k.CA; nil when f finds neither. When f cannot
// answer (a filter file cut short under it: an error wrapping
// pkbf.ErrFileChanged), it returns k with that error: a key that could
// not be checked is no clean key.
func (k *Key) CompromisedKey(f keycheck.KeyChecker) (*Key, error) {
	held, _, err := k.refused(f)
	return held, err
}

// refused is CompromisedKey, with why the key returned is refused.
func (k *Key) refused(f keycheck.KeyChecker) (held *Key, why string, err error) {
	for c := k; c != nil; c = c.CA {
		switch v := f.CheckKey(c.SPKI); {
		case v.Probably && len(v.Findings) == 0:
			return c, "probably compromised", nil
		case v.Refuse():
			return c, v.Reason(), nil
		case v.Err != nil:
			return k, "", v.Err
		}
	}
	return nil, "", nil
}

// PwnedkeysFingerprint returns the pwnedkeys name of the key: the hex
// SHA-256 of its canonical SPKI.
func (k *Key) PwnedkeysFingerprint() string {
	if c, err := keys.Canonical(k.SPKI); err == nil {
		return keys.Fingerprint(c)
	}
	return keys.Fingerprint(k.SPKI)
}

// ParseKey reads the key sshd passes to an AuthorizedKeysCommand as %t
// (its type name) and %k (its blob in base64). Errors wrap ErrNoKey.
func ParseKey(typ, encoded string) (*Key, error) {
	t := lineType(typ)
	if t == nil {
		return nil, noKeyf("unknown OpenSSH key type %q", shorten(typ))
	}
	blob, err := decodeBase64([]byte(encoded))
	if err != nil {
		return nil, err
	}
	k, kt, err := parseBlob(blob, true, true)
	if err != nil {
		return nil, err
	}
	if !t.same(kt) {
		return nil, noKeyf("key type %s given for a %s key", typ, k.Type)
	}
	return k, nil
}

// A key type as OpenSSH's sshkey.c lists it (keyimpls): the name on a
// line or at the start of a blob, the short name a blob may give instead
// (any case; plain keys only), the algorithm, whether it is a
// certificate, and the curve of ECDSA keys.
type keyType struct {
	name, short string
	alg         int
	cert        bool
	curve       string
}

const (
	algEd25519 = iota
	algEd25519SK
	algECDSA
	algECDSASK
	algDSA
	algRSA
	algMLDSA44
	algMLDSA65
	algMLDSA87
)

// keyTypes are in OpenSSH's order: the first name for an algorithm,
// certificate flag and curve is the one sshd writes a key under.
// XMSS is left out, as Debian's and most builds leave it out.
var keyTypes = []keyType{
	{"ssh-ed25519", "ED25519", algEd25519, false, ""},
	{"ssh-ed25519-cert-v01@openssh.com", "", algEd25519, true, ""},
	{"sk-ssh-ed25519@openssh.com", "ED25519-SK", algEd25519SK, false, ""},
	{"sk-ssh-ed25519-cert-v01@openssh.com", "", algEd25519SK, true, ""},
	{"ecdsa-sha2-nistp256", "ECDSA", algECDSA, false, "nistp256"},
	{"ecdsa-sha2-nistp256-cert-v01@openssh.com", "", algECDSA, true, "nistp256"},
	{"ecdsa-sha2-nistp384", "ECDSA", algECDSA, false, "nistp384"},
	{"ecdsa-sha2-nistp384-cert-v01@openssh.com", "", algECDSA, true, "nistp384"},
	{"ecdsa-sha2-nistp521", "ECDSA", algECDSA, false, "nistp521"},
	{"ecdsa-sha2-nistp521-cert-v01@openssh.com", "", algECDSA, true, "nistp521"},
	{"sk-ecdsa-sha2-nistp256@openssh.com", "ECDSA-SK", algECDSASK, false, "nistp256"},
	{"sk-ecdsa-sha2-nistp256-cert-v01@openssh.com", "", algECDSASK, true, "nistp256"},
	{"webauthn-sk-ecdsa-sha2-nistp256@openssh.com", "ECDSA-SK", algECDSASK, false, "nistp256"},
	{"ssh-dss", "DSA", algDSA, false, ""},
	{"ssh-dss-cert-v01@openssh.com", "", algDSA, true, ""},
	{"ssh-rsa", "RSA", algRSA, false, ""},
	{"ssh-rsa-cert-v01@openssh.com", "", algRSA, true, ""},
	{"rsa-sha2-256", "RSA", algRSA, false, ""},
	{"rsa-sha2-256-cert-v01@openssh.com", "", algRSA, true, ""},
	{"rsa-sha2-512", "RSA", algRSA, false, ""},
	{"rsa-sha2-512-cert-v01@openssh.com", "", algRSA, true, ""},
}

// goKeyTypes are the key types x/crypto/ssh reads and sshd does not:
// the ML-DSA keys of draft-sfluhrer-ssh-mldsa, which x/crypto/ssh v0.58
// offers and accepts by default when built with Go 1.27 (OpenSSH 9.2
// knows none). A Go server's keys are read with them; a line's or sshd's
// never are.
var goKeyTypes = []keyType{
	{"ssh-mldsa-44", "", algMLDSA44, false, ""},
	{"ssh-mldsa-65", "", algMLDSA65, false, ""},
	{"ssh-mldsa-87", "", algMLDSA87, false, ""},
}

// same reports whether two types are one to sshd: the same algorithm,
// certificate or not, and curve (sshkey_read's type and curve checks).
func (t *keyType) same(u *keyType) bool {
	return t.alg == u.alg && t.cert == u.cert && t.curve == u.curve
}

// canonical returns the type sshd writes a key of type t under.
func (t *keyType) canonical(cert bool) *keyType {
	for i := range keyTypes {
		if u := &keyTypes[i]; u.alg == t.alg && u.cert == cert && u.curve == t.curve {
			return u
		}
	}
	return t
}

// lineType returns the type a line's first field names: full names only
// (sshkey_read's peek_type_nid), or nil.
func lineType(name string) *keyType {
	for i := range keyTypes {
		if keyTypes[i].name == name {
			return &keyTypes[i]
		}
	}
	return nil
}

// blobType returns the type a blob's name string names: a full name, or
// the short name of a plain key in any case (sshkey_type_from_name).
func blobType(name string) *keyType {
	for i := range keyTypes {
		t := &keyTypes[i]
		if t.name == name || !t.cert && strings.EqualFold(t.short, name) {
			return t
		}
	}
	return nil
}

// goKeyType returns the type of goKeyTypes named name, or nil.
func goKeyType(name string) *keyType {
	for i := range goKeyTypes {
		if goKeyTypes[i].name == name {
			return &goKeyTypes[i]
		}
	}
	return nil
}

// curveSizes are the coordinate sizes of the curves OpenSSH knows.
var curveSizes = map[string]int{"nistp256": 32, "nistp384": 48, "nistp521": 66}

// curveOf returns the curve for an ECDSA point check.
func curveOf(name string) ecdh.Curve {
	switch name {
	case "nistp256":
		return ecdh.P256()
	case "nistp384":
		return ecdh.P384()
	}
	return ecdh.P521()
}

// maxBignum is the longest multiple-precision integer OpenSSH reads
// (SSHBUF_MAX_BIGNUM, 16384 bits), and minRSABits the smallest RSA
// modulus it accepts (SSH_RSA_MINIMUM_MODULUS_SIZE).
const (
	maxBignum  = 16384 / 8
	minRSABits = 1024
)

// parseBlob reads a key blob as sshd's sshkey_from_blob does, and returns
// the key with its type. A certificate's CA key is read too; its
// signature is not checked (sshd checks it, and refuses what fails).
// Without sshd, the limits OpenSSH sets and x/crypto/ssh does not (the
// smallest RSA modulus, a NUL byte in a security key's application) are
// not applied, and the key types only x/crypto/ssh reads (goKeyTypes) are
// read: the blob is then one x/crypto/ssh parsed and re-encoded, and a Go
// server refuses it only for being compromised.
func parseBlob(blob []byte, allowCert, sshd bool) (*Key, *keyType, error) {
	s := cryptobyte.String(blob)
	name, ok := readCString(&s)
	if !ok {
		return nil, nil, noKeyf("key blob is cut short before its type")
	}
	t := blobType(string(name))
	if t == nil && !sshd {
		t = goKeyType(string(name))
	}
	switch {
	case t == nil:
		return nil, nil, noKeyf("unknown OpenSSH key type %q in the key blob", shorten(string(name)))
	case t.cert && !allowCert:
		return nil, nil, noKeyf("a certificate's CA key is itself a certificate")
	case t.cert && !skipString(&s):
		return nil, nil, noKeyf("certificate is cut short before its nonce")
	}
	plain := t.canonical(false)
	var b cryptobyte.Builder
	addString(&b, []byte(plain.name))
	switch t.alg {
	case algRSA:
		e, okE := readBignum(&s)
		n, okN := readBignum(&s)
		if !okE || !okN {
			return nil, nil, noKeyf("RSA key's exponent or modulus is cut short, negative or too long")
		}
		if bits := bitLen(n); sshd && bits < minRSABits {
			return nil, nil, noKeyf("RSA modulus of %d bits: OpenSSH refuses under %d", bits, minRSABits)
		}
		addBignum(&b, e)
		addBignum(&b, n)
	case algDSA:
		for _, part := range []string{"p", "q", "g", "y"} {
			v, ok := readBignum(&s)
			if !ok {
				return nil, nil, noKeyf("DSA %s is cut short, negative or too long", part)
			}
			addBignum(&b, v)
		}
	case algECDSA, algECDSASK:
		// The curve comes from the blob's type name: a short name
		// ("ECDSA") names none, and sshd refuses it.
		if t.curve == "" || t.name != string(name) {
			return nil, nil, noKeyf("ECDSA key blob's type %q names no curve", shorten(string(name)))
		}
		curve, ok := readCString(&s)
		if !ok || string(curve) != t.curve {
			return nil, nil, noKeyf("%s key's curve is %q", t.name, shorten(string(curve)))
		}
		var point []byte
		if !readString(&s, &point) || len(point) != 1+2*curveSizes[t.curve] || point[0] != 4 {
			return nil, nil, noKeyf("%s key's point is not an uncompressed %s point", t.name, t.curve)
		}
		if _, err := curveOf(t.curve).NewPublicKey(point); err != nil {
			return nil, nil, noKeyf("%s key's point is not on the curve", t.name)
		}
		addString(&b, curve)
		addString(&b, point)
	case algMLDSA44, algMLDSA65, algMLDSA87:
		// keys.SSHPublicKeySPKI checks the key's length.
		var pub []byte
		if !readString(&s, &pub) {
			return nil, nil, noKeyf("%s key is cut short", t.name)
		}
		addString(&b, pub)
	default: // Ed25519, plain or on a security key
		var pub []byte
		if !readString(&s, &pub) || len(pub) != 32 {
			return nil, nil, noKeyf("Ed25519 key is not 32 bytes")
		}
		addString(&b, pub)
	}
	if t.alg == algEd25519SK || t.alg == algECDSASK {
		var app []byte
		var ok bool
		if sshd {
			app, ok = readCString(&s)
		} else {
			ok = readString(&s, &app)
		}
		if !ok {
			return nil, nil, noKeyf("security key is cut short before its application")
		}
		addString(&b, app)
	}
	canon := b.BytesOrPanic()
	spki, err := keys.SSHPublicKeySPKI(canon)
	if err != nil {
		return nil, nil, perr.Kind(ErrNoKey, perr.Errorf("%w", err))
	}
	k := &Key{Type: plain.name, SPKI: spki}
	sum := sha256.Sum256(canon)
	if t.cert {
		ca, principals, err := parseCert(&s)
		if err != nil {
			return nil, nil, err
		}
		k.Type, k.CA, k.Principals = t.canonical(true).name, ca, principals
	}
	if !s.Empty() {
		return nil, nil, noKeyf("%s key blob has %d bytes after its fields", t.name, len(s))
	}
	k.Fingerprint = "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
	return k, t, nil
}

// maxPrincipals is the most principals sshd reads from a certificate
// (SSHKEY_CERT_MAX_PRINCIPALS): one more makes it refuse the certificate.
const maxPrincipals = 256

// parseCert reads the fields of a certificate after its key
// (PROTOCOL.certkeys) and returns its CA key and its principals, read as
// sshd's cert_parse reads them; the signature is left unchecked.
func parseCert(s *cryptobyte.String) (*Key, []string, error) {
	var serial, after, before uint64
	var certType uint32
	var packed, ca, sig []byte
	if !s.ReadUint64(&serial) || !s.ReadUint32(&certType) {
		return nil, nil, noKeyf("certificate is cut short before its key id")
	}
	if _, ok := readCString(s); !ok || !readString(s, &packed) || !s.ReadUint64(&after) || !s.ReadUint64(&before) ||
		!skipString(s) || !skipString(s) || !skipString(s) || !readString(s, &ca) || !readString(s, &sig) {
		return nil, nil, noKeyf("certificate is cut short")
	}
	if certType != 1 && certType != 2 {
		return nil, nil, noKeyf("certificate of type %d, neither user (1) nor host (2)", certType)
	}
	principals := []string{}
	for p := cryptobyte.String(packed); !p.Empty(); {
		name, ok := readCString(&p)
		if !ok {
			return nil, nil, noKeyf("certificate's principals are cut short or hold a NUL byte")
		}
		if len(principals) == maxPrincipals {
			return nil, nil, noKeyf("certificate has over %d principals: sshd refuses it", maxPrincipals)
		}
		principals = append(principals, string(name))
	}
	k, _, err := parseBlob(ca, false, true)
	if err != nil {
		return nil, nil, perr.Kind(ErrNoKey, perr.Errorf("certificate's CA key: %w", err))
	}
	return k, principals, nil
}

// readString reads an SSH string: a 32-bit length and that many bytes.
func readString(s *cryptobyte.String, out *[]byte) bool {
	var n uint32
	if !s.ReadUint32(&n) || uint64(n) > uint64(len(*s)) {
		return false
	}
	return s.ReadBytes(out, int(n))
}

func skipString(s *cryptobyte.String) bool {
	var b []byte
	return readString(s, &b)
}

// readCString reads an SSH string that must hold no NUL byte but,
// perhaps, a last one, which is dropped (sshbuf_get_cstring).
func readCString(s *cryptobyte.String) ([]byte, bool) {
	var b []byte
	if !readString(s, &b) {
		return nil, false
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		if i != len(b)-1 {
			return nil, false
		}
		b = b[:i]
	}
	return b, true
}

// readBignum reads an SSH mpint as sshbuf_get_bignum2 does: not negative,
// at most maxBignum bytes (and one leading zero), leading zeros dropped.
func readBignum(s *cryptobyte.String) ([]byte, bool) {
	var v []byte
	if !readString(s, &v) {
		return nil, false
	}
	if len(v) > 0 && v[0]&0x80 != 0 || len(v) > maxBignum+1 || len(v) == maxBignum+1 && v[0] != 0 {
		return nil, false
	}
	return bytes.TrimLeft(v, "\x00"), true
}

func bitLen(mag []byte) int {
	if len(mag) == 0 {
		return 0
	}
	n := 8 * (len(mag) - 1)
	for c := mag[0]; c != 0; c >>= 1 {
		n++
	}
	return n
}

func addString(b *cryptobyte.Builder, v []byte) {
	b.AddUint32LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(v) })
}

// addBignum writes a magnitude as an SSH mpint: a zero byte before a
// high bit, nothing for zero.
func addBignum(b *cryptobyte.Builder, mag []byte) {
	b.AddUint32LengthPrefixed(func(b *cryptobyte.Builder) {
		if len(mag) > 0 && mag[0]&0x80 != 0 {
			b.AddUint8(0)
		}
		b.AddBytes(mag)
	})
}

// isSpace is C's isspace in the C locale, which OpenSSH's base64 decoder
// skips anywhere.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// decodeBase64 decodes as OpenSSH's b64_pton: white space (isSpace) is
// skipped anywhere, padding is optional only where the input ends on a
// four-character boundary, after padding only white space may follow, and
// the bits that pad the last byte must be zero.
func decodeBase64(src []byte) ([]byte, error) {
	out := make([]byte, 0, len(src)*3/4+3)
	var acc uint32
	state := 0
	i := 0
	for ; i < len(src); i++ {
		c := src[i]
		if isSpace(c) {
			continue
		}
		if c == '=' {
			break
		}
		v := base64Value(c)
		if v < 0 {
			return nil, noKeyf("key is not base64: byte %#02x at %d", c, i)
		}
		acc = acc<<6 | uint32(v)
		state++
		switch state {
		case 2:
			out = append(out, byte(acc>>4))
		case 3:
			out = append(out, byte(acc>>2))
		case 4:
			out = append(out, byte(acc))
			state, acc = 0, 0
		}
	}
	if i == len(src) {
		if state != 0 {
			return nil, noKeyf("key's base64 ends in the middle of a group of four")
		}
		return out, nil
	}
	i++ // the first '='
	switch state {
	case 0, 1:
		return nil, noKeyf("key's base64 has padding in the wrong place")
	case 2:
		for i < len(src) && isSpace(src[i]) {
			i++
		}
		if i == len(src) || src[i] != '=' {
			return nil, noKeyf("key's base64 lacks its second '='")
		}
		i++
	}
	for ; i < len(src); i++ {
		if !isSpace(src[i]) {
			return nil, noKeyf("key's base64 goes on after its padding")
		}
	}
	if state == 2 && acc&0xf != 0 || state == 3 && acc&0x3 != 0 {
		return nil, noKeyf("key's base64 has bits set after its last byte")
	}
	return out, nil
}

func base64Value(c byte) int {
	switch {
	case 'A' <= c && c <= 'Z':
		return int(c - 'A')
	case 'a' <= c && c <= 'z':
		return int(c-'a') + 26
	case '0' <= c && c <= '9':
		return int(c-'0') + 52
	case c == '+':
		return 62
	case c == '/':
		return 63
	}
	return -1
}

// shorten keeps untrusted text in messages short.
func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
