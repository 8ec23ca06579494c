package pkbf

import (
	"encoding/binary"
	"io"
	"math"
	"time"

	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/internal/probe"
	"github.com/pkbf/pkbf/internal/text"
)

// The offsets and sizes of the layout documented on Header.
const (
	magic    = "pkbfv1"
	magicLen = 6 // len(magic), kept untyped

	offMagic      = 0
	offRevision   = offMagic + magicLen              // 6
	offUpdated    = offRevision + 4                  // 10
	offEntryCount = offUpdated + 8                   // 18
	offHashCount  = offEntryCount + 4                // 22
	offHashLength = offHashCount + 1                 // 23
	headerSize    = offHashLength + 1                // 24
	offData       = headerSize                       // the bit data follows the header
	minHashLength = 3                                // m = 8 bits: one data byte
	maxHashLength = 63                               // m = 2^63 bits, as the format allows
	minHashCount  = 1                                // at least one probe per key
	maxHashCount  = math.MaxUint8                    // the field is one byte
	dataSizeLimit = uint64(math.MaxInt - headerSize) // file size must fit in an int
)

// HeaderSize is the size in bytes of a pkbfv1 header.
const HeaderSize = 24

// The layout above adds up to HeaderSize: a compile-time check.
var _ [HeaderSize - headerSize]struct{}
var _ [headerSize - HeaderSize]struct{}

// Header is the 24-byte metadata block at the start of every pkbfv1 file.
// The file's layout, every integer big-endian:
//
//	offset  size  field
//	     0     6  magic, the ASCII bytes "pkbfv1" (70 6B 62 66 76 31)
//	     6     4  revision counter (uint32)
//	    10     8  last update time, Unix seconds (uint64)
//	    18     4  entry count (uint32)
//	    22     1  hash count k (uint8), k >= 1
//	    23     1  hash length L (uint8), the filter has m = 2^L bits
//	    24   m/8  bit data
//
// A key's bits are at positions f_i = (h1 + i·h2 + (i³-i)/6) mod m for
// i = 0..k-1, where h1 and h2 are the XXH64 hashes of its DER SPKI under
// seeds 0 and 1, h2 made odd. Two facts the published description leaves
// out:
//
//   - Bit p of the filter is data byte p/8 under mask 0x80>>(p%8): the most
//     significant bit of each byte comes first.
//   - Positions are computed in wrapping uint64 arithmetic and then reduced
//     mod m. Since m divides 2^64 this equals the exact result.
//
// The zero Header is not valid: a filter needs HashCount >= 1 and
// 3 <= HashLength <= 63.
type Header struct {
	// Revision counts editing sessions; each session that adds keys raises
	// it by one.
	Revision uint32
	// Updated is the time of the last change, to the second, in UTC.
	// A filter that was never changed has the Unix epoch. It is stored as
	// uint64(Updated.Unix()); the zero time.Time is stored as 0.
	Updated time.Time
	// EntryCount is the number of keys added to the filter.
	EntryCount uint32
	// HashCount is k, the number of bits probed for each key.
	HashCount uint8
	// HashLength is L: the filter has 2^L bits.
	HashLength uint8
}

// Bits returns m = 2^HashLength, the number of bits in the filter.
func (h Header) Bits() uint64 { return 1 << h.HashLength }

// dataSize returns the size in bytes of the bit data, m/8.
func (h Header) dataSize() uint64 { return h.Bits() / 8 }

// FileSize returns the size in bytes of a file with this header:
// [HeaderSize] plus the bit data, m/8 bytes.
func (h Header) FileSize() uint64 { return uint64(headerSize) + h.dataSize() }

// validate checks the parameters: it does not look at any data.
func (h Header) validate() error {
	if h.HashCount < minHashCount {
		return perr.Errorf("%w: hash count is 0, must be at least %d", ErrInvalidFile, minHashCount)
	}
	if h.HashLength < minHashLength || h.HashLength > maxHashLength {
		return perr.Errorf("%w: hash length is %d, must be %d to %d", ErrInvalidFile, h.HashLength, minHashLength, maxHashLength)
	}
	return nil
}

// ParseHeader decodes and validates the header at the start of b; bytes after
// the first [HeaderSize] are not looked at. It returns an error wrapping
// [ErrInvalidFile] if b is shorter than a header (wrapping
// [io.ErrUnexpectedEOF] too), the magic is not "pkbfv1", the hash count is 0
// or the hash length is outside 3 to 63.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < headerSize {
		return Header{}, perr.Errorf("%w: header is %d bytes, need %d: %w", ErrInvalidFile, len(b), headerSize, io.ErrUnexpectedEOF)
	}
	if string(b[offMagic:offMagic+magicLen]) != magic {
		return Header{}, perr.Errorf("%w: magic is %q, want %q%s", ErrInvalidFile, b[offMagic:offMagic+magicLen], magic, text.FilterHint(b))
	}
	h := Header{
		Revision:   binary.BigEndian.Uint32(b[offRevision:]),
		Updated:    time.Unix(int64(binary.BigEndian.Uint64(b[offUpdated:])), 0).UTC(),
		EntryCount: binary.BigEndian.Uint32(b[offEntryCount:]),
		HashCount:  b[offHashCount],
		HashLength: b[offHashLength],
	}
	if err := h.validate(); err != nil {
		return Header{}, err
	}
	return h, nil
}

// AppendBinary appends the 24-byte encoding of h to b (it is the
// encoding.BinaryAppender; [ParseHeader] decodes). It returns an error
// wrapping [ErrInvalidFile] if h has a hash count of 0 or a hash length
// outside 3 to 63.
func (h Header) AppendBinary(b []byte) ([]byte, error) {
	if err := h.validate(); err != nil {
		return b, err
	}
	var secs uint64
	if !h.Updated.IsZero() {
		secs = uint64(h.Updated.Unix())
	}
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint32(b, h.Revision)
	b = binary.BigEndian.AppendUint64(b, secs)
	b = binary.BigEndian.AppendUint32(b, h.EntryCount)
	return append(b, h.HashCount, h.HashLength), nil
}

// positions appends to dst the HashCount bit positions of spki in a filter
// with this header, in probe order, and returns the extended slice:
// f_i = (h1 + i·h2 + (i³-i)/6) mod 2^L for i = 0..k-1, with h1 and h2
// XXH64 of spki under seeds 0 and 1, h2 made odd. It is the definition
// behind [Filter.Probably], written plainly, for tests.
func (h Header) positions(dst []uint64, spki []byte) []uint64 {
	h1, h2 := probe.Hashes(spki)
	mask := uint64(1)<<(h.HashLength&63) - 1
	x, y := h1, h2
	for i := range uint64(h.HashCount) {
		dst = append(dst, x&mask)
		x, y = probe.Step(x, y, i)
	}
	return dst
}

// FalsePositiveRate estimates the probability that a key never added to a
// filter with this header is reported as probably present, from the header
// alone: (1 - (1 - 1/m)^(k·n))^k for m bits, k hashes and n entries.
func (h Header) FalsePositiveRate() float64 {
	return falsePositiveRate(h.Bits(), uint64(h.HashCount), uint64(h.EntryCount))
}

func falsePositiveRate(m, k, n uint64) float64 {
	// (1 - 1/m)^(kn) = exp(kn·log1p(-1/m)), exact even for m near 2^63.
	unset := math.Exp(float64(k) * float64(n) * math.Log1p(-1/float64(m)))
	return math.Pow(1-unset, float64(k))
}
