package keys

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
)

// Limits that keep a Scanner's memory bounded on any input.
const (
	maxLineSize   = 64 << 10 // a text line: ample for an OpenSSH RSA-16384 key
	maxObjectSize = 1 << 20  // a PEM block or DER object
)

// Scanner reads the keys, certificates and requests of one stream one at
// a time, in bounded memory: a PEM bundle or any concatenation of PEM blocks
// (text between blocks is ignored), an authorized_keys or known_hosts file,
// a mix of PEM and OpenSSH lines, or a concatenation of DER objects.
// Each object is reported as a [Key] with its place in the input; a bad
// object gets its own error and scanning goes on. The objects of a
// container are Keys of their own, with a Part: the certificates of a
// PKCS#7 bundle (DER, or BER with indefinite lengths), the keys and
// certificates of a PKCS#12 file, and each key of an armored OpenPGP
// public key ("OpenPGP key 2": RSA keys; a key of another algorithm is a
// Key whose error wraps [ErrUnsupportedKey]).
//
// Input starting with a DER SEQUENCE (0x30 followed by a DER length and a
// SEQUENCE, INTEGER or tagged field, or by BER's indefinite length) is
// read as DER; anything else as text.
// A text input that holds no key at all gives one Key with an error.
//
// Use it like [bufio.Scanner]:
//
//	s := keys.NewScanner(r)
//	for s.Scan() {
//		key := s.Key()
//		spki, err := key.SPKI()
//		...
//	}
//	if err := s.Err(); err != nil { ... } // reading r failed
type Scanner struct {
	r           *bufio.Reader // in, or lines for text input
	in          *bufio.Reader // over the input
	lines       *bufio.Reader // over cr: text input's reader, once there was one
	cr          crReader      // over in
	ownIn       bool          // in is the Scanner's own, not the caller's Reader
	mode        keyKind       // 0 until the first byte is seen, then kindDER or kindLine
	line        int           // lines read so far
	offset      int64         // bytes read so far
	count       int           // keys reported so far
	key         Key
	err         error
	done        bool
	ignored     int       // first line of text that was neither key nor comment
	ignoredN    int       // lines of text that were neither key nor comment
	modulus     *textLine // the first such line, when it is a bare modulus
	blocks      int       // PEM blocks begun so far
	ecParams    []byte    // an "EC PARAMETERS" block waiting for its key
	pushback    *textLine
	scratch     []byte // the PEM block being read, reused
	queue       []Key  // the objects of a container, still to report
	passphrases []string
	kdfWork     func(int) error
	bufSize     int                // of r's buffer: see bufferSize
	slab        []byte             // where small objects' Raw are cut from: see alloc
	rawAlloc    func(n int) []byte // SetRawAlloc's, or nil
}

// Small objects' Raw are cut from slabs of up to slabSize bytes, many keys
// to one allocation: an allocation a key would be most of what the
// scanner costs on small objects (DER SPKIs, BenchmarkScan), and the
// collector's work and fresh memory's page faults grow with them. A Raw's
// capacity is its length, so an append to it cannot reach another's
// bytes; a Key kept keeps its slab.
const (
	slabSize   = 16 << 10
	maxSlabbed = 2 << 10
)

// alloc returns n bytes for a Raw: from the slab when n is at most
// maxSlabbed, else allocated alone.
func (s *Scanner) alloc(n int) []byte {
	if n > maxSlabbed {
		return make([]byte, n)
	}
	if s.rawAlloc != nil {
		return s.rawAlloc(n)[:n:n]
	}
	if cap(s.slab)-len(s.slab) < n {
		// Each slab twice the last, from a few objects' worth: a small
		// input costs little.
		s.slab = make([]byte, 0, min(slabSize, max(4*n, 2*cap(s.slab))))
	}
	end := len(s.slab) + n
	b := s.slab[len(s.slab):end:end]
	s.slab = s.slab[:end]
	return b
}

