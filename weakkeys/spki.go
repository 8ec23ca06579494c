package weakkeys

import (
	"bytes"
	"encoding/asn1"

	"github.com/pkbf/pkbf/internal/der"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keys"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

var (
	oidRSA         = der.OID(1, 2, 840, 113549, 1, 1, 1)
	oidRSAPSS      = der.OID(1, 2, 840, 113549, 1, 1, 10)
	oidRSAOAEP     = der.OID(1, 2, 840, 113549, 1, 1, 7)
	oidECPublicKey = der.OID(1, 2, 840, 10045, 2, 1)
	derNull        = []byte{der.TagNull, 0}

	// algorithmNames names the algorithms of keys BR 6.1.5 does not allow
	// that a certificate request is likely to hold.
	algorithmNames = map[string]string{
		string(der.OID(1, 3, 101, 112)):             "Ed25519",
		string(der.OID(1, 3, 101, 113)):             "Ed448",
		string(der.OID(1, 3, 101, 110)):             "X25519",
		string(der.OID(1, 3, 101, 111)):             "X448",
		string(der.OID(1, 2, 840, 10040, 4, 1)):     "DSA",
		string(der.OID(1, 2, 840, 113549, 1, 3, 1)): "DH",
		string(der.OID(1, 2, 840, 10046, 2, 1)):     "DH",
	}
)

func keyErrorf(format string, args ...any) error {
	return perr.Errorf("%w: "+format, append([]any{keys.ErrInvalidKey}, args...)...)
}

// publicKey is what Check reads of an SPKI.
type publicKey struct {
	alg   []byte // the algorithm's OID, content bytes
	n, e  []byte // RSA: magnitudes without leading zeros
	rsa   bool
	ec    bool
	curve []byte // EC: the named curve's OID, or nil
	point []byte // EC: the encoded point
	// ecParams is the EC parameters' tag: OID, SEQUENCE (explicit) or NULL.
	ecParams byte
}

// parseSPKI reads a DER SubjectPublicKeyInfo. It checks the structure of
// RSA and EC keys; other algorithms are returned with their OID alone.
func parseSPKI(spki []byte) (publicKey, error) {
	var k publicKey
	d := der.Reader(spki)
	body, ok := d.Read(der.TagSequence)
	if !ok || !d.Empty() {
		return k, keyErrorf("not a DER SubjectPublicKeyInfo: not one complete ASN.1 SEQUENCE (keys.SPKI reads other forms)")
	}
	fields := der.Reader(body)
	algContent, ok1 := fields.Read(der.TagSequence)
	alg := der.Reader(algContent)
	oid, ok2 := alg.Read(der.TagOID)
	key, keyBits, ok3 := fields.ReadBitString()
	if !ok1 || !ok2 || len(oid) == 0 || !ok3 || !fields.Empty() {
		return k, keyErrorf("SubjectPublicKeyInfo is not an algorithm identifier and a BIT STRING")
	}
	k.alg = oid
	switch {
	case bytes.Equal(oid, oidRSA) || bytes.Equal(oid, oidRSAPSS) || bytes.Equal(oid, oidRSAOAEP):
		if bytes.Equal(oid, oidRSA) && !alg.Empty() && !bytes.Equal(alg, derNull) {
			return k, keyErrorf("RSA algorithm parameters are not NULL")
		}
		k.rsa = true
		r := der.Reader(key)
		seq, ok := r.Read(der.TagSequence)
		ints := der.Reader(seq)
		n, ok1 := ints.Read(der.TagInteger)
		e, ok2 := ints.Read(der.TagInteger)
		if keyBits%8 != 0 || !ok || !r.Empty() || !ok1 || !ok2 || !ints.Empty() {
			return k, keyErrorf("RSA public key is not a SEQUENCE of modulus and exponent")
		}
		var err error
		if k.n, err = positive(n, "modulus"); err != nil {
			return k, err
		}
		if len(k.n) == 0 {
			return k, keyErrorf("RSA modulus is zero")
		}
		if k.e, err = positive(e, "public exponent"); err != nil {
			return k, err
		}
	case bytes.Equal(oid, oidECPublicKey):
		k.ec = true
		tag, _, params, ok := alg.Next()
		if !ok || !alg.Empty() || (tag != der.TagOID && tag != der.TagSequence && tag != der.TagNull) {
			return k, keyErrorf("EC algorithm parameters are neither a named curve nor explicit parameters")
		}
		if keyBits%8 != 0 || len(key) == 0 {
			return k, keyErrorf("EC public key BIT STRING is empty or has unused bits")
		}
		k.ecParams, k.point = tag, key
		if tag == der.TagOID {
			k.curve = params
		}
	}
	return k, nil
}

// positive returns the magnitude of a DER INTEGER that must be minimal and
// not negative, without leading zeros (empty for zero).
func positive(v []byte, what string) ([]byte, error) {
	switch {
	case len(v) == 0:
		return nil, keyErrorf("RSA %s is an empty INTEGER", what)
	case v[0]&0x80 != 0:
		return nil, keyErrorf("RSA %s is negative", what)
	case len(v) > 1 && v[0] == 0 && v[1]&0x80 == 0:
		return nil, keyErrorf("RSA %s is not in DER's minimal form (a leading zero byte too many)", what)
	}
	return trimZeros(v), nil
}

// algorithmName names an algorithm by its OID's content bytes.
func algorithmName(oid []byte) string {
	if name, ok := algorithmNames[string(oid)]; ok {
		return name
	}
	return "algorithm " + oidString(oid)
}

// oidString is an OID's dotted form, from its content bytes.
func oidString(content []byte) string {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.OBJECT_IDENTIFIER, func(b *cryptobyte.Builder) { b.AddBytes(content) })
	encoded, err := b.Bytes()
	s := cryptobyte.String(encoded)
	var oid asn1.ObjectIdentifier
	if err != nil || !s.ReadASN1ObjectIdentifier(&oid) {
		return "(an invalid OID)"
	}
	return oid.String()
}
