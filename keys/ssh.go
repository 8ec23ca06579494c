package keys

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"

	"golang.org/x/crypto/cryptobyte"
)

// opensshMagic starts the binary form of an OpenSSH private key
// (PROTOCOL.key in the OpenSSH sources).
const opensshMagic = "openssh-key-v1\x00"

// sshKeyTypes maps each key type name that can start an OpenSSH public key
// to whether SPKI supports it. Certificate types carry the key they certify.
var sshKeyTypes = map[string]bool{
	"ssh-rsa":                                     true,
	"ecdsa-sha2-nistp256":                         true,
	"ecdsa-sha2-nistp384":                         true,
	"ecdsa-sha2-nistp521":                         true,
	"ssh-ed25519":                                 true,
	"sk-ecdsa-sha2-nistp256@openssh.com":          true,
	"sk-ssh-ed25519@openssh.com":                  true,
	"ssh-rsa-cert-v01@openssh.com":                true,
	"ecdsa-sha2-nistp256-cert-v01@openssh.com":    true,
	"ecdsa-sha2-nistp384-cert-v01@openssh.com":    true,
	"ecdsa-sha2-nistp521-cert-v01@openssh.com":    true,
	"ssh-ed25519-cert-v01@openssh.com":            true,
	"sk-ecdsa-sha2-nistp256-cert-v01@openssh.com": true,
	"sk-ssh-ed25519-cert-v01@openssh.com":         true,
	"ssh-dss":                                     true,
	"ssh-dss-cert-v01@openssh.com":                true,
	"ssh-mldsa-44":                                true,
	"ssh-mldsa-65":                                true,
	"ssh-mldsa-87":                                true,
	"ssh-mldsa-44-cert-v01@golang.org":            true,
	"ssh-mldsa-65-cert-v01@golang.org":            true,
	"ssh-mldsa-87-cert-v01@golang.org":            true,
}

// certSuffix ends OpenSSH's certificate types, goCertSuffix those
// x/crypto/ssh (v0.58, built with Go 1.27) names for ML-DSA certificates,
// which no specification defines: the format of PROTOCOL.certkeys, the
// key's fields as for the plain key.
const (
	certSuffix   = "-cert-v01@openssh.com"
	goCertSuffix = "-cert-v01@golang.org"
)

// sshMLDSA are the ML-DSA parameter sets by SSH key type: the keys of
// draft-sfluhrer-ssh-mldsa (section 4: the type, then the FIPS 204 public
// key's bytes as one string), whose SPKI (RFC 9881) holds the same bytes.
var sshMLDSA = map[string]rawKeyAlgo{
	"ssh-mldsa-44": mlDSA44,
	"ssh-mldsa-65": mlDSA65,
	"ssh-mldsa-87": mlDSA87,
}

// readSSHString reads an SSH wire-format string: a uint32 length and bytes.
func readSSHString(s *cryptobyte.String, out *[]byte) bool {
	var n uint32
	if !s.ReadUint32(&n) || uint64(n) > uint64(len(*s)) {
		return false
	}
	return s.ReadBytes(out, int(n))
}

// readMPInt reads an SSH mpint of an RSA key: see readMPIntNamed.
func readMPInt(s *cryptobyte.String, name string) ([]byte, error) {
	return readMPIntNamed(s, "RSA "+name)
}

// readMPIntNamed reads an SSH mpint that must be positive and returns its
// magnitude without leading zero bytes.
func readMPIntNamed(s *cryptobyte.String, name string) ([]byte, error) {
	var v []byte
	if !readSSHString(s, &v) {
		return nil, keyErrorf("OpenSSH key is truncated before the %s", name)
	}
	if len(v) > 0 && v[0] >= 0x80 {
		return nil, keyErrorf("OpenSSH %s is negative", name)
	}
	v = bytes.TrimLeft(v, "\x00")
	if len(v) == 0 {
		return nil, keyErrorf("OpenSSH %s is zero", name)
	}
	return v, nil
}

// SSHPublicKeySPKI returns the DER SubjectPublicKeyInfo of an SSH public
// key in the SSH wire format (RFC 4253 section 6.6), the blob an OpenSSH
// line carries in base64 and x/crypto/ssh's PublicKey.Marshal returns; a
// certificate's blob gives the key it certifies. The blob names its type
// canonically (ssh-rsa, not rsa-sha2-256). The SPKI is in the
// canonical encoding ([Canonical]). Errors wrap [ErrInvalidKey], and
// [ErrUnsupportedKey] for a key type pkbf does not read.
func SSHPublicKeySPKI(blob []byte) ([]byte, error) { return sshBlobSPKI(blob) }

