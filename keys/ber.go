package keys

import (
	"bufio"
	"fmt"
	"io"
)

// BER (X.690, section 8) as PKCS#7 writers use it for the container:
// indefinite lengths ended by two zero bytes, which Windows and openssl
// smime write, and definite lengths in more bytes than they need. DER
// allows neither. berToDER rewrites the framing of the container's own
// levels as DER and copies what is inside them (the certificates) byte
// for byte, so that a certificate is read as it is read anywhere else: a
// certificate in BER is refused, as it is outside a container.

// berContainerLevels is how deep the container's own structure goes: the
// ContentInfo (level 0), its [0] content (1), the SignedData (2) and its
// fields (3). Elements at these levels are rewritten as DER; an element
// below them is copied as it is, and read only to find its end when its
// length is indefinite.
const berContainerLevels = 4

// maxBERDepth bounds the nesting of indefinite-length elements the pass
// follows, and so its recursion and the times a byte is moved: PKCS#7's
// deepest (a constructed OCTET STRING of content) is at level 6, a
// certificate's at about 12.
const maxBERDepth = 24

// berToDER returns the one BER element b holds, its container levels
// rewritten as DER. It allocates in proportion to len(b), never to a
// length the input declares, and returns an error wrapping ErrInvalidKey
// for what is not one complete BER element.
func berToDER(b []byte) ([]byte, error) {
	// A definite length takes at most 5 bytes for an input below 16 MiB,
	// one more than the 4 that the indefinite form's header and end take:
	// the output is at most a quarter larger than the input.
	out, n, err := berAppend(make([]byte, 0, len(b)+len(b)/4+8), b, 0)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, berErrorf("%d bytes after the element", len(b)-n)
	}
	return out, nil
}

// berHeader is an element's identifier and length as read.
type berHeader struct {
	idLen       int  // bytes of the identifier
	headerLen   int  // bytes of the identifier and length
	constructed bool // bit 6 of the identifier
	indefinite  bool
	length      int // the content's length, when definite
}

// maxBERTagBytes bounds a high tag number's identifier: four bytes hold
// tag numbers to 2^21, more than any ASN.1 module uses.
const maxBERTagBytes = 4

// readBERHeader reads the header at the start of b: it fails on a header
// cut short, an indefinite length on a primitive element, a length in
// more than 4 bytes, and a definite length past the end of b.
func readBERHeader(b []byte) (h berHeader, err error) {
	if len(b) < 2 {
		return h, berErrorf("element is cut short in its header")
	}
	h.constructed = b[0]&0x20 != 0
	h.idLen = 1
	if b[0]&0x1f == 0x1f { // the high tag number form
		for {
			if h.idLen >= len(b) || h.idLen > maxBERTagBytes {
				return h, berErrorf("tag number is cut short or takes more than %d bytes", maxBERTagBytes)
			}
			c := b[h.idLen]
			h.idLen++
			if c&0x80 == 0 {
				break
			}
		}
		if h.idLen >= len(b) {
			return h, berErrorf("element is cut short in its header")
		}
	}
	l := b[h.idLen]
	h.headerLen = h.idLen + 1
	switch {
	case l == 0x80:
		if !h.constructed {
			return h, berErrorf("primitive element has an indefinite length")
		}
		h.indefinite = true
		return h, nil
	case l == 0xff:
		return h, berErrorf("length byte 0xff is reserved")
	case l > 0x84:
		return h, berErrorf("length takes %d bytes: too large", l&0x7f)
	case l > 0x80:
		size := int(l & 0x7f)
		if len(b) < h.headerLen+size {
			return h, berErrorf("element is cut short in its length")
		}
		for _, c := range b[h.headerLen : h.headerLen+size] {
			h.length = h.length<<8 | int(c)
		}
		h.headerLen += size
	default:
		h.length = int(l)
	}
	// On 32-bit platforms a 4-byte length may be negative.
	if h.length < 0 || h.length > len(b)-h.headerLen {
		return h, berErrorf("element declares %d bytes of content, %d remain", uint32(h.length), len(b)-h.headerLen)
	}
	return h, nil
}

// berAppend appends the DER form of the element at the start of b, at
// the given level of the container, to dst, and returns the bytes of b it
// took.
func berAppend(dst, b []byte, level int) (out []byte, n int, err error) {
	if level >= berContainerLevels {
		n, err := berLen(b, level)
		if err != nil {
			return dst, 0, err
		}
		return append(dst, b[:n]...), n, nil
	}
	h, err := readBERHeader(b)
	if err != nil {
		return dst, 0, err
	}
	if b[0] == 0 && b[1] == 0 {
		return dst, 0, berErrorf("end-of-contents outside an element of indefinite length")
	}
	if !h.constructed {
		end := h.headerLen + h.length
		dst = appendBERLength(append(dst, b[:h.idLen]...), h.length)
		return append(dst, b[h.headerLen:end]...), end, nil
	}
	// A constructed element: its children, each rewritten, then its
	// header in front of them. The header's room is reserved, and the
	// children moved down to close what it did not take.
	dst = append(dst, b[:h.idLen]...)
	lengthAt := len(dst)
	dst = append(dst, make([]byte, maxBERLengthBytes)...)
	contentAt := len(dst)
	content := b[h.headerLen:]
	if !h.indefinite {
		content = content[:h.length]
	}
	pos := 0
	for {
		if h.indefinite {
			if len(content)-pos < 2 {
				return dst, 0, berErrorf("element of indefinite length has no end-of-contents")
			}
			if content[pos] == 0 && content[pos+1] == 0 {
				pos += 2
				break
			}
		} else if pos == len(content) {
			break
		}
		var m int
		if dst, m, err = berAppend(dst, content[pos:], level+1); err != nil {
			return dst, 0, err
		}
		pos += m
	}
	contentLen := len(dst) - contentAt
	var length [maxBERLengthBytes]byte
	l := appendBERLength(length[:0], contentLen)
	copy(dst[lengthAt+len(l):], dst[contentAt:])
	copy(dst[lengthAt:], l)
	return dst[:lengthAt+len(l)+contentLen], h.headerLen + pos, nil
}

