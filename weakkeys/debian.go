package weakkeys

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
)

// The Debian weak-key file: the published lists of CVE-2008-0166's keys,
// each a sorted array of fixed-width hashes, in one file that is mapped
// into memory and searched in place. All integers are big-endian.
//
// Header, 64 bytes:
//
//	offset size
//	0      8    magic "pkbfweak"
//	8      4    version, 1
//	12     4    number of lists, 1 to 256
//	16     8    size of the whole file in bytes
//	24     32   SHA-256 of the bytes from offset 64 to the end
//	56     8    zero
//
// Then one 96-byte record per list, in increasing order of (key type, key
// size, scheme, name), no two equal:
//
//	0      64   name: 1 to 64 printable ASCII bytes, then NULs
//	64     1    key type: 1 RSA, 2 EC
//	65     1    scheme: 1 sha256-modulus, 2 sha256-x, 3 sha1-vulnkey-80
//	           (sha256-x with EC keys only, the others with RSA only)
//	66     1    entry width: 16 for the sha256 schemes, 10 for sha1-vulnkey-80
//	67     1    zero
//	68     4    key size: the RSA modulus's bits (512 to 16384, a multiple
//	           of 8), or the EC curve's (256, 384 or 521: P-256, P-384, P-521)
//	72     8    offset of the list's entries in the file
//	80     8    number of entries, at least 1
//	88     8    zero
//
// Then the entries of each list, in the records' order with no gap, the
// first list's right after the last record, the file ending with the last
// list's: each list's entries strictly increasing as byte strings. An
// entry of a sha256 scheme is the first 16 bytes of the hash, one of
// sha1-vulnkey-80 the last 10 bytes of the SHA-1 (all that list holds).
const (
	fileMagic   = "pkbfweak"
	fileVersion = 1

	headerSize  = 64
	offVersion  = 8
	offLists    = 12
	offFileSize = 16
	offChecksum = 24
	offZero     = 56

	recordSize = 96
	nameSize   = 64
	recType    = 64
	recScheme  = 65
	recWidth   = 66
	recZero1   = 67
	recBits    = 68
	recOffset  = 72
	recCount   = 80
	recZero2   = 88

	maxLists = 256
	// maxFileSize bounds the file OpenDebian maps: the full published
	// lists take about 40 MB.
	maxFileSize = 1 << 30

	minRSAListBits = 512
	maxRSAListBits = 16384
)

// Scheme is how a list's entries are computed from a key.
type Scheme uint8

const (
	// SHA256Modulus: SHA-256 of the RSA modulus as big-endian bytes
	// without leading zeros (Go's big.Int.Bytes), as the CA/B Forum's
	// sha256_modulus_<bits>.csv lists hold it.
	SHA256Modulus Scheme = 1
	// SHA256X: SHA-256 of the EC point's x-coordinate as big-endian bytes
	// without leading zeros (not the fixed-width field element), as the
	// sha256_xcoord_<curve>.csv lists hold it.
	SHA256X Scheme = 2
	// VulnKey: the last 10 bytes (20 hex digits) of the SHA-1 of
	// "Modulus=" + the modulus in uppercase hex without leading zeros +
	// "\n", as openssl-vulnkey and Debian's openssl-blacklist hold it.
	VulnKey Scheme = 3
)

// String returns the scheme's name in the file format's documentation.
func (s Scheme) String() string {
	switch s {
	case SHA256Modulus:
		return "sha256-modulus"
	case SHA256X:
		return "sha256-x"
	case VulnKey:
		return "sha1-vulnkey-80"
	}
	return "scheme " + strconv.Itoa(int(s))
}

// MarshalText returns String's name, as JSON shows a List's scheme.
func (s Scheme) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// width is the size of the scheme's entries, or 0 for an unknown scheme.
func (s Scheme) width() int {
	switch s {
	case SHA256Modulus, SHA256X:
		return 16
	case VulnKey:
		return 10
	}
	return 0
}

// keyType is an entry's key algorithm.
type keyType uint8

const (
	typeRSA keyType = 1
	typeEC  keyType = 2
)

// coverage is the keys a list applies to: a type and a size in bits.
type coverage struct {
	typ  keyType
	bits int
}

// String names the keys: "RSA-2048", "P-256".
func (c coverage) String() string {
	if c.typ == typeEC {
		return "P-" + strconv.Itoa(c.bits)
	}
	return "RSA-" + strconv.Itoa(c.bits)
}

