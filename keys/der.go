package keys

import "slices"

// derReader is a minimal DER cursor for SPKI's hot path: telling DER
// structures apart and walking certificates, requests and SPKIs. There the
// general reader of cryptobyte took two thirds of the time; this one knows
// only what those structures use: one-byte tags and definite lengths in
// minimal form of up to four bytes. Like cryptobyte it checks every bound
// and never panics; on failure it reports false and its state is undefined.
// Key parsing and all building use cryptobyte.
type derReader []byte

// DER tags used on the hot path.
const (
	tagInteger     = 0x02
	tagBitString   = 0x03
	tagOctetString = 0x04
	tagNull        = 0x05
	tagOID         = 0x06
	tagSequence    = 0x30
	tagContext0    = 0xa0 // [0] constructed
)

// next splits off the next element: its tag, its whole encoding and its
// content.
func (d *derReader) next() (tag byte, element, content []byte, ok bool) {
	b := *d
	if len(b) < 2 || b[0]&0x1f == 0x1f { // no room, or a multi-byte tag
		return 0, nil, nil, false
	}
	n, header := int(b[1]), 2
	if n >= 0x80 {
		size := n & 0x7f
		if size == 0 || size > 4 || len(b) < 2+size {
			return 0, nil, nil, false // indefinite (BER), too long or cut
		}
		n = 0
		for _, c := range b[2 : 2+size] {
			n = n<<8 | int(c)
		}
		if n < 0x80 || n>>(8*(size-1)) == 0 {
			return 0, nil, nil, false // not the minimal length form
		}
		header += size
	}
	if n > len(b)-header {
		return 0, nil, nil, false
	}
	*d = b[header+n:]
	return b[0], b[:header+n], b[header : header+n], true
}

// read splits off the next element, which must have the given tag, and
// returns its content.
func (d *derReader) read(tag byte) ([]byte, bool) {
	t, _, content, ok := d.next()
	return content, ok && t == tag
}

// readElement is read returning the whole encoding.
func (d *derReader) readElement(tag byte) ([]byte, bool) {
	t, element, _, ok := d.next()
	return element, ok && t == tag
}

// skip splits off the next element, which must have the given tag.
func (d *derReader) skip(tag byte) bool {
	_, ok := d.read(tag)
	return ok
}

// skipOptional skips the next element if it has the given tag.
func (d *derReader) skipOptional(tag byte) bool {
	if len(*d) == 0 || (*d)[0] != tag {
		return true
	}
	return d.skip(tag)
}

// readBitString returns a BIT STRING's bytes and length in bits; the
// unused bits at its end must be zero, as DER requires.
func (d *derReader) readBitString() (data []byte, bits int, ok bool) {
	content, ok := d.read(tagBitString)
	if !ok || len(content) == 0 || content[0] > 7 {
		return nil, 0, false
	}
	unused, data := content[0], content[1:]
	if unused != 0 && (len(data) == 0 || data[len(data)-1]&(1<<unused-1) != 0) {
		return nil, 0, false
	}
	return data, 8*len(data) - int(unused), true
}

func (d derReader) empty() bool { return len(d) == 0 }

// buildSPKIRaw builds SEQUENCE { SEQUENCE { OID, params }, BIT STRING key }
// from the OID's content, the parameters' whole encoding (or nil) and the
// key's bytes.
func buildSPKIRaw(oid, params, key []byte) []byte {
	return appendSPKIRaw(nil, oid, params, key)
}

// appendSPKIRaw is buildSPKIRaw appending to dst.
func appendSPKIRaw(dst, oid, params, key []byte) []byte {
	algLen := derLen(len(oid)) + len(params)
	bitsLen := 1 + len(key)
	dst = slices.Grow(dst, derLen(derLen(algLen)+derLen(bitsLen)))
	dst = appendDERHeader(dst, tagSequence, derLen(algLen)+derLen(bitsLen))
	dst = appendDERHeader(dst, tagSequence, algLen)
	dst = appendDERHeader(dst, tagOID, len(oid))
	dst = append(append(dst, oid...), params...)
	dst = appendDERHeader(dst, tagBitString, bitsLen)
	return append(append(dst, 0), key...)
}

// derLen is the size of an element whose content is n bytes.
func derLen(n int) int {
	switch {
	case n < 0x80:
		return 2 + n
	case n < 1<<8:
		return 3 + n
	case n < 1<<16:
		return 4 + n
	case n < 1<<24:
		return 5 + n
	}
	return 6 + n
}

// appendDERHeader appends a tag and a length in DER's minimal form.
func appendDERHeader(dst []byte, tag byte, n int) []byte {
	switch {
	case n < 0x80:
		return append(dst, tag, byte(n))
	case n < 1<<8:
		return append(dst, tag, 0x81, byte(n))
	case n < 1<<16:
		return append(dst, tag, 0x82, byte(n>>8), byte(n))
	case n < 1<<24:
		return append(dst, tag, 0x83, byte(n>>16), byte(n>>8), byte(n))
	}
	return append(dst, tag, 0x84, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// oidDER encodes OID content bytes as a DER OBJECT IDENTIFIER.
func oidDER(content []byte) []byte {
	return append([]byte{tagOID, byte(len(content))}, content...)
}
