package keys

import (
	"bytes"
	"encoding/base64"
	mathbits "math/bits"
	"strconv"
)

// OpenPGP transferable public keys (RFC 4880, RFC 9580), as far as their
// RSA keys: the armor, the packet framing, and the public-key and
// public-subkey packets.

const (
	pgpArmorType  = "PGP PUBLIC KEY BLOCK"
	pgpArmorBegin = "-----BEGIN " + pgpArmorType + "-----"
	pgpArmorEnd   = "-----END " + pgpArmorType + "-----"

	pgpTagPublicKey    = 6
	pgpTagPublicSubkey = 14
)

// OpenPGPKeys returns the DER SubjectPublicKeyInfo of every key of an
// OpenPGP public key, armored ("-----BEGIN PGP PUBLIC KEY BLOCK-----", its
// CRC-24 checked when present) or binary: each public-key and
// public-subkey packet, of version 2 to 6, in order. It reads RSA keys
// (algorithms 1, 2 and 3); a key of another algorithm is an error wrapping
// [ErrUnsupportedKey], so that no key of the input goes unseen. Other
// packets (user IDs, signatures) are skipped. Errors wrap [ErrInvalidKey].
// A [Scanner] reads armored keys too, each key a [Key] of its own.
func OpenPGPKeys(data []byte) ([][]byte, error) {
	parts, err := openpgpParts(data)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(parts))
	for i, p := range parts {
		if p.err != nil {
			return nil, p.err
		}
		out[i] = p.spki
	}
	return out, nil
}

// openpgpParts reads the keys of an OpenPGP public key as OpenPGPKeys
// does, each key a part ("OpenPGP key 2") with its SPKI or its own error
// (a key of another algorithm than RSA, a malformed key packet). An error
// in the armor or the packets' framing is the error of the whole.
func openpgpParts(data []byte) ([]part, error) {
	packets := data
	if len(data) == 0 || data[0]&0x80 == 0 {
		var err error
		if packets, err = pgpDearmor(data); err != nil {
			return nil, err
		}
	}
	var out []part
	for len(packets) > 0 {
		tag, body, rest, err := pgpPacket(packets)
		if err != nil {
			return nil, err
		}
		packets = rest
		if tag != pgpTagPublicKey && tag != pgpTagPublicSubkey {
			continue
		}
		if len(out) == maxContainerParts {
			return nil, keyErrorf("OpenPGP key has more than %d keys", maxContainerParts)
		}
		spki, err := pgpKeySPKI(body)
		out = append(out, part{what: "OpenPGP key " + strconv.Itoa(len(out)+1), spki: spki, err: err})
	}
	if len(out) == 0 {
		return nil, keyErrorf("OpenPGP data has no public-key packet")
	}
	return out, nil
}

// pgpDearmor decodes an armored public key: the BEGIN line, armor headers
// up to a blank line, base64 lines, an optional "=" CRC-24 line, the END
// line.
func pgpDearmor(data []byte) ([]byte, error) {
	text := textOf(data)
	if !bytes.HasPrefix(text, []byte(pgpArmorBegin)) {
		return nil, keyErrorf("not an OpenPGP public key: no %q line or packet", pgpArmorBegin)
	}
	lines := bytes.Split(text[len(pgpArmorBegin):], []byte("\n"))
	if len(lines) == 0 || len(bytes.TrimSpace(lines[0])) != 0 {
		return nil, keyErrorf("OpenPGP armor: text after the BEGIN line")
	}
	lines = lines[1:]
	for len(lines) > 0 && len(bytes.TrimSpace(lines[0])) != 0 { // armor headers
		if bytes.IndexByte(lines[0], ':') < 0 {
			return nil, keyErrorf("OpenPGP armor: header line %q is not \"Key: value\"", bytes.TrimSpace(lines[0]))
		}
		lines = lines[1:]
	}
	if len(lines) == 0 {
		return nil, keyErrorf("OpenPGP armor: no blank line after the headers")
	}
	var body, crc []byte
	end := false
	for _, line := range lines[1:] {
		line = bytes.TrimSpace(line)
		if end = bytes.Equal(line, []byte(pgpArmorEnd)); end {
			break
		}
		switch {
		case crc != nil && len(line) > 0:
			return nil, keyErrorf("OpenPGP armor: text between the checksum and the END line")
		case len(line) > 0 && line[0] == '=':
			crc = line[1:]
		default:
			body = append(body, line...)
		}
	}
	if !end {
		return nil, keyErrorf("OpenPGP armor: no %q line", pgpArmorEnd)
	}
	packets := make([]byte, base64.StdEncoding.DecodedLen(len(body)))
	n, err := base64.StdEncoding.Decode(packets, body)
	if err != nil {
		return nil, keyErrorf("OpenPGP armor: bad base64: %v", err)
	}
	packets = packets[:n]
	if crc != nil {
		var want [3]byte
		if len(crc) != 4 {
			return nil, keyErrorf("OpenPGP armor: checksum line is not \"=\" and 4 base64 characters")
		}
		if m, err := base64.StdEncoding.Decode(want[:], crc); err != nil || m != 3 {
			return nil, keyErrorf("OpenPGP armor: checksum line is not \"=\" and 4 base64 characters")
		}
		got := crc24(packets)
		if got != uint32(want[0])<<16|uint32(want[1])<<8|uint32(want[2]) {
			return nil, keyErrorf("OpenPGP armor: CRC-24 checksum mismatch: the key is damaged")
		}
	}
	if len(packets) == 0 {
		return nil, keyErrorf("OpenPGP armor holds no packets")
	}
	return packets, nil
}