// sshBlobSPKI converts an OpenSSH public key blob (RFC 4253 section 6.6 and
// PROTOCOL.u2f and PROTOCOL.certkeys) to a DER SubjectPublicKeyInfo.
func sshBlobSPKI(blob []byte) ([]byte, error) {
	s := cryptobyte.String(blob)
	var name []byte
	if !readSSHString(&s, &name) {
		return nil, keyErrorf("OpenSSH public key blob is truncated before its type")
	}
	typ := string(name)
	supported, known := sshKeyTypes[typ]
	switch {
	case !known:
		return nil, unsupportedErrorf("OpenSSH key type %q is not supported", shorten(typ))
	case !supported:
		return nil, unsupportedErrorf("OpenSSH key type %q is not supported", typ)
	}
	base, isCert := strings.CutSuffix(typ, certSuffix)
	if !isCert {
		base, isCert = strings.CutSuffix(typ, goCertSuffix)
	}
	if isCert {
		var nonce []byte
		if !readSSHString(&s, &nonce) {
			return nil, keyErrorf("OpenSSH certificate is truncated before its nonce")
		}
		typ = base
	}
	base, sk := strings.CutPrefix(typ, "sk-")
	if sk {
		base = strings.TrimSuffix(base, "@openssh.com")
	}
	var spki []byte
	switch base {
	case "ssh-rsa":
		e, err := readMPInt(&s, "exponent")
		if err != nil {
			return nil, err
		}
		n, err := readMPInt(&s, "modulus")
		if err != nil {
			return nil, err
		}
		spki = rsaSPKI(n, e)
	case "ssh-dss":
		var ints [4][]byte
		for i, name := range []string{"p", "q", "g", "y"} {
			v, err := readMPIntNamed(&s, "DSA "+name)
			if err != nil {
				return nil, err
			}
			ints[i] = append([]byte{0}, v...) // a positive INTEGER's content
		}
		spki = dsaSPKI(ints[0], ints[1], ints[2], ints[3])
	case "ssh-ed25519":
		var pub []byte
		if !readSSHString(&s, &pub) || len(pub) != ed25519KeyBytes {
			return nil, keyErrorf("OpenSSH Ed25519 key is not %d bytes", ed25519KeyBytes)
		}
		spki = ed25519SPKI(pub)
	case "ssh-mldsa-44", "ssh-mldsa-65", "ssh-mldsa-87":
		a := sshMLDSA[base]
		var pub []byte
		if !readSSHString(&s, &pub) || len(pub) != a.size {
			return nil, keyErrorf("SSH %s key is not %d bytes", a.name, a.size)
		}
		spki = buildSPKIRaw(a.oid, nil, pub)
	default: // ecdsa-sha2-nistpNNN
		var curveName, point []byte
		if !readSSHString(&s, &curveName) || !readSSHString(&s, &point) {
			return nil, keyErrorf("OpenSSH ECDSA key is truncated")
		}
		c := curveBySSHName(strings.TrimPrefix(base, "ecdsa-sha2-"))
		if c == nil || string(curveName) != c.ssh {
			return nil, keyErrorf("OpenSSH key type %q names curve %q", typ, shorten(string(curveName)))
		}
		if len(point) != 1+2*c.size || point[0] != 4 {
			return nil, keyErrorf("OpenSSH %s point is %d bytes, want %d uncompressed", c.name, len(point), 1+2*c.size)
		}
		spki = ecSPKI(c, point)
	}
	if sk {
		var application []byte
		if !readSSHString(&s, &application) {
			return nil, keyErrorf("OpenSSH security key is truncated before its application")
		}
	}
	if !isCert && !s.Empty() {
		return nil, keyErrorf("OpenSSH %s key has %d bytes after its fields", typ, len(s))
	}
	return spki, nil
}

