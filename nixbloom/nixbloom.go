// Package nixbloom reads, queries, builds and fetches the Bloom filters a
// Nix binary cache may publish of its store paths, so a client can skip the
// .narinfo request for a path the cache certainly lacks.
//
// A false answer from [Filter.MayContain] is definite; a true one must be
// confirmed by fetching the path's .narinfo ([Cache.Confirm]).
//
// A client opens the cache with [OpenCache] and reads its filter with
// [Cache.Filter] (or both at once with [Fetch]). A server builds the filter
// of a cache directory with [CachePaths] and [FromPaths] and puts it in
// place with [Publish].
//
// # Nix's rules
//
// nix-cache-info is read and written ([CacheInfoField],
// [SetCacheInfoField]) as Nix reads it, a cache is taken only where Nix
// would open it, and a .narinfo only where Nix's parser takes it (every
// field Nix parses, except that signatures are not checked); the tests
// check all three against Nix itself. What a cache says never leads to a
// local file outside it: see [Cache].
//
// # Format
//
// Little-endian throughout:
//
//	offset  size  field
//	     0     8  magic, the ASCII bytes "NixBloom"
//	     8     8  version, 1
//	    16     8  k, the number of hash functions
//	    24     8  m, the number of bits, a multiple of 8
//	    32   m/8  the bits: bit p is bits[p/8] >> (p%8) & 1
//
// Bit order is least significant bit first, the opposite of pkbfv1. A path
// is tested by its hash part, the first 32 characters of its base name,
// decoded from Nix32 into 20 bytes: h1 and h2 are the little-endian uint64s
// at bytes 0 and 8, and position i is (h1 + i·h2) mod 2^64 mod m for i in
// 0..k-1. m need not be a power of two, and h2 is not made odd.
package nixbloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// Format constants.
const (
	magic      = "NixBloom"
	version    = 1
	headerSize = 32
	offVersion = 8
	offK       = 16
	offM       = 24

	// MaxHashCount caps k. A query costs k probes, so a hostile header must
	// not be able to make one run for ever; 64 hash functions already give
	// a false-positive rate of 2^-64 at the best fill, below what two 64-bit
	// hashes can tell apart, and real filters use fewer than 30.
	MaxHashCount = 64
)

// ErrInvalidFilter is wrapped by every error about a malformed filter;
// ErrInvalidPath by every error about a malformed store path or hash part.
var (
	ErrInvalidFilter = errors.New("nixbloom: invalid filter")
	ErrInvalidPath   = errors.New("nixbloom: invalid store path")
)

// Filter is a Nix binary cache Bloom filter. MayContain is safe for
// concurrent use; Add is not, with anything.
type Filter struct {
	k    uint64
	m    uint64
	bits []byte
}

// K returns the number of hash functions; M the number of bits.
func (f *Filter) K() uint64 { return f.k }

// M returns the number of bits in the filter.
func (f *Filter) M() uint64 { return f.m }

// parseHeader validates a header and returns k and m.
func parseHeader(b []byte) (k, m uint64, err error) {
	if len(b) < headerSize {
		return 0, 0, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header: %w", ErrInvalidFilter, len(b), headerSize, io.ErrUnexpectedEOF)
	}
	if string(b[:len(magic)]) != magic {
		return 0, 0, fmt.Errorf("%w: magic is %q, want %q", ErrInvalidFilter, b[:len(magic)], magic)
	}
	if v := binary.LittleEndian.Uint64(b[offVersion:]); v != version {
		return 0, 0, fmt.Errorf("%w: version %d, want %d", ErrInvalidFilter, v, version)
	}
	k = binary.LittleEndian.Uint64(b[offK:])
	m = binary.LittleEndian.Uint64(b[offM:])
	switch {
	case k == 0 || k > MaxHashCount:
		return 0, 0, fmt.Errorf("%w: k is %d, want 1 to %d", ErrInvalidFilter, k, MaxHashCount)
	case m == 0 || m%8 != 0:
		return 0, 0, fmt.Errorf("%w: m is %d bits, want a positive multiple of 8", ErrInvalidFilter, m)
	case m/8 > math.MaxInt-headerSize:
		return 0, 0, fmt.Errorf("%w: m is %d bits, more than this platform can address", ErrInvalidFilter, m)
	}
	return k, m, nil
}

// Parse returns a filter over b, a whole filter file: header and exactly
// m/8 bytes. It does not copy b. Errors wrap ErrInvalidFilter.
func Parse(b []byte) (*Filter, error) {
	k, m, err := parseHeader(b)
	if err != nil {
		return nil, err
	}
	if have, want := uint64(len(b)-headerSize), m/8; have != want {
		return nil, fmt.Errorf("%w: %d bytes of bits, header says %d", ErrInvalidFilter, have, want)
	}
	return &Filter{k: k, m: m, bits: b[headerSize:len(b):len(b)]}, nil
}

// HashPart returns the hash part of a store path, a base name or a bare
// hash part: the 32 characters that name a path in a binary cache
// (HASH.narinfo). Its Nix32 is checked. Errors wrap ErrInvalidPath.
func HashPart(path string) (string, error) {
	part, err := hashPart(path)
	if err != nil {
		return "", err
	}
	var b [hashPartBytes]byte
	if err := decodeHashPart(&b, part); err != nil {
		return "", err
	}
	return part, nil
}

