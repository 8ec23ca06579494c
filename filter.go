// Package pkbf reads, queries and writes pwnedkeys bloom filters (pkbfv1).
//
// A pkbfv1 file is a bloom filter over the DER SubjectPublicKeyInfo (SPKI) of
// keys known to be compromised, as published by pwnedkeys.com. A filter
// answers one question quickly and offline: is this key probably compromised?
//
// # Guarantees
//
// A false answer from [Filter.Probably] is definite: the key was never added
// to the filter. A true answer means "look it up": the key is in the filter or
// is a false positive, at about the rate [Filter.FalsePositiveRate] estimates.
// Confirm a true answer online with the pwnedkeys API (package
// github.com/pkbf/pkbf/pwnedkeys).
//
// # Reading filters
//
// [Open] memory-maps a file read-only, [Parse] wraps a byte slice and
// [ReadFilter] reads one from a stream. Each validates the header and the
// exact data size before use; errors wrap [ErrInvalidFile].
//
// # Keys
//
// Filters store the DER SubjectPublicKeyInfo of a key. [SPKI] extracts it
// from a key, certificate or CSR in PEM, DER or OpenSSH form; [KeyScanner]
// reads many from a stream; [Encodings] lists the forms under which the
// publisher stores a key (for EC keys, both point encodings).
//
// # Concurrency
//
// Queries ([Filter.Probably]) are safe from any number of goroutines at once.
package pkbf

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/bits"
	"os"
	"slices"
	"sync"
)

// ErrInvalidFile is wrapped by every error that reports a malformed filter:
// from [ParseHeader], [Parse], [Open] and [ReadFilter]. The message says
// what is wrong, for example
// "pkbf: invalid filter file: data is 511 bytes, header says 512".
var ErrInvalidFile = errors.New("pkbf: invalid filter file")

// ErrInvalidKey is wrapped by every error that reports a key, certificate
// or CSR that could not be read: from [SPKI], [Encodings] and [KeyScanner].
var ErrInvalidKey = errors.New("pkbf: invalid key")

// Filter is a pkbfv1 bloom filter.
//
// Queries are safe for concurrent use. [Filter.Close] must not run
// concurrently with other methods; after Close, queries panic.
type Filter struct {
	hdr     Header
	data    []byte // the bit data, exactly hdr.DataSize() bytes
	mask    uint64 // m - 1: a position is a hash masked to L bits
	k       uint64 // hash count
	large   bool   // larger than the CPU caches: see Probably
	release func() error

	// Writable filters only (New, or OpenFile with os.O_RDWR).
	mu      sync.Mutex // serializes changes, and header reads with them
	words   []uint32   // data as 32-bit words for atomic bit updates, or nil
	edited  bool       // the revision was raised in this editing session
	inPlace *inPlace   // the file being edited in place, or nil
}

// largeFilter is the data size past which a filter is unlikely to stay in
// the CPU caches (an EPYC core's share of L3 is 16 to 32 MiB).
const largeFilter = 16 << 20

// newFilter makes a Filter over data, which must be exactly h.DataSize() bytes.
func newFilter(h Header, data []byte) *Filter {
	return &Filter{
		hdr:   h,
		data:  data,
		mask:  h.Bits() - 1,
		k:     uint64(h.HashCount),
		large: len(data) > largeFilter,
	}
}

// checkDataSize checks that a header's declared data fits this platform's
// address space and equals have, the bytes actually present.
func checkDataSize(h Header, have uint64) error {
	want := h.DataSize()
	if want > dataSizeLimit {
		return fmt.Errorf("%w: hash length %d needs %d data bytes, more than this platform can address", ErrInvalidFile, h.HashLength, want)
	}
	switch {
	case have < want:
		return fmt.Errorf("%w: data is %d bytes, header says %d: truncated: %w", ErrInvalidFile, have, want, io.ErrUnexpectedEOF)
	case have > want:
		return fmt.Errorf("%w: data is %d bytes, header says %d: %d trailing bytes", ErrInvalidFile, have, want, have-want)
	}
	return nil
}

// Parse returns a read-only filter over b, a whole pkbfv1 file. It does not
// copy b: the caller must not modify b while the filter is in use. Errors
// wrap [ErrInvalidFile].
func Parse(b []byte) (*Filter, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if err := checkDataSize(h, uint64(len(b)-headerSize)); err != nil {
		return nil, err
	}
	return newFilter(h, b[offData:len(b):len(b)]), nil
}

// Open opens the pkbfv1 file at path read-only. Where the platform allows it
// maps the file into memory, so opening takes the same time for any size and
// the data stays in the page cache, off the Go heap; elsewhere it reads the
// file. Call [Filter.Close] to release it.
//
// A file that cannot be opened gives the *fs.PathError from the os package
// (errors.Is(err, fs.ErrNotExist) for a missing file); a malformed one an error
// wrapping [ErrInvalidFile] that names the file. Open never writes to the file.
func Open(path string) (*Filter, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return openFile(file, path)
}

func openFile(file *os.File, path string) (*Filter, error) {
	h, size, err := checkFile(file, path)
	if err != nil {
		return nil, err
	}
	b, release, err := mapFile(file, size)
	if err != nil {
		return nil, err
	}
	// The file may have changed between the checks and the mapping.
	hb, _ := h.MarshalBinary()
	if len(b) != size || string(b[:headerSize]) != string(hb) {
		if release != nil {
			release()
		}
		return nil, fmt.Errorf("%w: %s: file changed while it was being opened", ErrInvalidFile, path)
	}
	f := newFilter(h, b[offData:len(b):len(b)])
	f.release = release
	return f, nil
}