// crc24 is the armor's checksum (RFC 4880, 6.1).
func crc24(b []byte) uint32 {
	crc := uint32(0xb704ce)
	for _, c := range b {
		crc ^= uint32(c) << 16
		for range 8 {
			crc <<= 1
			if crc&0x1000000 != 0 {
				crc ^= 0x1864cfb
			}
		}
	}
	return crc & 0xffffff
}

// pgpPacket splits off the first packet: its tag and body. Partial and
// indeterminate lengths, which key packets never have, are refused.
func pgpPacket(b []byte) (tag byte, body, rest []byte, err error) {
	if b[0]&0x80 == 0 {
		return 0, nil, nil, keyErrorf("OpenPGP packet header %#02x does not have its top bit set", b[0])
	}
	var n, header int
	if b[0]&0x40 == 0 { // the old format
		tag = b[0] >> 2 & 0xf
		switch b[0] & 3 {
		case 0:
			header = 2
		case 1:
			header = 3
		case 2:
			header = 5
		default:
			return 0, nil, nil, keyErrorf("OpenPGP packet of tag %d has an indeterminate length", tag)
		}
		if len(b) < header {
			return 0, nil, nil, keyErrorf("OpenPGP packet header is cut short")
		}
		for _, c := range b[1:header] {
			n = n<<8 | int(c)
		}
	} else {
		tag = b[0] & 0x3f
		switch {
		case len(b) < 2:
			return 0, nil, nil, keyErrorf("OpenPGP packet header is cut short")
		case b[1] < 192:
			n, header = int(b[1]), 2
		case b[1] < 224:
			if len(b) < 3 {
				return 0, nil, nil, keyErrorf("OpenPGP packet header is cut short")
			}
			n, header = (int(b[1])-192)<<8+int(b[2])+192, 3
		case b[1] == 255:
			if len(b) < 6 {
				return 0, nil, nil, keyErrorf("OpenPGP packet header is cut short")
			}
			n, header = int(b[2])<<24|int(b[3])<<16|int(b[4])<<8|int(b[5]), 6
		default:
			return 0, nil, nil, keyErrorf("OpenPGP packet of tag %d has a partial body length", tag)
		}
	}
	if tag == 0 {
		return 0, nil, nil, keyErrorf("OpenPGP packet has the reserved tag 0")
	}
	if n < 0 || n > len(b)-header {
		return 0, nil, nil, keyErrorf("OpenPGP packet of tag %d is %d bytes, %d remain", tag, n, len(b)-header)
	}
	return tag, b[header : header+n], b[header+n:], nil
}

// pgpKeySPKI reads a public-key packet's body: its version, creation time,
// (version 2 and 3) validity, algorithm, (versions 5 and 6) key material's
// size, and an RSA key's n and e.
func pgpKeySPKI(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, keyErrorf("OpenPGP key packet is empty")
	}
	version := b[0]
	var fixed int
	switch version {
	case 2, 3:
		fixed = 1 + 4 + 2 + 1
	case 4:
		fixed = 1 + 4 + 1
	case 5, 6:
		fixed = 1 + 4 + 1 + 4
	default:
		return nil, keyErrorf("OpenPGP key packet of version %d", version)
	}
	if len(b) < fixed {
		return nil, keyErrorf("OpenPGP key packet of version %d is cut short", version)
	}
	algorithm, material := b[fixed-1], b[fixed:]
	if version >= 5 {
		algorithm = b[5]
		size := int(b[6])<<24 | int(b[7])<<16 | int(b[8])<<8 | int(b[9])
		if size != len(material) {
			return nil, keyErrorf("OpenPGP key packet says its key is %d bytes, it has %d", size, len(material))
		}
	}
	if algorithm < 1 || algorithm > 3 {
		return nil, unsupportedErrorf("OpenPGP key of public-key algorithm %d: pkbf reads RSA keys (1, 2, 3) only", algorithm)
	}
	n, material, err := pgpMPI(material, "modulus")
	if err != nil {
		return nil, err
	}
	e, material, err := pgpMPI(material, "exponent")
	if err != nil {
		return nil, err
	}
	if len(material) != 0 {
		return nil, keyErrorf("OpenPGP RSA key packet has %d bytes after its exponent", len(material))
	}
	return rsaSPKI(n, e), nil
}

// pgpMPI splits off a multiprecision integer: a two-byte count of its bits
// and its big-endian bytes, with no leading zero bits.
func pgpMPI(b []byte, what string) (v, rest []byte, err error) {
	if len(b) < 2 {
		return nil, nil, keyErrorf("OpenPGP RSA key has no %s", what)
	}
	bits := int(b[0])<<8 | int(b[1])
	size := (bits + 7) / 8
	if bits == 0 || len(b)-2 < size {
		return nil, nil, keyErrorf("OpenPGP RSA %s of %d bits: %d bytes remain", what, bits, len(b)-2)
	}
	v = b[2 : 2+size]
	if mathbits.Len8(v[0]) != (bits-1)%8+1 {
		return nil, nil, keyErrorf("OpenPGP RSA %s's bit count %d is not its size", what, bits)
	}
	return v, b[2+size:], nil
}