// clone returns a copy of b made with alloc.
func (s *Scanner) clone(b []byte) []byte {
	c := s.alloc(len(b))
	copy(c, b)
	return c
}

// SetRawAlloc makes the Scanner take the memory of small objects' Raw
// (up to 2 KiB) from alloc, which returns n bytes, instead of from its
// own allocations: a caller that works on keys in batches can hand out
// memory it reuses once a batch is done, and allocate nothing a key. The
// caller must then keep a Key's Raw valid until it is done with the Key.
// The parts of a container get memory of their own, as they may outlive
// the container's Raw. Call it before the first Scan.
func (s *Scanner) SetRawAlloc(alloc func(n int) []byte) { s.rawAlloc = alloc }

// SetPassphrases gives the passphrases to try, after the empty one, on
// encrypted containers (PKCS#12 files). Call it before the first Scan.
func (s *Scanner) SetPassphrases(passphrases ...string) { s.passphrases = passphrases }

// SetKDFWork makes the Scanner ask spend before each key derivation of a
// PKCS#12 file it reads (its MAC, an encrypted part, each passphrase
// tried), with the iterations it would run, beside each file's own bound:
// a caller bounds the work of all the files of an input, or of many, and
// how many derive keys at once. An error from spend refuses the
// derivation, and the file's error wraps it. Call it before the first
// Scan; nil removes it.
func (s *Scanner) SetKDFWork(spend func(iterations int) error) { s.kdfWork = spend }

// textLine is one line of text input, without its line ending.
type textLine struct {
	text    []byte
	number  int
	start   int64
	tooLong bool // the line was cut at maxLineSize
}

// NewScanner returns a Scanner reading from r.
func NewScanner(r io.Reader) *Scanner {
	size := bufferSize(r)
	in := bufio.NewReaderSize(r, size)
	return &Scanner{r: in, in: in, ownIn: in != r, bufSize: size}
}

// Reset makes s read keys from r as a new Scanner would, keeping its
// settings (SetPassphrases, SetKDFWork, SetRawAlloc) and its read
// buffer: a program that scans many small inputs, a request or a
// certificate at a time, reuses one Scanner instead of making a 64 KiB
// buffer for each. Keys already returned stay valid.
func (s *Scanner) Reset(r io.Reader) {
	in, size := s.in, s.bufSize
	if need := bufferSize(r); need > size || !s.ownIn {
		in, size = bufio.NewReaderSize(r, need), need
	} else {
		in.Reset(r)
	}
	*s = Scanner{r: in, in: in, ownIn: in != r, lines: s.lines, bufSize: size,
		scratch: s.scratch[:0], slab: s.slab, passphrases: s.passphrases, kdfWork: s.kdfWork, rawAlloc: s.rawAlloc}
	if s.lines != nil && s.lines.Size() != size {
		s.lines = nil
	}
}

// bufferSize is the read buffer a scanner needs for r: room for the
// longest line, or for all of an input whose length is known and smaller
// (a request body in memory, read through a bytes.Reader), so that a small
// input costs a small buffer.
func bufferSize(r io.Reader) int {
	if l, ok := r.(interface{ Len() int }); ok && l.Len() < maxLineSize {
		return l.Len() + 1 // bufio makes it at least 16 bytes
	}
	return maxLineSize
}

// Key returns the key found by the last call to Scan.
func (s *Scanner) Key() Key { return s.key }

// Err returns the first error from the reader, other than io.EOF.
func (s *Scanner) Err() error { return s.err }

