package pwnedkeys

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"math/big"

	"github.com/pkbf/pkbf/keys"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// pwnedPhrase is what an attestation's payload must say.
const pwnedPhrase = "key is pwned"

// publicKey is a key whose attestations can be verified: the JWS alg it
// signs with, and how to check a signature over a message.
type publicKey struct {
	alg    string
	verify func(message, signature []byte) bool
}

func badKey(format string, args ...any) error {
	return fmt.Errorf("pwnedkeys: cannot verify attestations for this key: "+format, args...)
}

// parseKey reads spki into a key that can check its own attestations. RSA
// keys are read here rather than by crypto/x509, which refuses those under
// 1024 bits: exactly the weak keys pwnedkeys lists.
func parseKey(spki []byte) (*publicKey, error) {
	if n, e, ok := parseRSA(spki); ok {
		return &publicKey{alg: "RS256", verify: func(msg, sig []byte) bool { return verifyRS256(n, e, msg, sig) }}, nil
	}
	// EC keys: Encodings gives the uncompressed form first, whichever the
	// SPKI has, and checks that the point is on its curve.
	encodings, err := keys.Encodings(spki)
	if err != nil {
		return nil, badKey("%v", err)
	}
	pub, err := x509.ParsePKIXPublicKey(encodings[0])
	if err != nil {
		return nil, badKey("%v", err)
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return nil, badKey("%T keys sign no attestations pwnedkeys uses (RS256, ES256, ES384, ES512)", pub)
	}
	var alg string
	var newHash func() hash.Hash
	switch ec.Curve {
	case elliptic.P256():
		alg, newHash = "ES256", sha256.New
	case elliptic.P384():
		alg, newHash = "ES384", sha512.New384
	case elliptic.P521():
		alg, newHash = "ES512", sha512.New
	default:
		return nil, badKey("curve %s", ec.Curve.Params().Name)
	}
	size := (ec.Curve.Params().BitSize + 7) / 8
	return &publicKey{alg: alg, verify: func(msg, sig []byte) bool {
		if len(sig) != 2*size { // JWS: r and s, each the curve's size
			return false
		}
		h := newHash()
		h.Write(msg)
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(ec, h.Sum(nil), r, s)
	}}, nil
}

// parseRSA reads the modulus and exponent of an RSA SPKI.
func parseRSA(spki []byte) (n *big.Int, e int, ok bool) {
	s := cryptobyte.String(spki)
	var seq, alg, id, bitString cryptobyte.String
	if !s.ReadASN1(&seq, cbasn1.SEQUENCE) || !s.Empty() ||
		!seq.ReadASN1(&alg, cbasn1.SEQUENCE) || !alg.ReadASN1(&id, cbasn1.OBJECT_IDENTIFIER) || !bytes.Equal(id, rsaOID) ||
		!seq.ReadASN1(&bitString, cbasn1.BIT_STRING) || len(bitString) < 1 || bitString[0] != 0 {
		return nil, 0, false
	}
	key := bitString[1:]
	var inner cryptobyte.String
	var e64 int64
	n = new(big.Int)
	if !key.ReadASN1(&inner, cbasn1.SEQUENCE) || !inner.ReadASN1Integer(n) || !inner.ReadASN1Integer(&e64) ||
		n.Sign() <= 0 || e64 < 3 || e64 > 1<<31-1 {
		return nil, 0, false
	}
	return n, int(e64), true
}

// rsaOID is rsaEncryption, 1.2.840.113549.1.1.1, as DER content bytes.
var rsaOID = []byte{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01}

// sha256DigestInfo is the DER prefix of a DigestInfo holding a SHA-256
// hash (RFC 8017 section 9.2, note 1).
var sha256DigestInfo = []byte{0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20}

// verifyRS256 checks an RSASSA-PKCS1-v1_5 SHA-256 signature. For keys of
// 1024 bits and more it is crypto/rsa's; for smaller ones, which crypto/rsa
// refuses, it computes s^e mod n and compares it with the expected encoding
// (RFC 8017 section 8.2.2), which involves nothing secret.
func verifyRS256(n *big.Int, e int, msg, sig []byte) bool {
	digest := sha256.Sum256(msg)
	if n.BitLen() >= 1024 {
		return rsa.VerifyPKCS1v15(&rsa.PublicKey{N: n, E: e}, crypto.SHA256, digest[:], sig) == nil
	}
	k := (n.BitLen() + 7) / 8
	if len(sig) != k {
		return false
	}
	s := new(big.Int).SetBytes(sig)
	if s.Cmp(n) >= 0 {
		return false
	}
	em := new(big.Int).Exp(s, big.NewInt(int64(e)), n).FillBytes(make([]byte, k))
	// EM = 0x00 || 0x01 || PS (0xff...) || 0x00 || DigestInfo || digest
	t := append(append([]byte(nil), sha256DigestInfo...), digest[:]...)
	if k < len(t)+11 {
		return false
	}
	want := make([]byte, k)
	want[1] = 1
	for i := 2; i < k-len(t)-1; i++ {
		want[i] = 0xff
	}
	copy(want[k-len(t):], t)
	return subtle.ConstantTimeCompare(em, want) == 1
}

// jws is a JSON Web Signature in flattened JSON serialization (RFC 7515
// section 7.2.2).
type jws struct {
	Protected string `json:"protected"`
	Payload   string `json:"payload"`
	Signature string `json:"signature"`
}

// protectedHeader is the part of a JWS protected header pwnedkeys uses.
type protectedHeader struct {
	Alg  string          `json:"alg"`
	Kid  string          `json:"kid"`
	Crit json.RawMessage `json:"crit"`
}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadAttestation}, args...)...)
}

// verify checks an attestation for key and returns its payload.
func verify(body []byte, key *publicKey, fingerprint string) ([]byte, error) {
	var sig jws
	if err := json.Unmarshal(body, &sig); err != nil {
		return nil, bad("answer is not a flattened JWS: %v", err)
	}
	if sig.Protected == "" || sig.Payload == "" {
		return nil, bad("answer lacks protected or payload")
	}
	protected, err1 := base64.RawURLEncoding.Strict().DecodeString(sig.Protected)
	payload, err2 := base64.RawURLEncoding.Strict().DecodeString(sig.Payload)
	signature, err3 := base64.RawURLEncoding.Strict().DecodeString(sig.Signature)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, bad("protected, payload or signature is not unpadded base64url")
	}
	var hdr protectedHeader
	if err := json.Unmarshal(protected, &hdr); err != nil {
		return nil, bad("protected header is not JSON: %v", err)
	}
	switch {
	case hdr.Alg != key.alg:
		return nil, bad("alg is %q, but the key signs with %s", hdr.Alg, key.alg)
	case hdr.Kid != fingerprint:
		return nil, bad("kid is %q, not the key's fingerprint %s", hdr.Kid, fingerprint)
	case len(hdr.Crit) != 0:
		return nil, bad("protected header has critical extensions %s", hdr.Crit)
	case len(signature) == 0:
		return nil, bad("signature is empty")
	}
	// RFC 7515 section 5.2: the signing input is the encoded header, a
	// period and the encoded payload, exactly as received.
	if !key.verify([]byte(sig.Protected+"."+sig.Payload), signature) {
		return nil, bad("signature does not verify against the key %s", fingerprint)
	}
	switch {
	case len(payload) > maxPayload:
		return nil, bad("payload is %d bytes, more than %d", len(payload), maxPayload)
	case !bytes.Contains(payload, []byte(pwnedPhrase)):
		return nil, bad("payload does not say %q", pwnedPhrase)
	}
	return payload, nil
}
