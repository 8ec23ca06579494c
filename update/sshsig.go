package update

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"hash"
	"strings"

	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf/internal/perr"
)

// SignatureNamespace is the namespace of the SSH signatures Update
// verifies: a publisher signs a filter with
//
//	ssh-keygen -Y sign -f KEY -n pkbf FILTER
//
// and a signature made for another purpose (a git commit, a file signed
// under another namespace) does not verify.
const SignatureNamespace = "pkbf"

// The SSHSIG format, as OpenSSH's PROTOCOL.sshsig describes it and
// sshsig.c reads it. A signature file is the blob below in base64 between
// the armor lines; the key signs H(message) wrapped in the signed data.
//
//	blob:        byte[6] "SSHSIG", uint32 version (1), string publickey,
//	             string namespace, string reserved, string hash_algorithm,
//	             string signature
//	signed data: byte[6] "SSHSIG", string namespace, string reserved (empty),
//	             string hash_algorithm, string H(message)
//
// Where OpenSSH and this reader differ, this one is stricter: OpenSSH
// takes a version of 0 as well as 1, this reader only 1; OpenSSH takes a
// security key's signature made without a touch (user-presence flag
// clear) unless the allowed signer says verify-required, this reader
// never.
const (
	skUserPresent = 0x01 // the flags bit of a security key's signature
	sshsigMagic   = "SSHSIG"
	sshsigVersion = 1
	sshsigBegin   = "-----BEGIN SSH SIGNATURE-----\n"
	sshsigEnd     = "\n-----END SSH SIGNATURE-----"
)

// sshSig is a parsed SSHSIG signature.
type sshSig struct {
	key       ssh.PublicKey
	namespace string
	hashAlg   string // "sha256" or "sha512"
	sig       *ssh.Signature
}

// parseSSHSig reads an armored SSHSIG signature, as ssh-keygen -Y sign
// writes it. It checks the format, not the signature.
func parseSSHSig(armored []byte) (*sshSig, error) {
	s := strings.ReplaceAll(string(armored), "\r\n", "\n")
	rest, ok := strings.CutPrefix(s, sshsigBegin)
	if !ok {
		return nil, perr.New("not an SSH signature: it does not start with the line -----BEGIN SSH SIGNATURE-----")
	}
	b64, _, ok := strings.Cut(rest, sshsigEnd)
	if !ok {
		return nil, perr.New("not an SSH signature: no line -----END SSH SIGNATURE----- (cut short?)")
	}
	blob, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(b64), ""))
	if err != nil {
		return nil, perr.Errorf("the SSH signature's base64 is broken: %v", err)
	}
	in := cryptobyte.String(blob)
	var (
		magic                               []byte
		version                             uint32
		pub, namespace, reserved, alg, sigB cryptobyte.String
	)
	if !in.ReadBytes(&magic, len(sshsigMagic)) || string(magic) != sshsigMagic || !in.ReadUint32(&version) {
		return nil, perr.New("the SSH signature is not an SSHSIG blob (no SSHSIG magic and version)")
	}
	if version != sshsigVersion {
		return nil, perr.Errorf("the SSH signature has version %d; only version %d is read", version, sshsigVersion)
	}
	if !readString(&in, &pub) || !readString(&in, &namespace) || !readString(&in, &reserved) ||
		!readString(&in, &alg) || !readString(&in, &sigB) {
		return nil, perr.New("the SSH signature is cut short")
	}
	if !in.Empty() {
		return nil, perr.Errorf("the SSH signature has %d bytes after its end", len(in))
	}
	key, err := ssh.ParsePublicKey(pub)
	if err != nil {
		return nil, perr.Errorf("the SSH signature's public key: %v", err)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(sigB, &sig); err != nil {
		return nil, perr.Errorf("the SSH signature's signature field: %v", err)
	}
	// A security key's signature carries its flags and counter after the
	// signature proper (PROTOCOL.u2f); any other's carries nothing there.
	switch sk := strings.HasPrefix(key.Type(), "sk-"); {
	case sk && len(sig.Rest) != 5:
		return nil, perr.Errorf("the SSH signature's security-key fields are %d bytes, not 5 (flags, counter)", len(sig.Rest))
	case !sk && len(sig.Rest) > 0:
		return nil, perr.Errorf("the SSH signature has %d bytes after the signature in its signature field", len(sig.Rest))
	}
	switch string(alg) {
	case "sha256", "sha512":
	default:
		return nil, perr.Errorf("the SSH signature's hash algorithm is %q; sha256 or sha512 is read", alg)
	}
	return &sshSig{key: key, namespace: string(namespace), hashAlg: string(alg), sig: &sig}, nil
}