// Scan advances to the next key and reports whether there is one. It
// returns false at the end of the input or when reading fails.
func (s *Scanner) Scan() bool {
	if len(s.queue) > 0 {
		s.count++
		s.key, s.queue = s.queue[0], s.queue[1:]
		s.key.Index = s.count
		return true
	}
	if s.done {
		return false
	}
	if s.mode == 0 {
		s.mode = kindLine
		if head, _ := s.r.Peek(4); len(head) >= 3 && looksLikeDER(head) && !hexStart(head) {
			s.mode = kindDER
		} else {
			if head, _ := s.r.Peek(3); string(head) == utf8BOM {
				s.r.Discard(3) // a byte-order mark, as some editors write
				s.offset = 3
			}
			// Old Mac line ends become line feeds on the way in.
			s.cr = crReader{r: s.in}
			if s.lines == nil {
				s.lines = bufio.NewReaderSize(&s.cr, s.bufSize)
			} else {
				s.lines.Reset(&s.cr)
			}
			s.r = s.lines
		}
	}
	var ok bool
	if s.mode == kindDER {
		ok = s.scanDER()
	} else {
		ok = s.scanText()
	}
	if !ok {
		s.done = true
	}
	return ok
}

// looksLikeDER reports whether head starts a DER SEQUENCE whose first
// field is a SEQUENCE, INTEGER or [0]: every form SPKI reads.
func looksLikeDER(head []byte) bool {
	if head[0] != 0x30 {
		return false
	}
	if head[1] >= 0x80 && head[1] <= 0x84 { // 0x80: BER, reported as such
		return true
	}
	return head[1] < 0x80 && (head[2] == 0x30 || head[2] == 0x02 || head[2] == 0xa0)
}

// emit records a key found at the given line and offset. A container
// (a PKCS#7 bundle, a PKCS#12 file) becomes one Key for each of its
// objects.
func (s *Scanner) emit(kind keyKind, line int, offset int64, raw []byte, err error) bool {
	k := Key{Line: line, Offset: offset, Raw: raw, kind: kind, err: err}
	if kind == kindPEM {
		k.Block = s.blocks
	}
	if err == nil {
		if parts, ok := containerParts(kind, raw, s.passphrases, s.kdfWork); ok {
			if s.rawAlloc != nil { // the parts may outlive the caller's memory
				k.Raw = bytes.Clone(raw)
			}
			for _, p := range parts {
				q := k
				q.Part, q.spki, q.err = p.what, p.spki, p.err
				if s.rawAlloc != nil {
					q.spki = bytes.Clone(p.spki)
				}
				s.queue = append(s.queue, q)
			}
			return s.Scan()
		}
	}
	s.count++
	k.Index = s.count
	s.key = k
	return true
}

const utf8BOM = "\xef\xbb\xbf"

// crReader turns a carriage return that ends a line on its own (old Mac
// files) into a line feed; CR LF is left as it is.
type crReader struct {
	r       io.Reader
	pending bool // the last byte read was a CR, not yet passed on
}

func (c *crReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	start := 0
	if c.pending {
		p[0] = '\r'
		start = 1
	}
	n, err := c.r.Read(p[start:])
	n += start
	if c.pending && n == 1 && err != nil { // a CR at the very end
		p[0] = '\n'
		c.pending = false
		return 1, err
	}
	c.pending = false
	for i := 0; i < n; i++ {
		if j := bytes.IndexByte(p[i:n], '\r'); j < 0 {
			break
		} else {
			i += j
		}
		if i == n-1 {
			if err == nil { // decide once the next byte is known
				c.pending = true
				return n - 1, nil
			}
			p[i] = '\n'
		} else if p[i+1] != '\n' {
			p[i] = '\n'
		}
	}
	return n, err
}

// readLine returns the next line, or the line pushed back. Its text is
// valid until the next read. It returns io.EOF only when no byte was left.
func (s *Scanner) readLine() (textLine, error) {
	if l := s.pushback; l != nil {
		s.pushback = nil
		return *l, nil
	}
	l := textLine{start: s.offset}
	text, err := s.r.ReadSlice('\n')
	s.offset += int64(len(text))
	for err == bufio.ErrBufferFull {
		l.tooLong = true
		var more []byte
		more, err = s.r.ReadSlice('\n')
		s.offset += int64(len(more))
	}
	if err == io.EOF && s.offset > l.start {
		err = nil
	}
	if err != nil {
		return l, err
	}
	s.line++
	l.number = s.line
	l.text = bytes.TrimSpace(text)
	return l, nil
}