// parseCoverage reads "RSA-<bits>" or "P-256", "P-384", "P-521".
func parseCoverage(s string) (coverage, error) {
	var c coverage
	switch {
	case strings.HasPrefix(s, "RSA-"):
		c.typ = typeRSA
		c.bits, _ = strconv.Atoi(s[4:])
	case strings.HasPrefix(s, "P-"):
		c.typ = typeEC
		c.bits, _ = strconv.Atoi(s[2:])
	}
	if c.String() != s || c.check() != nil {
		return coverage{}, perr.Errorf("list key %q is neither RSA-<bits> (%d to %d, a multiple of 8) nor P-256, P-384 or P-521", s, minRSAListBits, maxRSAListBits)
	}
	return c, nil
}

func (c coverage) check() error {
	switch {
	case c.typ == typeRSA && (c.bits < minRSAListBits || c.bits > maxRSAListBits || c.bits%8 != 0):
		return fmt.Errorf("RSA key size %d is not a multiple of 8 from %d to %d", c.bits, minRSAListBits, maxRSAListBits)
	case c.typ == typeEC && curveByBits(c.bits) == nil:
		return fmt.Errorf("EC key size %d is not that of P-256, P-384 or P-521", c.bits)
	case c.typ != typeRSA && c.typ != typeEC:
		return fmt.Errorf("key type %d is neither 1 (RSA) nor 2 (EC)", c.typ)
	}
	return nil
}

// A List is one published list of Debian weak keys: the keys of one type
// and size.
type List struct {
	// Name says where the list came from: 1 to 64 printable ASCII
	// characters.
	Name string `json:"name"`
	// Key is the keys the list covers: "RSA-<bits>" (RSA moduli of that
	// size), "P-256", "P-384" or "P-521".
	Key string `json:"key"`
	// Scheme is how its entries are computed from a key.
	Scheme Scheme `json:"scheme"`
	// Entries is the number of keys it holds: set by [Debian.Lists],
	// ignored by [Builder.ReadList].
	Entries int `json:"entries"`
}

// ErrInvalidFile is wrapped by the errors of [OpenDebian] for a file that
// is not a valid Debian weak-key file, and by those of [Checker.Check]
// when such a file changes under its mapping.
var ErrInvalidFile = perr.New("invalid Debian weak-key file")

// Debian is a Debian weak-key file opened by [OpenDebian]: the lists a
// [Checker] looks keys up in. It is safe for concurrent use; Close it
// only once no Checker uses it.
type Debian struct {
	file  *mapfile.File // nil for a file parsed from memory
	lists []debianList
}

// debianList is one list of a file: its description and its entries, a
// part of the file's bytes.
type debianList struct {
	List
	cover   coverage
	width   int
	entries []byte
	// index[b] is the first entry whose top 64-shift bits are b or more,
	// index[len(index)-1] the number of entries: built at open, so that a
	// lookup reads one bucket of a few entries (see buildIndex).
	index []uint32
	shift uint
}