// shorten keeps untrusted text in error messages short.
func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// opensshPrivateSPKI reads the public key of a binary OpenSSH private key:
// magic, string cipher, string kdf, string kdf options, uint32 key count,
// the public key blobs in clear, then the (perhaps encrypted) private part.
func opensshPrivateSPKI(b []byte) ([]byte, error) {
	s, ok := bytes.CutPrefix(b, []byte(opensshMagic))
	if !ok {
		return nil, keyErrorf("OPENSSH PRIVATE KEY does not start with %q", strings.TrimSuffix(opensshMagic, "\x00"))
	}
	in := cryptobyte.String(s)
	var cipher, kdf, kdfOptions, blob []byte
	var count uint32
	if !readSSHString(&in, &cipher) || !readSSHString(&in, &kdf) || !readSSHString(&in, &kdfOptions) || !in.ReadUint32(&count) {
		return nil, keyErrorf("OpenSSH private key header is truncated")
	}
	if count != 1 {
		return nil, keyErrorf("OpenSSH private key holds %d keys, want 1", count)
	}
	if !readSSHString(&in, &blob) {
		return nil, keyErrorf("OpenSSH private key is truncated in its public key")
	}
	return sshBlobSPKI(blob)
}

// sshTextSPKI reads the one OpenSSH public key line of text, and returns
// its SPKI and the line; blank lines and lines starting with # are
// skipped.
func sshTextSPKI(text []byte) (spki, line []byte, err error) {
	for len(text) > 0 {
		var l []byte
		l, text, _ = bytes.Cut(text, []byte("\n"))
		if trimmed := bytes.TrimSpace(l); len(trimmed) > 0 && trimmed[0] != '#' && !looksLikeSSHLine(trimmed) {
			continue // text, not a key line
		}
		s, err := sshLineSPKI(l)
		if err == errNoKeyLine {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if spki != nil {
			return nil, nil, keyErrorf("more than one OpenSSH key line; read many with Scanner")
		}
		spki, line = s, l
	}
	if spki == nil {
		return nil, nil, keyErrorf("input is not a key, certificate or certificate request in PEM, DER or OpenSSH form")
	}
	return spki, line, nil
}

// errNoKeyLine marks a blank or comment line.
var errNoKeyLine = keyErrorf("no key on this line")

// sshLineSPKI reads one OpenSSH public key line: a .pub file's line, an
// authorized_keys line (options, type, base64 blob, comment) or a known_hosts
// line (marker, host patterns, type, blob). The key type is the first field,
// outside quotes, that names one; the blob follows it.
func sshLineSPKI(line []byte) ([]byte, error) {
	blob, _, err := sshLineBlob(nil, line)
	if err != nil {
		return nil, err
	}
	return sshBlobSPKI(blob)
}

// sshLineBlob returns the key blob of an OpenSSH public key line, checked
// to start with the type the line names, and the comment after it. The
// blob is decoded into dst if it has room, else into a new buffer.
func sshLineBlob(dst, line []byte) (blob []byte, comment string, err error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] == '#' {
		return nil, "", errNoKeyLine
	}
	rest := line
	for skipped := 0; ; skipped++ {
		var field []byte
		field, rest = nextField(rest)
		if len(field) == 0 {
			return nil, "", keyErrorf("line has no OpenSSH key type (such as ssh-ed25519): not an OpenSSH public key line")
		}
		if _, known := sshKeyTypes[string(field)]; !known {
			if next, _ := nextField(rest); isBase64Blob(next) && blobType(next) == string(field) {
				return nil, "", unsupportedErrorf("OpenSSH key type %q is not supported", shorten(string(field)))
			}
			if skipped < 2 { // authorized_keys options; known_hosts marker and hosts
				continue
			}
			return nil, "", keyErrorf("line has no OpenSSH key type (such as ssh-ed25519) in its first three fields")
		}
		encoded, after := nextField(rest)
		if len(encoded) == 0 {
			return nil, "", keyErrorf("OpenSSH %s line has no key after its type", field)
		}
		if need := base64.StdEncoding.DecodedLen(len(encoded)); cap(dst) >= need {
			blob = dst[:need]
		} else {
			blob = make([]byte, need)
		}
		n, err := base64.StdEncoding.Decode(blob, encoded)
		if err != nil {
			return nil, "", keyErrorf("OpenSSH %s key is not valid base64: %v", field, err)
		}
		blob = blob[:n]
		if inner := blobName(blob); string(inner) != string(field) {
			return nil, "", keyErrorf("OpenSSH key line says %s but its key is %q", field, shorten(string(inner)))
		}
		return blob, string(bytes.TrimSpace(after)), nil
	}
}