func (s *Scanner) scanText() bool {
	for {
		l, err := s.readLine()
		if err != nil {
			return s.finish(err)
		}
		switch {
		case l.tooLong:
			return s.emit(kindLine, l.number, l.start, nil, keyErrorf("line is longer than %d bytes", maxLineSize))
		case bytes.HasPrefix(l.text, []byte("-----BEGIN ")):
			s.blocks++
			k, ok, framed := s.scanPEMBuffered(l)
			if !framed {
				k, ok = s.scanPEM(l)
			}
			if ok {
				return s.emit(kindPEM, k.Line, k.Offset, k.Raw, k.err)
			}
			if s.err != nil {
				return false
			}
		case len(l.text) == 0 || l.text[0] == '#':
		case bytes.HasPrefix(l.text, []byte(rfc4716Begin)):
			raw, err := s.scanUntil(l, func(t []byte) bool { return bytes.HasPrefix(t, []byte(rfc4716End)) })
			return s.emit(kindRFC4716, l.number, l.start, raw, err)
		case bytes.HasPrefix(l.text, []byte(puttyMagic)):
			raw, err := s.scanUntil(l, func(t []byte) bool { return bytes.HasPrefix(t, []byte("Private-MAC:")) })
			return s.emit(kindPuTTY, l.number, l.start, raw, err)
		case looksLikeSSHLine(l.text):
			return s.emit(kindLine, l.number, l.start, s.clone(l.text), nil)
		default:
			if s.ignored == 0 {
				s.ignored = l.number
				if _, ok := hexModulus(l.text); ok {
					s.modulus = &textLine{text: s.clone(l.text), number: l.number, start: l.start}
				}
			}
			s.ignoredN++
		}
	}
}

// maxBlockLines bounds the lines of an RFC 4716 or PuTTY block.
const maxBlockLines = 1000

// scanUntil reads the lines of a block that began with first, up to and
// including the line for which end is true, and returns them.
func (s *Scanner) scanUntil(first textLine, end func([]byte) bool) ([]byte, error) {
	block := append(bytes.Clone(first.text), '\n')
	for n := 0; n < maxBlockLines; n++ {
		l, err := s.readLine()
		if err != nil {
			if err != io.EOF {
				s.err = err
			}
			return nil, keyErrorf("block starting %q has no end: input is truncated", shorten(string(first.text)))
		}
		if l.tooLong || len(block)+len(l.text) > maxObjectSize {
			return nil, keyErrorf("block starting %q is larger than %d bytes", shorten(string(first.text)), maxObjectSize)
		}
		block = append(append(block, l.text...), '\n')
		if end(l.text) {
			return block, nil
		}
	}
	return nil, keyErrorf("block starting %q has no end within %d lines", shorten(string(first.text)), maxBlockLines)
}

// finish ends a text scan: at the end of an input with text but no key it
// reports one Key whose error says so, or the bare modulus that is all the
// input holds.
func (s *Scanner) finish(err error) bool {
	if err != io.EOF {
		s.err = err
		return false
	}
	if m := s.modulus; s.count == 0 && s.ignoredN == 1 && m != nil {
		return s.emit(kindModulus, m.number, m.start, m.text, nil)
	}
	if s.count == 0 && s.ignored > 0 {
		return s.emit(kindLine, s.ignored, 0, nil, keyErrorf("no key, certificate or certificate request found (first text on line %d)", s.ignored))
	}
	return false
}

