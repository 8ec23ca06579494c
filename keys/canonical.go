package keys

import (
	"bytes"

	"github.com/pkbf/pkbf/internal/der"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// One key has many DER encodings, and a filter holds whichever one was
// added: the reference implementation re-encodes every key through
// OpenSSL before hashing (minimal integers, RSA with NULL parameters, EC on
// a named curve with an uncompressed point) but hashes a certificate's or
// request's SPKI as it stands, and the publisher adds EC keys under both
// point forms. A definite "no" must hold for every one of them.

// ExplicitCurve reports whether spki is an EC key whose curve is given by
// explicit parameters rather than named. openssl keeps such parameters when
// it writes the key (x509 -pubkey, pkey -pubin), so the fingerprint it and
// pwnedkeys compute is that of these bytes, not of [Canonical]'s named
// curve; pkbf check reports it.
func ExplicitCurve(spki []byte) bool {
	s := cryptobyte.String(spki)
	var body, alg, oid cryptobyte.String
	return s.ReadASN1(&body, cbasn1.SEQUENCE) && body.ReadASN1(&alg, cbasn1.SEQUENCE) &&
		alg.ReadASN1(&oid, cbasn1.OBJECT_IDENTIFIER) && bytes.Equal(oid, oidECPublicKey) && alg.PeekASN1Tag(cbasn1.SEQUENCE)
}

// Canonical returns the OpenSSL-canonical DER encoding of the key in spki,
// the one OpenSSL writes and pwnedkeys fingerprints (its [Fingerprint] is
// the key's pwnedkeys fingerprint): integers in minimal form (an RSA
// modulus or exponent read, as OpenSSL reads them, as an unsigned
// magnitude: one written as a negative INTEGER, without the leading zero
// its high bit needs, is the same key, written with the zero), an RSA
// AlgorithmIdentifier with NULL parameters, an EC key on its named curve
// (explicit parameters mapped to the curve OpenSSL maps them to) with an
// uncompressed point. It returns spki itself, not a copy, when spki is
// already canonical. EC keys on curves it cannot compute on are returned
// as they are; keys of algorithms it does not know are an error wrapping
// [ErrUnsupportedKey] (it knows no canonical form of them).
//
// Like [SPKI], Canonical checks structure, not mathematics: an uncompressed
// EC point is not checked to lie on its curve (a compressed one is, as
// decompressing it needs that); [Encodings] checks. Errors wrap
// [ErrInvalidKey]: spki is not a SubjectPublicKeyInfo, or the key in it is
// malformed.
func Canonical(spki []byte) ([]byte, error) {
	canonical, _, err := formsOf(spki, false, false, nil)
	return canonical, err
}

// Encodings returns every DER SubjectPublicKeyInfo under which the key of
// spki may be stored in a filter, canonical first (see [Canonical]): for
// an EC key on a curve pkbf can compute on, the uncompressed and then the
// compressed point form on the named curve, as the publisher stores them;
// then spki as given, if it is neither. A filter's AddKey adds all of them;
// its Contains looks for any. An EC point must be on its curve.
// Errors wrap [ErrInvalidKey].
func Encodings(spki []byte) ([][]byte, error) {
	canonical, other, err := forms(spki, true, nil)
	if err != nil {
		return nil, err
	}
	out := [][]byte{canonical}
	if other != nil {
		out = append(out, other)
	}
	if !bytes.Equal(spki, canonical) && !bytes.Equal(spki, other) {
		out = append(out, spki)
	}
	return out, nil
}

// sameSlice reports whether a and b are the same bytes in memory.
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Forms returns the canonical encoding of the key in spki (spki itself
// when it is canonical) and, for an EC key on a curve pkbf can compute on,
// the other point form on the same named curve (or nil), as a lookup needs
// them: an uncompressed point is not checked to lie on its curve, a
// compressed one is (it is decompressed). New encodings are appended to
// dst, which may be a caller's buffer, so that a lookup of a key in a
// common form allocates nothing. Errors wrap [ErrInvalidKey].
//
// A DSA key without domain parameters (its issuer's, RFC 3279 section
// 2.3.2) is an error wrapping [ErrUnsupportedKey] here, not in [Encodings]:
// a filter may hold it with parameters pkbf cannot know, so it can be
// looked up only as given, and not finding it is no answer.
func Forms(dst, spki []byte) (canonical, other []byte, err error) {
	var info spkiInfo
	if err := parseSPKIInto(&info, spki); err != nil {
		return nil, nil, err
	}
	return lookupForms(spki, &info, dst)
}

// lookupForms is formsFrom as a lookup needs it (see [Forms]).
func lookupForms(spki []byte, info *spkiInfo, dst []byte) (canonical, other []byte, err error) {
	if bytes.Equal(info.algorithm, oidDSA) && len(info.params) == 0 {
		return nil, nil, errInheritedDSAParams
	}
	return formsFrom(spki, info, false, true, dst)
}

var errInheritedDSAParams = unsupportedErrorf("DSA key without domain parameters (its issuer's): a filter may hold it with them, which pkbf cannot know")

// forms returns the canonical encoding of the key in spki (spki itself when
// it is canonical) and, for EC keys, the compressed point form on the same
// named curve, or nil. With check, an EC point must lie on its curve; a
// lookup skips that cost for uncompressed points. New encodings are
// appended to dst, which may be a caller's buffer (or nil).
func forms(spki []byte, check bool, dst []byte) (canonical, other []byte, err error) {
	return formsOf(spki, check, true, dst)
}

// formsOf is forms; without wantOther it does not build the other point
// form, and returns nil for it.
func formsOf(spki []byte, check, wantOther bool, dst []byte) (canonical, other []byte, err error) {
	var info spkiInfo
	if err := parseSPKIInto(&info, spki); err != nil {
		return nil, nil, err
	}
	return formsFrom(spki, &info, check, wantOther, dst)
}

// formsFrom is formsOf for an spki that parseSPKI has read into info: the
// parse that [Key.Forms] shares with [Key.SPKI].
func formsFrom(spki []byte, info *spkiInfo, check, wantOther bool, dst []byte) (canonical, other []byte, err error) {
	oid, params, key := info.algorithm, info.params, info.key
	if info.keyBits%8 != 0 {
		return nil, nil, keyErrorf("%s public key BIT STRING has unused bits", algorithmName(oid))
	}
	switch {
	case info.kind == algRSA: // parameters absent or NULL (parseSPKI)
		n, e := info.n, info.e
		if len(n) == 0 || len(e) == 0 {
			return nil, nil, errRSAStructure
		}
		if len(params) != 0 && isMinimalUnsigned(n) && isMinimalUnsigned(e) {
			return spki, nil, nil
		}
		return buildSPKIRaw(oid, derNull, rsaKeyDER(n, e)), nil, nil
	case bytes.Equal(oid, oidRSAPSS), bytes.Equal(oid, oidRSAOAEP):
		// The same RSA key as under rsaEncryption, restricted to one use:
		// a filter may hold it in that form (the reference stores
		// rsaEncryption SPKIs), so that form is the other one looked up.
		n, e, err := rsaPublicInts(key)
		if err != nil {
			return nil, nil, err
		}
		key := rsaKeyDER(n, e)
		if wantOther {
			other = buildSPKIRaw(oidRSA, derNull, key)
		}
		return sameOr(spki, buildSPKIRaw(oid, params, key)), other, nil
	case info.kind == algEC:
		return ecForms(spki, info, check, wantOther, dst)
	case isRawKey(oid):
		// One encoding (see rawKeyAlgorithms): the bytes as given must be
		// it, DER (the reader takes minimal lengths only, and whole
		// bytes, checked above) with no parameters and the key's length.
		if len(params) != 0 {
			return nil, nil, keyErrorf("%s algorithm identifier has parameters", algorithmName(oid))
		}
		if want, _ := rawKeySize(oid); len(key) != want {
			return nil, nil, keyErrorf("%s public key is %d bytes, want %d", algorithmName(oid), len(key), want)
		}
		return spki, nil, nil
	case bytes.Equal(oid, oidDSA), bytes.Equal(oid, oidDHPKCS3), bytes.Equal(oid, oidDHX942):
		// Domain parameters (a SEQUENCE of INTEGERs, for X9.42 with a
		// nested SEQUENCE kept as it is) and the key, an INTEGER.
		name := algorithmName(oid)
		if bytes.Equal(oid, oidDSA) && !dsaParamsShape(params) {
			return nil, nil, keyErrorf("DSA domain parameters are not a SEQUENCE of p, q and g")
		}
		canonParams, err := minimalParams(params, name)
		if err != nil {
			return nil, nil, err
		}
		k := cryptobyte.String(key)
		var y cryptobyte.String
		if !k.ReadASN1(&y, cbasn1.INTEGER) || !k.Empty() || len(y) == 0 {
			return nil, nil, keyErrorf("%s public key is not an INTEGER", name)
		}
		return sameOr(spki, buildSPKIRaw(oid, canonParams, intDER(y))), nil, nil
	}
	// An algorithm whose encodings pkbf does not know: it can be looked up
	// only as given, and a filter lacking that form says nothing of the
	// key's others.
	return nil, nil, unsupportedErrorf("%s keys: pkbf knows no canonical encoding of them", algorithmName(oid))
}

// isRawKey reports whether oid is an algorithm of rawKeyAlgorithms.
func isRawKey(oid []byte) bool {
	_, ok := rawKeySize(oid)
	return ok
}

// sameOr returns spki if built has the same bytes, else built.
func sameOr(spki, built []byte) []byte {
	if bytes.Equal(spki, built) {
		return spki
	}
	return built
}

var derNull = []byte{0x05, 0x00}

// errRSAStructure is the error of an RSA key that is not two INTEGERs.
var errRSAStructure = keyErrorf("RSA public key is not a SEQUENCE of modulus and exponent")

// rsaPublicInts reads RSAPublicKey ::= SEQUENCE { n, e } leniently: the
// INTEGERs' contents as they are, minimal or not.
func rsaPublicInts(key []byte) (n, e []byte, err error) {
	d := der.Reader(key)
	seq, ok := d.Read(der.TagSequence)
	fields := der.Reader(seq)
	n, ok1 := fields.Read(der.TagInteger)
	e, ok2 := fields.Read(der.TagInteger)
	if !ok || !d.Empty() || !ok1 || !ok2 || !fields.Empty() || len(n) == 0 || len(e) == 0 {
		return nil, nil, errRSAStructure
	}
	return n, e, nil
}

// minimalInt returns INTEGER content bytes in minimal two's-complement
// form, the same value: what OpenSSL writes after reading any form.
func minimalInt(v []byte) []byte {
	for len(v) > 1 && (v[0] == 0 && v[1] < 0x80 || v[0] == 0xff && v[1] >= 0x80) {
		v = v[1:]
	}
	return v
}

// intDER encodes INTEGER content bytes, made minimal, as a DER INTEGER.
func intDER(v []byte) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.INTEGER, func(b *cryptobyte.Builder) { b.AddBytes(minimalInt(v)) })
	return b.BytesOrPanic()
}

