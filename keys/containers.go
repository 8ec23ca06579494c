package keys

import (
	"bytes"

	"github.com/pkbf/pkbf/internal/der"
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

// nested SafeContents

// maxContainerParts bounds the certificates and keys read from one
// container, and so the memory a small hostile file can ask for (a
// megabyte holds half a million empty certificates).
const maxContainerParts = 10000

// containerParts expands a PEM block or DER object that is a container.
// An error reading the container is one part with that error.
func containerParts(kind keyKind, raw []byte, passphrases []string) ([]part, bool) {
	var encoded []byte
	switch kind {
	case kindPEM:
		if !isPKCS7PEMType(pemType(raw)) {
			return nil, false
		}
		block, ok := decodePEMBlock(raw)
		if !ok {
			return []part{{err: keyErrorf("PEM block %q is malformed", pemType(raw))}}, true
		}
		encoded = block.der
	case kindDER:
		encoded = raw
	default:
		return nil, false
	}
	d := der.Reader(encoded)
	body, ok := d.Read(der.TagSequence)
	fields := der.Reader(body)
	firstTag, _, _, ok2 := fields.Next()
	var parts []part
	var err error
	switch {
	case !ok || !ok2:
		return nil, false
	case firstTag == der.TagOID:
		parts, err = pkcs7Parts(encoded)
	case firstTag == der.TagInteger && isPKCS12(body):
		parts, err = pkcs12Parts(encoded, passphrases)
	default:
		return nil, false
	}
	if err != nil {
		return []part{{err: err}}, true
	}
	return parts, true
}