// readString reads an SSH string (a uint32 length, then that many bytes).
func readString(in, out *cryptobyte.String) bool {
	var n uint32
	return in.ReadUint32(&n) && uint64(n) <= uint64(len(*in)) && in.ReadBytes((*[]byte)(out), int(n))
}

// newHash returns the hash the signature was made over.
func (s *sshSig) newHash() hash.Hash {
	if s.hashAlg == "sha256" {
		return sha256.New()
	}
	return sha512.New()
}

// verify checks that s signs the message whose hash (by s.newHash) is
// digest, under SignatureNamespace, by one of signers. It returns the
// signer.
func (s *sshSig) verify(digest []byte, signers []ssh.PublicKey) (ssh.PublicKey, error) {
	if s.namespace != SignatureNamespace {
		return nil, perr.Errorf("the signature is for namespace %q, not %q (sign with ssh-keygen -Y sign -n %s)", s.namespace, SignatureNamespace, SignatureNamespace)
	}
	wire := s.key.Marshal()
	var signer ssh.PublicKey
	for _, k := range signers {
		if bytes.Equal(k.Marshal(), wire) {
			signer = k
			break
		}
	}
	if signer == nil {
		return nil, perr.Errorf("the signature is by %s %s, not by a signer key given", s.key.Type(), ssh.FingerprintSHA256(s.key))
	}
	if s.key.Type() == ssh.KeyAlgoRSA && s.sig.Format != ssh.KeyAlgoRSASHA512 && s.sig.Format != ssh.KeyAlgoRSASHA256 {
		// As OpenSSH: an RSA signature in SSHSIG is rsa-sha2-512 or -256, never SHA-1.
		return nil, perr.Errorf("the signature's RSA algorithm is %q; rsa-sha2-512 or rsa-sha2-256 is accepted", s.sig.Format)
	}
	if strings.HasPrefix(s.key.Type(), "sk-") && s.sig.Rest[0]&skUserPresent == 0 {
		// Stricter than ssh-keygen -Y verify, which takes it.
		return nil, perr.Errorf("the security-key signature by %s was made without a touch (its user-presence flag is clear): refused", ssh.FingerprintSHA256(signer))
	}
	signed := cryptobyte.NewBuilder(nil)
	signed.AddBytes([]byte(sshsigMagic))
	for _, field := range [][]byte{[]byte(s.namespace), nil, []byte(s.hashAlg), digest} {
		signed.AddUint32LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(field) })
	}
	msg, err := signed.Bytes()
	if err != nil {
		return nil, perr.Errorf("the signed data: %v", err)
	}
	if err := signer.Verify(msg, s.sig); err != nil {
		return nil, perr.Errorf("the signature by %s does not verify: the filter is not the one signed (%v)", ssh.FingerprintSHA256(signer), err)
	}
	return signer, nil
}

// ParseSignerKeys reads the public keys a signature may be made with:
// one or more lines in authorized_keys form ("ssh-ed25519 AAAA...
// comment", a .pub file), blank lines and # comments skipped. A line that
// is not a key is an error naming it; so is a line marked cert-authority,
// a certificate (certificates are not read), and a file without a key. Other options on
// a line are ignored.
func ParseSignerKeys(b []byte) ([]ssh.PublicKey, error) {
	var keys []ssh.PublicKey
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, _, options, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return nil, perr.Errorf("line %d is not an SSH public key: %v", n+1, err)
		}
		for _, o := range options {
			if strings.EqualFold(o, "cert-authority") {
				// ssh-keygen -Y verify then takes only certificates the key
				// signed, never a plain signature by it: neither does pkbf.
				return nil, perr.Errorf("line %d is a certificate authority (cert-authority): certificates are not read; give the signing key itself", n+1)
			}
		}
		if _, ok := k.(*ssh.Certificate); ok {
			// Trusted as its key, it would be trusted whatever its
			// validity and principals say.
			return nil, perr.Errorf("line %d is a certificate (%s): give the signing key itself", n+1, k.Type())
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, perr.New("no SSH public key in it")
	}
	return keys, nil
}