// rsaKeyDER encodes RSAPublicKey from the contents of its INTEGERs, read
// as OpenSSL reads an RSA key's: as unsigned magnitudes (a modulus written
// as a negative INTEGER, its leading zero dropped, is the same modulus),
// written in minimal form with the zero back.
func rsaKeyDER(n, e []byte) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.INTEGER, func(b *cryptobyte.Builder) { b.AddBytes(unsignedInt(n)) })
		b.AddASN1(cbasn1.INTEGER, func(b *cryptobyte.Builder) { b.AddBytes(unsignedInt(e)) })
	})
	return b.BytesOrPanic()
}

// unsignedInt returns the minimal INTEGER content of the unsigned
// magnitude in v: no leading zeros but the one a high bit needs.
func unsignedInt(v []byte) []byte {
	v = bytes.TrimLeft(v, "\x00")
	if len(v) == 0 || v[0] >= 0x80 {
		return append([]byte{0}, v...)
	}
	return v
}

// isMinimalUnsigned reports whether INTEGER content bytes are already
// what unsignedInt makes of them.
func isMinimalUnsigned(v []byte) bool {
	return v[0] < 0x80 && (len(v) == 1 || v[0] != 0 || v[1] >= 0x80)
}

// minimalParams re-encodes DSA or DH domain parameters, a SEQUENCE whose
// INTEGERs are made minimal (anything else in it is kept as it is). Absent
// parameters stay absent.
func minimalParams(params []byte, name string) ([]byte, error) {
	if len(params) == 0 {
		return nil, nil
	}
	d := der.Reader(params)
	content, ok := d.Read(der.TagSequence)
	if !ok || !d.Empty() {
		return nil, keyErrorf("%s domain parameters are not a SEQUENCE", name)
	}
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		fields := der.Reader(content)
		for !fields.Empty() {
			tag, element, value, ok := fields.Next()
			if !ok {
				b.SetError(errMalformed)
				return
			}
			if tag == der.TagInteger {
				b.AddBytes(intDER(value))
			} else {
				b.AddBytes(element)
			}
		}
	})
	out, err := b.Bytes()
	if err != nil {
		return nil, keyErrorf("%s domain parameters are malformed", name)
	}
	return out, nil
}