// OpenDebian opens a Debian weak-key file written by [Builder]: it maps it
// into memory (or reads it, where it cannot be mapped) and checks all of
// it, its checksum and the order of every list, before it returns. Errors
// name the file; those about its content wrap [ErrInvalidFile].
func OpenDebian(path string) (*Debian, error) {
	file, err := mapfile.Open(path, false)
	if err != nil {
		return nil, err
	}
	check := func() (int, error) {
		fi, err := file.Stat()
		switch {
		case err != nil:
			return 0, err
		case !fi.Mode().IsRegular():
			return 0, perr.Errorf("%s: %w: %s, not a regular file", path, ErrInvalidFile, mapfile.Kind(fi.Mode()))
		case fi.Size() < headerSize:
			return 0, perr.Errorf("%s: %w: %d bytes, shorter than the %d-byte header", path, ErrInvalidFile, fi.Size(), headerSize)
		case fi.Size() > maxFileSize:
			return 0, perr.Errorf("%s: %w: %d bytes, over the %d this package reads", path, ErrInvalidFile, fi.Size(), maxFileSize)
		}
		return int(fi.Size()), nil
	}
	fault := perr.Errorf("%s: %w: the file was cut short while it was open", path, ErrInvalidFile)
	m, err := mapfile.Map(file, path, false, check, fault)
	if err != nil {
		file.Close()
		return nil, err
	}
	d := &Debian{file: m}
	if err := d.parse(m.Bytes()[:m.Size()]); err != nil {
		m.Close()
		return nil, perr.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// parse validates a whole file and fills d's lists.
func (d *Debian) parse(b []byte) (err error) {
	if d.file != nil {
		defer d.file.RecoverFault(debug.SetPanicOnFault(true), &err)
	}
	d.lists, err = parseDebian(b)
	return err
}

// Close unmaps the file.
func (d *Debian) Close() error {
	if d.file == nil {
		return nil
	}
	return d.file.Close()
}

// Lists returns the file's lists, in the file's order.
func (d *Debian) Lists() []List {
	out := make([]List, len(d.lists))
	for i, l := range d.lists {
		out[i] = l.List
	}
	return out
}

func invalidf(format string, args ...any) error {
	return perr.Errorf("%w: "+format, append([]any{ErrInvalidFile}, args...)...)
}

// parseDebian validates a file's bytes and returns its lists, parts of b.
// It allocates only the list table, whose size it checks against len(b)
// first, and the lists' indexes, a tenth of their entries' bytes at most.
func parseDebian(b []byte) ([]debianList, error) {
	be := binary.BigEndian
	switch {
	case len(b) < headerSize:
		return nil, invalidf("%d bytes, shorter than the %d-byte header", len(b), headerSize)
	case string(b[:len(fileMagic)]) != fileMagic:
		return nil, invalidf("no %q magic at its start", fileMagic)
	case be.Uint32(b[offVersion:]) != fileVersion:
		return nil, invalidf("version %d, want %d", be.Uint32(b[offVersion:]), fileVersion)
	case be.Uint64(b[offFileSize:]) != uint64(len(b)):
		return nil, invalidf("file is %d bytes, its header says %d", len(b), be.Uint64(b[offFileSize:]))
	case be.Uint64(b[offZero:]) != 0:
		return nil, invalidf("header bytes %d to %d are not zero", offZero, headerSize-1)
	}
	n := be.Uint32(b[offLists:])
	if n < 1 || n > maxLists {
		return nil, invalidf("%d lists, want 1 to %d", n, maxLists)
	}
	next := uint64(headerSize) + uint64(n)*recordSize
	if next > uint64(len(b)) {
		return nil, invalidf("%d lists need %d bytes of table, the file has %d", n, n*recordSize, len(b)-headerSize)
	}
	lists := make([]debianList, n)
	for i := range lists {
		r := b[headerSize+i*recordSize:][:recordSize]
		l := &lists[i]
		if err := parseRecord(l, r, next, uint64(len(b))); err != nil {
			return nil, invalidf("list %d: %w", i+1, err)
		}
		if i > 0 && compareLists(&lists[i-1], l) >= 0 {
			return nil, invalidf("list %d (%s) is not after list %d (%s) in the order of key type, size, scheme and name", i+1, l.Name, i, lists[i-1].Name)
		}
		l.entries = b[next : next+uint64(l.Entries*l.width)]
		next += uint64(len(l.entries))
	}
	if next != uint64(len(b)) {
		return nil, invalidf("%d bytes after the last list", uint64(len(b))-next)
	}
	if sum := sha256.Sum256(b[headerSize:]); !bytes.Equal(sum[:], b[offChecksum:offChecksum+sha256.Size]) {
		return nil, invalidf("checksum mismatch: the file is damaged")
	}
	for i := range lists {
		l := &lists[i]
		for k := l.width; k < len(l.entries); k += l.width {
			if bytes.Compare(l.entries[k-l.width:k], l.entries[k:k+l.width]) >= 0 {
				return nil, invalidf("list %d (%s): entry %d is not above entry %d", i+1, l.Name, k/l.width+1, k/l.width)
			}
		}
		l.buildIndex()
	}
	return lists, nil
}

// parseRecord reads a list's record; its entries must start at offset
// and end by size.
func parseRecord(l *debianList, r []byte, offset, size uint64) error {
	be := binary.BigEndian
	name, ok := recordName(r[:nameSize])
	if !ok {
		return fmt.Errorf("name is not 1 to %d printable ASCII characters followed by NULs", nameSize)
	}
	l.Name = name
	l.cover = coverage{typ: keyType(r[recType]), bits: int(be.Uint32(r[recBits:]))}
	l.Key = l.cover.String()
	l.Scheme = Scheme(r[recScheme])
	l.width = l.Scheme.width()
	count := be.Uint64(r[recCount:])
	switch {
	case l.cover.check() != nil:
		return l.cover.check()
	case l.width == 0:
		return fmt.Errorf("scheme %d is not 1, 2 or 3", l.Scheme)
	case (l.Scheme == SHA256X) != (l.cover.typ == typeEC):
		return fmt.Errorf("scheme %s does not hash %s keys", l.Scheme, l.Key)
	case int(r[recWidth]) != l.width:
		return fmt.Errorf("entries of %d bytes, scheme %s has %d", r[recWidth], l.Scheme, l.width)
	case r[recZero1] != 0 || be.Uint64(r[recZero2:]) != 0:
		return fmt.Errorf("reserved bytes are not zero")
	case be.Uint64(r[recOffset:]) != offset:
		return fmt.Errorf("entries at offset %d, want %d (right after the previous list)", be.Uint64(r[recOffset:]), offset)
	case count < 1:
		return fmt.Errorf("no entries")
	case count > (size-offset)/uint64(l.width):
		return fmt.Errorf("%d entries of %d bytes at offset %d do not fit a file of %d bytes", count, l.width, offset, size)
	}
	l.Entries = int(count)
	return nil
}

// recordName reads a NUL-padded name.
func recordName(b []byte) (string, bool) {
	n := bytes.IndexByte(b, 0)
	if n < 0 {
		n = len(b)
	}
	if n == 0 || !printable(b[:n]) || bytes.Count(b[n:], []byte{0}) != len(b)-n {
		return "", false
	}
	return string(b[:n]), true
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// compareLists orders lists by key type, key size, scheme and name, the
// order of a file's table.
func compareLists(a, b *debianList) int {
	switch {
	case a.cover.typ != b.cover.typ:
		return int(a.cover.typ) - int(b.cover.typ)
	case a.cover.bits != b.cover.bits:
		return a.cover.bits - b.cover.bits
	case a.Scheme != b.Scheme:
		return int(a.Scheme) - int(b.Scheme)
	}
	return strings.Compare(a.Name, b.Name)
}

// Lookups: the hashes are uniform, so the top bits of an entry say where
// it lies in its list. The index splits a list into 2^k buckets by the top
// k bits, with k = bits.Len(entries) - 3 (at least 0): four to eight
// entries a bucket on average, one or two cache lines, found by one read
// of the index, where a search of the whole list reads a line a probe. A
// list whose entries are not spread evenly, which the order alone does not
// rule out, is still searched in logarithmic time: its bucket by
// bisection. The index takes 4·(2^k+1) bytes: about a byte an entry at
// most, for entries of 10 or 16 bytes.

// buildIndex indexes the list's entries, which are in increasing order.
func (l *debianList) buildIndex() {
	n := len(l.entries) / l.width
	k := max(bits.Len(uint(n))-3, 0)
	l.shift = uint(64 - k) // 64 for k = 0: x>>64 is 0, one bucket
	l.index = make([]uint32, 1<<k+1)
	b := uint64(0)
	for i := range n {
		top := binary.BigEndian.Uint64(l.entries[i*l.width:]) >> l.shift
		for ; b <= top; b++ {
			l.index[b] = uint32(i)
		}
	}
	for ; b < uint64(len(l.index)); b++ {
		l.index[b] = uint32(n)
	}
}

// contains reports whether the list holds the entry at the start of h (at
// least the list's width, and 8 bytes): it bisects the entries of h's
// bucket.
func (l *debianList) contains(h []byte) bool {
	w := l.width
	h = h[:w]
	x := binary.BigEndian.Uint64(h)
	b := x >> l.shift
	lo, hi := int(l.index[b]), int(l.index[b+1])
	for lo < hi {
		mid := int(uint(lo+hi) / 2)
		e := l.entries[mid*w : (mid+1)*w]
		y := binary.BigEndian.Uint64(e)
		switch {
		case y < x:
			lo = mid + 1
		case y > x:
			hi = mid
		default:
			switch c := bytes.Compare(e[8:], h[8:]); {
			case c == 0:
				return true
			case c < 0:
				lo = mid + 1
			default:
				hi = mid
			}
		}
	}
	return false
}

// lookup returns the names of d's lists for cover that hold the key whose
// hashes hashes computes, appending to dst. A fault in the mapping (the
// file cut short) is an error wrapping ErrInvalidFile.
func (d *Debian) lookup(dst []int, cover coverage, hashes *keyHashes) (found []int, covered bool, err error) {
	if d.file != nil {
		defer d.file.RecoverFault(debug.SetPanicOnFault(true), &err)
	}
	found = dst
	for i := range d.lists {
		l := &d.lists[i]
		if l.cover != cover {
			continue
		}
		covered = true
		if l.contains(hashes.of(l.Scheme)) {
			found = append(found, i)
		}
	}
	return found, covered, nil
}

// writeHeader is the header of a file of n lists and size bytes, whose
// bytes after the header hash to sum.
func writeHeader(w io.Writer, n int, size uint64, sum []byte) error {
	var h [headerSize]byte
	be := binary.BigEndian
	copy(h[:], fileMagic)
	be.PutUint32(h[offVersion:], fileVersion)
	be.PutUint32(h[offLists:], uint32(n))
	be.PutUint64(h[offFileSize:], size)
	copy(h[offChecksum:], sum)
	_, err := w.Write(h[:])
	return err
}

// appendRecord appends a list's record.
func appendRecord(dst []byte, l *debianList, offset uint64) []byte {
	var r [recordSize]byte
	be := binary.BigEndian
	copy(r[:nameSize], l.Name)
	r[recType] = byte(l.cover.typ)
	r[recScheme] = byte(l.Scheme)
	r[recWidth] = byte(l.width)
	be.PutUint32(r[recBits:], uint32(l.cover.bits))
	be.PutUint64(r[recOffset:], offset)
	be.PutUint64(r[recCount:], uint64(l.Entries))
	return append(dst, r[:]...)
}