// checkFile validates an open filter file: a regular file whose header is
// valid and whose size is exactly what the header says. It returns the
// header and the file size. Errors name the file.
func checkFile(file *os.File, path string) (Header, int, error) {
	fi, err := file.Stat()
	if err != nil {
		return Header{}, 0, err
	}
	if !fi.Mode().IsRegular() {
		return Header{}, 0, fmt.Errorf("%w: %s: not a regular file", ErrInvalidFile, path)
	}
	size := fi.Size()
	var hb [headerSize]byte
	if n, err := file.ReadAt(hb[:], 0); n < headerSize {
		if err == io.EOF {
			return Header{}, 0, fmt.Errorf("%w: %s: file is %d bytes, shorter than the %d-byte header: %w", ErrInvalidFile, path, n, headerSize, io.ErrUnexpectedEOF)
		}
		return Header{}, 0, err
	}
	h, err := ParseHeader(hb[:])
	if err == nil {
		err = checkDataSize(h, uint64(size-int64(headerSize)))
	}
	if err != nil {
		return Header{}, 0, fmt.Errorf("%w (%s)", err, path)
	}
	return h, int(size), nil
}

// readChunk is ReadFilter's first buffer size: past it, the buffer only
// doubles when it is full of data that really arrived.
const readChunk = 1 << 20

// ReadFilter reads one pkbfv1 file from r: exactly the header and the data
// it declares, nothing after. Its buffer grows as data arrives, so a header
// that claims more data than the stream holds costs no more memory than the
// stream's real length: it fails at end of input with an error wrapping both
// [ErrInvalidFile] and [io.ErrUnexpectedEOF]. Read errors from r are returned
// as they are.
func ReadFilter(r io.Reader) (*Filter, error) {
	var hb [headerSize]byte
	if n, err := io.ReadFull(r, hb[:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: input is %d bytes, shorter than the %d-byte header: %w", ErrInvalidFile, n, headerSize, io.ErrUnexpectedEOF)
		}
		return nil, err
	}
	h, err := ParseHeader(hb[:])
	if err != nil {
		return nil, err
	}
	want := h.DataSize()
	if want > dataSizeLimit {
		return nil, checkDataSize(h, want)
	}
	// Start small and double as data arrives, never past the declared size.
	data := make([]byte, 0, min(want, readChunk))
	for {
		n, err := io.ReadFull(r, data[len(data):min(uint64(cap(data)), want)])
		data = data[:len(data)+n]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, checkDataSize(h, uint64(len(data)))
		}
		if err != nil {
			return nil, err
		}
		if uint64(len(data)) == want {
			break
		}
		data = slices.Grow(data, int(min(uint64(len(data)), want-uint64(len(data)))))
	}
	return newFilter(h, data), nil
}

// Close releases the memory mapping of a filter from [Open]. A filter
// edited in place ([OpenFile] with os.O_RDWR) is first synced to its file,
// and Close returns any error from editing. For other filters Close does
// nothing. Close is idempotent; after it, queries and adds panic.
func (f *Filter) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var err error
	if f.inPlace != nil {
		err = f.inPlace.close()
		f.inPlace = nil
	}
	if f.release != nil {
		if rerr := f.release(); err == nil {
			err = rerr
		}
		f.release = nil
	}
	f.data, f.words = nil, nil
	return err
}

// Header returns the filter's header. For a filter edited in place it is
// read from the file, so it includes other processes' changes.
func (f *Filter) Header() Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inPlace != nil && f.inPlace.lock(f, false) {
		f.inPlace.unlock()
	}
	return f.hdr
}

// FalsePositiveRate estimates the probability that a key never added to the
// filter is reported as probably present, from the header alone:
// (1 - (1 - 1/m)^(k·n))^k for m bits, k hashes and n entries.
func (f *Filter) FalsePositiveRate() float64 {
	h := f.Header()
	return falsePositiveRate(h.Bits(), uint64(h.HashCount), uint64(h.EntryCount))
}

func falsePositiveRate(m, k, n uint64) float64 {
	// (1 - 1/m)^(kn) = exp(kn·log1p(-1/m)), exact even for m near 2^63.
	unset := math.Exp(float64(k) * float64(n) * math.Log1p(-1/float64(m)))
	return math.Pow(1-unset, float64(k))
}

// FillRatio returns the fraction of the filter's bits that are set, counted
// over the whole data (it reads every byte).
func (f *Filter) FillRatio() float64 {
	var set uint64
	d := f.data
	for len(d) >= 8 {
		set += uint64(bits.OnesCount64(uint64(d[0]) | uint64(d[1])<<8 | uint64(d[2])<<16 | uint64(d[3])<<24 |
			uint64(d[4])<<32 | uint64(d[5])<<40 | uint64(d[6])<<48 | uint64(d[7])<<56))
		d = d[8:]
	}
	for _, c := range d {
		set += uint64(bits.OnesCount8(c))
	}
	return float64(set) / float64(f.hdr.Bits())
}

// readFile reads the first size bytes of file, whose size was checked by
// Stat: the allocation is on the word of the file system, not of a header.
func readFile(file *os.File, size int) ([]byte, func() error, error) {
	b := make([]byte, size)
	if _, err := file.ReadAt(b, 0); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, nil, &fs.PathError{Op: "read", Path: file.Name(), Err: err}
	}
	return b, nil, nil
}