var errMalformed = keyErrorf("malformed")

// ecForms is formsFrom for an EC key, whose parameters (a named curve's
// OID, explicit parameters or NULL) parseSPKI has read, and its curve if
// it is a NIST one.
func ecForms(spki []byte, info *spkiInfo, check, wantOther bool, dst []byte) (canonical, other []byte, err error) {
	params, point, tag, content := info.params, info.key, info.ecTag, info.ecParams
	var c *ecCurve
	var curveParams, otherParams []byte // the parameters' encodings in the canonical and other forms
	switch tag {
	case der.TagOID:
		if c = info.curve; c == nil {
			c = curveByNamedOID(content)
		}
		curveParams = params
	case der.TagSequence:
		explicit, err := parseExplicitCurve(params)
		if err != nil {
			return nil, nil, err
		}
		if named := curveByParams(explicit); named != nil {
			c = named
			curveParams = oidDER(named.oid)
			break
		}
		// A curve with no name keeps its parameters, with the base point
		// in the form of the key's, as OpenSSL writes them.
		c = explicit
		curveParams = withBasePoint(params, c.uncompressed(c.gx, c.gy))
		otherParams = withBasePoint(params, c.compressed(c.gx, c.gy))
	case der.TagNull: // implicitlyCA: the curve is known only to the parties
		return spki, nil, nil
	default:
		return nil, nil, keyErrorf("EC algorithm parameters are neither a named curve nor explicit parameters")
	}
	if c == nil { // a named curve pkbf cannot compute on
		return spki, nil, nil
	}
	if !check && tag == der.TagOID && len(point) == 1+2*c.size && point[0] == 4 && c.binary == nil {
		// A lookup of the canonical form: the other form needs no
		// arithmetic, and nothing is allocated if dst has room.
		if !wantOther {
			return spki, nil, nil
		}
		var compressed [1 + 66]byte
		compressed[0] = 2 | point[len(point)-1]&1
		n := 1 + copy(compressed[1:], point[1:1+c.size])
		return spki, appendSPKIRaw(dst, oidECPublicKey, curveParams, compressed[:n]), nil
	}
	x, y, ok := c.decodePoint(point)
	if !ok {
		return nil, nil, keyErrorf("%s point (%d bytes, prefix %#02x) is malformed or not on the curve", c.name, len(point), first(point))
	}
	canonical = sameOr(spki, appendSPKIRaw(dst, oidECPublicKey, curveParams, c.uncompressed(x, y)))
	if !wantOther {
		return canonical, nil, nil
	}
	if otherParams == nil {
		otherParams = curveParams
	}
	return canonical, appendSPKIRaw(canonical[len(canonical):len(canonical):len(canonical)], oidECPublicKey, otherParams, c.compressed(x, y)), nil
}

// withBasePoint re-encodes explicit EC parameters, already parsed, with
// the base point given: SEQUENCE { version, fieldID, curve, base, order,
// cofactor OPTIONAL }.
func withBasePoint(params, base []byte) []byte {
	s := cryptobyte.String(params)
	var seq, version, field, curve, order cryptobyte.String
	if !s.ReadASN1(&seq, cbasn1.SEQUENCE) || !seq.ReadASN1Element(&version, cbasn1.INTEGER) ||
		!seq.ReadASN1Element(&field, cbasn1.SEQUENCE) || !seq.ReadASN1Element(&curve, cbasn1.SEQUENCE) ||
		!seq.SkipASN1(cbasn1.OCTET_STRING) || !seq.ReadASN1Element(&order, cbasn1.INTEGER) {
		return params // parseExplicitCurve read it: cannot happen
	}
	cofactor := seq // the optional cofactor, whole, or nothing
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddBytes(version)
		b.AddBytes(field)
		b.AddBytes(curve)
		b.AddASN1OctetString(base)
		b.AddBytes(order)
		b.AddBytes(cofactor)
	})
	return b.BytesOrPanic()
}
