// Package der reads and writes the little of DER that pkbf's hot paths
// need, without the general machinery of cryptobyte or encoding/asn1: a
// cursor over one-byte tags and minimal definite lengths, element headers,
// and object identifiers.
package der

// Reader is a minimal DER cursor for the hot path of turning input into
// SPKIs: telling DER structures apart and walking certificates, requests
// and SPKIs. There the general reader of cryptobyte took two thirds of the
// time; this one knows only what those structures use: one-byte tags and
// definite lengths in minimal form of up to four bytes. Like cryptobyte it
// checks every bound and never panics; on failure it reports false and its
// state is undefined. Key parsing elsewhere uses cryptobyte.
type Reader []byte

// DER tags used on the hot path.
const (
	TagInteger     = 0x02
	TagBitString   = 0x03
	TagOctetString = 0x04
	TagNull        = 0x05
	TagOID         = 0x06
	TagSequence    = 0x30
	TagContext0    = 0xa0 // [0] constructed
)

// Next splits off the next element: its tag, its whole encoding and its
// content.
func (d *Reader) Next() (tag byte, element, content []byte, ok bool) {
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

// Read splits off the next element, which must have the given tag, and
// returns its content.
func (d *Reader) Read(tag byte) ([]byte, bool) {
	t, _, content, ok := d.Next()
	return content, ok && t == tag
}

// ReadElement is read returning the whole encoding.
func (d *Reader) ReadElement(tag byte) ([]byte, bool) {
	t, element, _, ok := d.Next()
	return element, ok && t == tag
}

// Skip splits off the next element, which must have the given tag.
func (d *Reader) Skip(tag byte) bool {
	_, ok := d.Read(tag)
	return ok
}

// SkipOptional skips the next element if it has the given tag.
func (d *Reader) SkipOptional(tag byte) bool {
	if len(*d) == 0 || (*d)[0] != tag {
		return true
	}
	return d.Skip(tag)
}

// ReadBitString returns a BIT STRING's bytes and length in bits; the
// unused bits at its end must be zero, as DER requires.
func (d *Reader) ReadBitString() (data []byte, bits int, ok bool) {
	content, ok := d.Read(TagBitString)
	if !ok || len(content) == 0 || content[0] > 7 {
		return nil, 0, false
	}
	unused, data := content[0], content[1:]
	if unused != 0 && (len(data) == 0 || data[len(data)-1]&(1<<unused-1) != 0) {
		return nil, 0, false
	}
	return data, 8*len(data) - int(unused), true
}

func (d Reader) Empty() bool { return len(d) == 0 }

// Len is the size of an element whose content is n bytes.
func Len(n int) int {
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

// AppendHeader appends a tag and a length in DER's minimal form.
func AppendHeader(dst []byte, tag byte, n int) []byte {
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

// OID returns the content bytes of the DER encoding of the object
// identifier with the given arcs (at least two; the first 0, 1 or 2, the
// second below 40 unless the first is 2), for comparing OIDs as bytes.
func OID(arcs ...int) []byte {
	if len(arcs) < 2 || arcs[0] > 2 || arcs[0] < 2 && arcs[1] >= 40 {
		panic("der: invalid OID")
	}
	b := appendBase128(nil, arcs[0]*40+arcs[1])
	for _, a := range arcs[2:] {
		b = appendBase128(b, a)
	}
	return b
}

// appendBase128 appends n, not negative, in base 128, most significant
// group first, with the high bit set on all but the last.
func appendBase128(b []byte, n int) []byte {
	if n < 0 {
		panic("der: negative OID arc")
	}
	start := len(b)
	for {
		b = append(b, byte(n&0x7f))
		n >>= 7
		if n == 0 {
			break
		}
	}
	for i, j := start, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	for i := start; i < len(b)-1; i++ {
		b[i] |= 0x80
	}
	return b
}
