package keys

import (
	"bytes"

	"github.com/pkbf/pkbf/internal/der"
)

// Containers hold several keys and certificates: PKCS#7/CMS certificate
// bundles (.p7b, .p7c, .p7s; DER or BER), PKCS#12 files (.p12, .pfx) and
// armored OpenPGP public keys (a primary key and its subkeys). Scanner
// reports each object in them as a Key of its own.

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

// nested SafeContents

// maxContainerParts bounds the certificates and keys read from one
// container, and so the memory a small hostile file can ask for (a
// megabyte holds half a million empty certificates).
const maxContainerParts = 10000

// containerParts expands a PEM block or DER object that is a container.
// An error reading the container is one part with that error.
func containerParts(kind keyKind, raw []byte, passphrases []string, kdfWork func(int) error) ([]part, bool) {
	switch {
	case kind == kindPEM:
		typ := pemType(raw)
		switch {
		case typ == pgpArmorType:
			return partsOrError(openpgpParts(raw))
		case !isPKCS7PEMType(typ):
			return nil, false
		}
		block, ok := decodePEMBlock(raw)
		if !ok {
			return []part{{err: keyErrorf("PEM block %q is malformed", typ)}}, true
		}
		return partsOrError(pkcs7Parts(block.der))
	case kind != kindDER:
		return nil, false
	case isBERContentInfo(raw):
		return partsOrError(pkcs7Parts(raw))
	}
	d := der.Reader(raw)
	body, ok := d.Read(der.TagSequence)
	fields := der.Reader(body)
	firstTag, _, _, ok2 := fields.Next()
	switch {
	case !ok || !ok2:
		return nil, false
	case firstTag == der.TagOID:
		return partsOrError(pkcs7Parts(raw))
	case firstTag == der.TagInteger && isPKCS12(body):
		return partsOrError(pkcs12Parts(raw, passphrases, kdfWork))
	}
	return nil, false
}

// partsOrError is a container's parts, or one part with its error.
func partsOrError(parts []part, err error) ([]part, bool) {
	if err != nil {
		return []part{{err: err}}, true
	}
	return parts, true
}

// isBERContentInfo reports whether b starts as a PKCS#7 ContentInfo does,
// read as BER: a SEQUENCE whose first field is an OID.
func isBERContentInfo(b []byte) bool {
	h, err := readBERHeader(b)
	return err == nil && b[0] == der.TagSequence && len(b) > h.headerLen && b[h.headerLen] == der.TagOID
}