// berLen returns the size of the BER element at the start of b, at the
// given level.
func berLen(b []byte, level int) (int, error) {
	if level > maxBERDepth {
		return 0, berErrorf("elements nest more than %d deep", maxBERDepth)
	}
	h, err := readBERHeader(b)
	switch {
	case err != nil:
		return 0, err
	case b[0] == 0 && b[1] == 0:
		return 0, berErrorf("end-of-contents outside an element of indefinite length")
	case !h.indefinite:
		return h.headerLen + h.length, nil
	}
	pos := h.headerLen
	for {
		if len(b)-pos < 2 {
			return 0, berErrorf("element of indefinite length has no end-of-contents")
		}
		if b[pos] == 0 && b[pos+1] == 0 {
			return pos + 2, nil
		}
		n, err := berLen(b[pos:], level+1)
		if err != nil {
			return 0, err
		}
		pos += n
	}
}

// maxBERLengthBytes is the most bytes a length takes: 0x84 and four.
const maxBERLengthBytes = 5

// appendBERLength appends a length in DER's minimal form.
func appendBERLength(dst []byte, n int) []byte {
	switch {
	case n < 0x80:
		return append(dst, byte(n))
	case n < 1<<8:
		return append(dst, 0x81, byte(n))
	case n < 1<<16:
		return append(dst, 0x82, byte(n>>8), byte(n))
	case n < 1<<24:
		return append(dst, 0x83, byte(n>>16), byte(n>>8), byte(n))
	}
	return append(dst, 0x84, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// readBER reads one BER element of indefinite length from r, exactly its
// bytes and no more, as a DER stream's Scanner must: it follows the
// headers, reading each definite content whole, to the end-of-contents
// that closes the element. It reads at most limit bytes, and returns what
// it read whatever the error: errBERTooLarge past limit, errBERTruncated
// for a stream that ends inside the element, another *berError for what
// is not BER, or r's error.
func readBER(r *bufio.Reader, limit int) (obj []byte, err error) {
	br := berStream{r: r, limit: limit}
	err = br.element(0)
	return br.buf, err
}

// berStream reads BER elements from r into buf.
type berStream struct {
	r     *bufio.Reader
	buf   []byte
	limit int
}

// take reads the next n bytes into buf.
func (s *berStream) take(n int) error {
	if n > s.limit-len(s.buf) {
		return errBERTooLarge
	}
	start := len(s.buf)
	s.buf = append(s.buf, make([]byte, n)...)
	got, err := io.ReadFull(s.r, s.buf[start:])
	s.buf = s.buf[:start+got]
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errBERTruncated
	}
	return err
}

// errBERTooLarge and errBERTruncated are readBER's own failures, which
// the Scanner words with the object's size and place.
var (
	errBERTooLarge  = berErrorf("larger than the limit")
	errBERTruncated = berErrorf("truncated")
)

// berError is an error of the BER pass, as opposed to one of reading:
// plain text, as its callers wrap it in an error of the package that says
// what held the BER.
type berError struct{ text string }

func (e *berError) Error() string { return e.text }

func berErrorf(format string, args ...any) error {
	return &berError{fmt.Sprintf(format, args...)}
}

// element reads one element at the given depth.
func (s *berStream) element(depth int) error {
	if depth > maxBERDepth {
		return berErrorf("elements nest more than %d deep", maxBERDepth)
	}
	id, err := s.byte()
	if err != nil {
		return err
	}
	if id&0x1f == 0x1f { // the high tag number form
		for i := 0; ; i++ {
			if i == maxBERTagBytes {
				return berErrorf("tag number takes more than %d bytes", maxBERTagBytes)
			}
			c, err := s.byte()
			if err != nil {
				return err
			}
			if c&0x80 == 0 {
				break
			}
		}
	}
	l, err := s.byte()
	if err != nil {
		return err
	}
	var n uint64
	switch {
	case l == 0x80:
		if id&0x20 == 0 {
			return berErrorf("primitive element has an indefinite length")
		}
		return s.untilEnd(depth)
	case l == 0xff || l > 0x84:
		return berErrorf("length byte %#02x: too large or reserved", l)
	case l > 0x80:
		for range l & 0x7f {
			c, err := s.byte()
			if err != nil {
				return err
			}
			n = n<<8 | uint64(c)
		}
	default:
		n = uint64(l)
	}
	if n > uint64(s.limit-len(s.buf)) {
		return errBERTooLarge
	}
	return s.take(int(n))
}

// untilEnd reads the elements of an indefinite-length element at depth,
// and the end-of-contents after them.
func (s *berStream) untilEnd(depth int) error {
	for {
		peek, err := s.r.Peek(2)
		if len(peek) < 2 {
			if err == nil || err == io.EOF {
				return errBERTruncated
			}
			return err
		}
		if peek[0] == 0 && peek[1] == 0 {
			return s.take(2)
		}
		if err := s.element(depth + 1); err != nil {
			return err
		}
	}
}

// byte reads the next byte into buf and returns it.
func (s *berStream) byte() (byte, error) {
	if err := s.take(1); err != nil {
		return 0, err
	}
	return s.buf[len(s.buf)-1], nil
}