// scanPEM reads the rest of a PEM block whose BEGIN line is begin. It
// reports ok = false for a complete "EC PARAMETERS" block, which it keeps
// for the key after it, and when reading fails.
func (s *Scanner) scanPEM(begin textLine) (k Key, ok bool) {
	k = Key{Line: begin.number, Offset: begin.start}
	blockType := pemType(begin.text)
	block := append(s.scratch[:0], begin.text...)
	block = append(block, '\n')
	defer func() { s.scratch = block[:0] }()
	tooBig := false
	for {
		l, err := s.readLine()
		if err != nil {
			if err != io.EOF {
				s.err = err
				return k, false
			}
			s.ecParams = nil
			k.err = keyErrorf("PEM block %q has no END line: input is truncated", blockType)
			return k, true
		}
		if bytes.HasPrefix(l.text, []byte("-----BEGIN ")) {
			// Report the unterminated block; the new one is read next.
			l.text = bytes.Clone(l.text)
			s.pushback = &l
			s.ecParams = nil
			k.err = keyErrorf("PEM block %q has no END line before line %d starts another block", blockType, l.number)
			return k, true
		}
		tooBig = tooBig || l.tooLong || len(block)+len(l.text) >= maxObjectSize
		if !tooBig {
			block = append(block, l.text...)
			block = append(block, '\n')
		}
		if bytes.HasPrefix(l.text, []byte("-----END ")) {
			break
		}
	}
	if tooBig {
		s.ecParams = nil
		k.err = keyErrorf("PEM block %q is larger than %d bytes", blockType, maxObjectSize)
		return k, true
	}
	return s.finishPEM(k, blockType, block)
}

// finishPEM completes the Key of a whole PEM block. It reports false for an
// "EC PARAMETERS" block, which it keeps for the "EC PRIVATE KEY" after it.
func (s *Scanner) finishPEM(k Key, blockType string, block []byte) (Key, bool) {
	if blockType == "EC PARAMETERS" {
		s.ecParams = bytes.Clone(block)
		return k, false
	}
	if s.ecParams != nil && blockType == "EC PRIVATE KEY" {
		k.Raw = append(s.ecParams, block...)
	} else {
		k.Raw = s.clone(block)
	}
	s.ecParams = nil
	return k, true
}

// scanPEMBuffered frames the PEM block whose BEGIN line is begin in one
// step, when its END line is already in the read buffer: one search for the
// next line that starts with "-----" instead of a read per line. It reports
// framed = false, having read nothing, when the block is not wholly
// buffered or anything is unusual (a BEGIN before the END, say): scanPEM
// then reads it line by line, as it also reports its errors.
func (s *Scanner) scanPEMBuffered(begin textLine) (k Key, ok, framed bool) {
	buf, _ := s.r.Peek(s.r.Buffered())
	i := bytes.Index(buf, []byte("-----"))
	if i < 0 || len(bytes.TrimLeft(buf[bytes.LastIndexByte(buf[:i], '\n')+1:i], " \t\r")) != 0 {
		return k, false, false // no marker, or one inside a line
	}
	eol := bytes.IndexByte(buf[i:], '\n')
	if eol < 0 || !bytes.HasPrefix(bytes.TrimSpace(buf[i:i+eol]), []byte("-----END ")) {
		return k, false, false // the same test as scanPEM's, on the trimmed line
	}
	chunk := buf[:i+eol+1]
	if len(begin.text)+1+len(chunk) > maxObjectSize {
		return k, false, false
	}
	block := append(append(append(s.scratch[:0], begin.text...), '\n'), chunk...)
	s.scratch = block[:0]
	s.line += bytes.Count(chunk, []byte("\n"))
	s.offset += int64(len(chunk))
	s.r.Discard(len(chunk))
	k, ok = s.finishPEM(Key{Line: begin.number, Offset: begin.start}, pemType(begin.text), block)
	return k, ok, true
}

