package keys

import (
	"sync"

	"github.com/pkbf/pkbf/internal/text"
)

// A Key is one object found by a [Scanner]: a PEM block, a DER object or
// an OpenSSH public key line. Its [Key.SPKI] method decodes it; a Key that
// could not even be framed (an unterminated PEM block, an overlong line)
// carries that error instead.
type Key struct {
	// Index is the object's 1-based position among the objects of the input.
	Index int
	// Line is the 1-based line on which the object starts in text input,
	// and 0 in DER input.
	Line int
	// Block is the 1-based number of the object's PEM block among the PEM
	// blocks of the input (an "EC PARAMETERS" block counts), or 0.
	Block int
	// Offset is the byte offset at which the object starts.
	Offset int64
	// Raw is the object as it appears in the input: the PEM block from its
	// BEGIN line to its END line (after the "EC PARAMETERS" block that
	// preceded it, if any), the DER object, the text line, or the RFC 4716
	// or PuTTY block. The objects of a container (a PKCS#7 bundle, a
	// PKCS#12 file) share the container's Raw. Each Key has its own Raw,
	// with no room past its end; a Scanner cuts small ones from shared
	// allocations of up to 16 KiB, which a Key kept keeps alive.
	Raw []byte
	// Part names the object inside a container ("certificate 2",
	// "private key 1", "OpenPGP key 2"), or is empty.
	Part string

	kind keyKind
	spki []byte // decoded already (the parts of a container)
	err  error
}

type keyKind uint8

const (
	kindPEM keyKind = iota + 1
	kindDER
	kindLine
	kindRFC4716 // ---- BEGIN SSH2 PUBLIC KEY ----
	kindPuTTY   // PuTTY-User-Key-File-N
	kindModulus // a bare RSA modulus in hex: see Key.Modulus
)

// Source says where the key came from: "block 2 (line 31)" for PEM,
// "line 7" for OpenSSH lines, "object 3 (byte 2048)" for DER; then the
// part of a container, if any ("block 1 (line 1), certificate 2").
func (k *Key) Source() string {
	return string(text.AppendSource(nil, k.Block, k.Line, k.Index, k.Offset, k.Part))
}

// SPKI returns the key's DER SubjectPublicKeyInfo, as [SPKI] does for a
// single input. It is safe to call on different Keys concurrently. Errors
// wrap [ErrInvalidKey].
func (k *Key) SPKI() ([]byte, error) {
	if k.err != nil || k.spki != nil {
		return k.spki, k.err
	}
	switch k.kind {
	case kindRFC4716:
		return rfc4716SPKI(k.Raw)
	case kindPuTTY:
		return puttySPKI(k.Raw)
	case kindPEM:
		return k.pemSPKI(nil)
	case kindDER:
		return derSPKI(k.Raw)
	case kindModulus:
		return nil, errBareModulus
	}
	return sshLineSPKI(k.Raw)
}

// Forms returns the key's DER SubjectPublicKeyInfo, as [Key.SPKI] does,
// with the encodings a lookup needs, as the package's [Forms] builds them
// from it (appending to dst, and a PEM block's SPKI too where dst has
// room: the results may then be dst's memory): the key is parsed once,
// not once by each, when the object is a DER SPKI, certificate or
// request, or a PEM block of one, the common forms of bulk input. When the SPKI is read but Forms cannot re-encode the key
// in it, Forms returns spki with that error, canonical and other nil: the
// key can be looked up only as given. When the SPKI cannot be read, spki is
// nil. Errors wrap [ErrInvalidKey] (and [ErrEncryptedKey] for a key that
// cannot be read without a passphrase).
func (k *Key) Forms(dst []byte) (spki, canonical, other []byte, err error) {
	var info spkiInfo
	switch {
	case k.err != nil || k.spki != nil:
		spki, err = k.spki, k.err
	case k.kind == kindDER:
		spki, err = derSPKIInfo(k.Raw, &info)
	case k.kind == kindPEM:
		// The SPKI in dst's room where it fits, the other encodings after
		// it.
		n := len(dst)
		if spki, err = k.pemSPKI(dst[n:n]); err == nil {
			spki = spki[:len(spki):len(spki)]
			if end := n + len(spki); end <= cap(dst) {
				dst = dst[end:end]
			}
		}
	default:
		spki, err = k.SPKI()
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if info.algorithm == nil {
		if err = parseSPKIInto(&info, spki); err != nil {
			return spki, nil, nil, err
		}
	}
	if canonical, other, err = lookupForms(spki, &info, dst); err != nil {
		return spki, nil, nil, err
	}
	return spki, canonical, other, nil
}

// pemSPKI returns the SPKI of a PEM block, appended to dst. The block's
// DER is decoded into a pooled buffer and only the SPKI kept (a
// certificate's SPKI is a fifth of it): in dst's spare capacity where it
// fits, so that nothing is allocated.
func (k *Key) pemSPKI(dst []byte) ([]byte, error) {
	buf := derBuffers.Get().(*[]byte)
	block, ok := decodePEMBlockInto(*buf, k.Raw)
	if !ok {
		derBuffers.Put(buf)
		return pemSPKI(k.Raw) // EC PARAMETERS, then the key
	}
	spki, err := pemBlockSPKI(block, nil)
	if err == nil {
		spki = append(dst, spki...) // it may be a part of the buffer
	}
	if cap(block.der) <= maxPooledDER {
		*buf = block.der
		derBuffers.Put(buf)
	}
	return spki, err
}

// derBuffers holds buffers for decoding PEM blocks; buffers that grew past
// maxPooledDER (a block of many certificates) are left to the collector.
var derBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledDER = 16 << 10