// hashPart returns the hash part of a store path ("/nix/store/HASH-name"),
// a base name ("HASH-name") or a bare hash part ("HASH"), its Nix32
// unchecked. A name must be one Nix takes (see [checkName]); a store
// directory must be absolute and clean, without control characters, so
// that no path pkbf takes can forge a line of its output.
func hashPart(path string) (string, error) {
	slash := strings.LastIndexByte(path, '/')
	base := path[slash+1:]
	if slash >= 0 {
		if err := checkStoreDir(path[:slash]); err != nil {
			return "", fmt.Errorf("%w: %q: %s", ErrInvalidPath, path, err)
		}
	}
	switch {
	case len(base) == hashPartLen && slash < 0:
		return base, nil
	case len(base) > hashPartLen+1 && base[hashPartLen] == '-':
		if err := checkName(base[hashPartLen+1:]); err != nil {
			return "", fmt.Errorf("%w: %q: %s", ErrInvalidPath, path, err)
		}
		return base[:hashPartLen], nil
	}
	return "", fmt.Errorf("%w: %q is not a store path, base name or 32-character hash part", ErrInvalidPath, path)
}

// checkStoreDir checks the directory of a store path given to pkbf: an
// absolute, clean path (no empty, "." or ".." element, no final '/')
// without control characters. It runs on every query, so it looks at each
// byte once.
func checkStoreDir(dir string) error {
	if !strings.HasPrefix(dir, "/") {
		return errors.New("the store directory is not an absolute path")
	}
	for start := 1; start <= len(dir); {
		end := start
		for end < len(dir) && dir[end] != '/' {
			if c := dir[end]; c < 0x20 || c == 0x7f {
				return errors.New("a control character in the store directory")
			}
			end++
		}
		if e := dir[start:end]; e == "" || e == "." || e == ".." {
			return errors.New("the store directory is not a clean path")
		}
		start = end + 1
	}
	return nil
}

// nameByte says which bytes a store path's name may hold: [0-9A-Za-z+-._?=].
var nameByte = func() (ok [256]bool) {
	for _, c := range []byte("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+-._?=") {
		ok[c] = true
	}
	return ok
}()

// checkName checks a store path's name as Nix's StorePath does: 1 to 211
// characters from [0-9A-Za-z+-._?=].
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("the name is empty")
	case len(name) > 211:
		return errors.New("the name is longer than 211 characters")
	}
	for i := range len(name) {
		if !nameByte[name[i]] {
			return fmt.Errorf("%q is not allowed in a name", name[i])
		}
	}
	return nil
}

// hashes returns h1 and h2 of a store path.
func hashes(path string) (h1, h2 uint64, err error) {
	part, err := hashPart(path)
	if err != nil {
		return 0, 0, err
	}
	var b [hashPartBytes]byte
	if err := decodeHashPart(&b, part); err != nil {
		return 0, 0, err
	}
	return binary.LittleEndian.Uint64(b[0:]), binary.LittleEndian.Uint64(b[8:]), nil
}

// MayContain reports whether the cache may hold path: a full store path, a
// base name or a bare 32-character hash part. False is definite. It returns
// an error wrapping ErrInvalidPath for anything that has no valid Nix32 hash
// part. It does not allocate when it succeeds.
func (f *Filter) MayContain(path string) (bool, error) {
	h1, h2, err := hashes(path)
	if err != nil {
		return false, err
	}
	for i := range f.k {
		p := (h1 + i*h2) % f.m
		if f.bits[p/8]>>(p%8)&1 == 0 {
			return false, nil
		}
	}
	return true, nil
}

// Add adds path (as MayContain takes it) to the filter.
func (f *Filter) Add(path string) error {
	h1, h2, err := hashes(path)
	if err != nil {
		return err
	}
	for i := range f.k {
		p := (h1 + i*h2) % f.m
		f.bits[p/8] |= 1 << (p % 8)
	}
	return nil
}

// Size returns the bits m and hash count k the format's description gives
// a server for n paths at false-positive rate p:
// m = ceil(-n·ln p / ln²2) rounded up to a multiple of 8 and
// k = max(1, round(m/n · ln 2)); for n = 0, m = 8 and k = 1.
func Size(n uint64, p float64) (m, k uint64, err error) {
	if !(p > 0 && p < 1) {
		return 0, 0, fmt.Errorf("nixbloom: false-positive rate %v is not between 0 and 1", p)
	}
	if n == 0 {
		return 8, 1, nil
	}
	bits := math.Ceil(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2))
	if bits > math.MaxInt64/2 {
		return 0, 0, fmt.Errorf("nixbloom: %d paths at rate %v need %g bits, too many", n, p, bits)
	}
	m = (uint64(bits) + 7) &^ 7
	k = max(1, uint64(math.Round(float64(m)/float64(n)*math.Ln2)))
	if k > MaxHashCount {
		return 0, 0, fmt.Errorf("nixbloom: %d paths at rate %v need %d hash functions, more than %d", n, p, k, MaxHashCount)
	}
	return m, k, nil
}

// New returns an empty filter sized by Size for n paths at rate p.
func New(n uint64, p float64) (*Filter, error) {
	m, k, err := Size(n, p)
	if err != nil {
		return nil, err
	}
	if m/8 > math.MaxInt-headerSize {
		return nil, fmt.Errorf("nixbloom: %d bits do not fit this platform's memory", m)
	}
	return &Filter{k: k, m: m, bits: make([]byte, m/8)}, nil
}

// WriteTo writes the filter, header and bits, to w.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	var h [headerSize]byte
	copy(h[:], magic)
	binary.LittleEndian.PutUint64(h[offVersion:], version)
	binary.LittleEndian.PutUint64(h[offK:], f.k)
	binary.LittleEndian.PutUint64(h[offM:], f.m)
	n, err := w.Write(h[:])
	if err != nil {
		return int64(n), err
	}
	n2, err := w.Write(f.bits)
	return int64(n + n2), err
}