// blobName returns the key type name a key blob starts with (an SSH
// string: a 32-bit length, then the bytes), or nil if it is cut short.
func blobName(blob []byte) []byte {
	if len(blob) < 4 || uint64(binary.BigEndian.Uint32(blob)) > uint64(len(blob)-4) {
		return nil
	}
	return blob[4 : 4+binary.BigEndian.Uint32(blob)]
}

// nextField splits off the first field of s: a run of characters up to
// unquoted white space, where "..." may hold spaces and \" quotes.
func nextField(s []byte) (field, rest []byte) {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	// Most fields have no quote: they end at the first blank, which
	// IndexByte finds many bytes at a time (a key's base64 is hundreds).
	end := len(s)
	if i := bytes.IndexByte(s, ' '); i >= 0 {
		end = i
	}
	if i := bytes.IndexByte(s[:end], '\t'); i >= 0 {
		end = i
	}
	if bytes.IndexByte(s[:end], '"') < 0 {
		if end == len(s) {
			return s, nil
		}
		return s[:end], s[end:]
	}
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted && i+1 < len(s):
			i++
		case c == '"':
			quoted = !quoted
		case (c == ' ' || c == '\t') && !quoted:
			return s[:i], s[i:]
		}
	}
	return s, nil
}

// The two other text forms of SSH public keys.
const (
	rfc4716Begin = "---- BEGIN SSH2 PUBLIC KEY ----"
	rfc4716End   = "---- END SSH2 PUBLIC KEY ----"
	puttyMagic   = "PuTTY-User-Key-File-"
)

// SSHFingerprint returns, for an SSH public key (an OpenSSH line, an RFC
// 4716 block or a PuTTY file), the fingerprint ssh-keygen -l shows
// ("SHA256:" and the unpadded base64 of the SHA-256 of the key blob) and
// the key's comment; for other keys, or a key that cannot be decoded, it
// returns "" and "".
func (k *Key) SSHFingerprint() (fingerprint, comment string) {
	var blob []byte
	var err error
	switch k.kind {
	case kindLine:
		var room [1024]byte // an RSA-4096 key's blob is 535 bytes
		blob, comment, err = sshLineBlob(room[:0], k.Raw)
	case kindRFC4716:
		blob, comment, err = rfc4716Blob(k.Raw)
	case kindPuTTY:
		blob, comment, err = puttyBlob(k.Raw)
	default:
		return "", ""
	}
	if err != nil {
		return "", ""
	}
	sum := sha256.Sum256(blob)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:]), comment
}

// looksLikeSSHLine reports whether a text line outside PEM blocks is an
// OpenSSH public key line, to be decoded and its errors reported, rather
// than text, which is ignored as PEM readers ignore it. The rule: among its
// first four fields, a key type name (ssh-rsa, ecdsa-sha2-nistp256, ...)
// followed by a field that starts with "AAAA" as every key blob's base64
// does; or any field followed by base64 whose blob starts with a key type
// name, known to pkbf or equal to that field (a mistyped or unsupported
// type). So "ssh-rsa keys are old" is text, while a cut or damaged
// "ssh-rsa AAAAB3Nza..." is a key line in error.
func looksLikeSSHLine(line []byte) bool {
	rest := line
	for range 4 {
		var field, next []byte
		field, rest = nextField(rest)
		if len(field) == 0 {
			return false
		}
		next, _ = nextField(rest)
		if len(next) < 8 || !bytes.HasPrefix(next, []byte("AAAA")) {
			continue
		}
		if _, known := sshKeyTypes[string(field)]; known {
			return true
		}
		if isBase64Blob(next) {
			typ := blobType(next)
			if _, known := sshKeyTypes[typ]; known || typ != "" && typ == string(field) {
				return true
			}
		}
	}
	return false
}

// isBase64Blob reports whether b is 16 or more base64 characters.
func isBase64Blob(b []byte) bool {
	if len(b) < 16 {
		return false
	}
	for _, c := range b {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

// blobType returns the type name at the start of a base64 SSH key blob,
// or "".
func blobType(encoded []byte) string {
	head := encoded[:min(len(encoded), 64)&^3]
	var blob [48]byte // what 64 characters of base64 decode to
	n, err := base64.StdEncoding.Decode(blob[:], head)
	if err != nil {
		return ""
	}
	return string(blobName(blob[:n]))
}