// scanDER reads the next DER object of a concatenation.
func (s *Scanner) scanDER() bool {
	start := s.offset
	head, err := s.r.Peek(2)
	if len(head) == 0 && err == io.EOF {
		return false
	}
	if err != nil && err != io.EOF {
		s.err = err
		return false
	}
	if len(head) < 2 || head[0] != 0x30 {
		s.done = true
		return s.emit(kindDER, 0, start, nil, keyErrorf("byte %d does not start a DER SEQUENCE: not DER, or junk after the last object", start))
	}
	if head[1] == 0x80 {
		return s.scanBER(start)
	}
	size, headerLen, err := derLength(s.r)
	if err != nil {
		s.done = true
		return s.emit(kindDER, 0, start, nil, err)
	}
	total := int64(headerLen) + size
	if total > maxObjectSize {
		n, err := io.CopyN(io.Discard, s.r, total)
		s.offset += n
		if err != nil {
			s.done = true
		}
		return s.emit(kindDER, 0, start, nil, keyErrorf("DER object is %d bytes, larger than the %d-byte limit", total, maxObjectSize))
	}
	var obj []byte
	if total <= maxSlabbed {
		obj = s.alloc(int(total))
		var n int
		n, err = io.ReadFull(s.r, obj)
		obj = obj[:n]
	} else {
		obj, err = readObject(s.r, total)
	}
	s.offset += int64(len(obj))
	if err != nil {
		if err != io.ErrUnexpectedEOF && err != io.EOF {
			s.err = err
			return false
		}
		s.done = true
		return s.emit(kindDER, 0, start, nil, keyErrorf("DER object declares %d bytes but the input ends after %d: truncated", total, len(obj)))
	}
	return s.emit(kindDER, 0, start, obj, nil)
}

// scanBER reads an object of indefinite length, which BER allows and DER
// does not: a PKCS#7 container as Windows and openssl smime write it
// (SPKI reads it; anything else in BER is an error there). Where the
// object cannot be read to its end, nothing after it can be framed.
func (s *Scanner) scanBER(start int64) bool {
	obj, err := readBER(s.r, maxObjectSize)
	s.offset += int64(len(obj))
	var be *berError
	switch {
	case err == nil:
		return s.emit(kindDER, 0, start, obj, nil)
	case !errors.As(err, &be):
		s.err = err
		return false
	case err == errBERTooLarge:
		err = keyErrorf("object of indefinite length (BER) is larger than the %d-byte limit", maxObjectSize)
	case err == errBERTruncated:
		err = keyErrorf("object of indefinite length (BER) is cut short after %d bytes: truncated", len(obj))
	default:
		err = keyErrorf("object of indefinite length (BER): %v", err)
	}
	s.done = true
	return s.emit(kindDER, 0, start, nil, err)
}

// readObject reads the next size bytes of r. Memory grows as the bytes
// arrive past what is buffered, so that a few bytes declaring a megabyte
// do not cost one. Short of size, it returns what it read and
// io.ErrUnexpectedEOF (or io.EOF if nothing).
func readObject(r *bufio.Reader, size int64) ([]byte, error) {
	const chunk = 16 << 10
	obj := make([]byte, 0, min(size, max(int64(r.Buffered()), chunk)))
	for int64(len(obj)) < size {
		if len(obj) == cap(obj) {
			obj = slices.Grow(obj, int(min(size, 2*int64(cap(obj))))-len(obj))
		}
		n, err := io.ReadFull(r, obj[len(obj):min(int64(cap(obj)), size)])
		obj = obj[:len(obj)+n]
		if err != nil {
			if err == io.EOF && len(obj) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return obj, err
		}
	}
	return obj, nil
}

// derLength peeks at a DER SEQUENCE header and returns the content length
// and the header's size. It consumes nothing.
func derLength(r *bufio.Reader) (size int64, headerLen int, err error) {
	head, _ := r.Peek(6)
	if len(head) < 2 {
		return 0, 0, keyErrorf("DER object is truncated in its header")
	}
	l := head[1]
	switch {
	case l < 0x80:
		return int64(l), 2, nil
	case l == 0x80:
		return 0, 0, keyErrorf("DER object uses an indefinite length (BER), which DER forbids")
	case l > 0x84:
		return 0, 0, keyErrorf("DER object's length takes %d bytes: too large", l&0x7f)
	}
	n := int(l & 0x7f)
	if len(head) < 2+n {
		return 0, 0, keyErrorf("DER object is truncated in its header")
	}
	for _, c := range head[2 : 2+n] {
		size = size<<8 | int64(c)
	}
	return size, 2 + n, nil
}
