package update

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"math"
	"math/bits"
	"os"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/perr"
)

// ErrImplausibleFill is wrapped by the error Update returns when the
// server's filter has far more or far fewer bits set than its header's
// entry count gives a filter of its parameters: an empty filter claiming
// thousands of keys, say. Options.Force does not override it.
var ErrImplausibleFill = perr.New("the server's filter has not the bits set that its entry count implies")

// scanned is what one reading of a complete download found.
type scanned struct {
	set      uint64 // bits set in its data
	folded   uint64 // bits set in its data folded onto hash length foldedTo
	foldedTo uint8  // the installed hash length, if shorter; else 0
	compared bool   // whether dropped was counted
	dropped  uint64 // bits set in the installed filter and not in it
	sha256   []byte // its SHA-256, if pinned to one
	sigHash  []byte // its hash as the signature needs it, if signed
}

// scanChunk is how much of each file the scan reads at a time.
const scanChunk = 1 << 20

// scan reads the download once: its hashes where pins need them (if
// withPins), the bits set in its data and, when compare, the bits set in
// the installed filter (of the same parameters, or a shorter length) and
// those it lacks.
func (up *updater) scan(h pkbf.Header, compare, withPins bool) (scanned, error) {
	var s scanned
	var hashes []hash.Hash
	var sum256, sumSig hash.Hash
	if withPins && up.pins.sha256 != nil {
		sum256 = sha256.New()
		hashes = append(hashes, sum256)
	}
	if withPins && up.pins.sig != nil {
		sumSig = up.pins.sig.newHash()
		hashes = append(hashes, sumSig)
	}
	nf, err := openRegular(up.download, os.O_RDONLY, 0)
	if err != nil {
		return s, perr.Errorf("update: %w", err)
	}
	defer nf.Close()
	// With the installed hash length the bits compare in place; with a
	// longer one, foldDropped compares them after this pass.
	fold := compare && h.HashLength != up.old.HashLength
	compare = compare && !fold
	var of io.Reader
	if compare {
		of = io.NewSectionReader(up.installed, pkbf.HeaderSize, int64(up.old.Bits()/8))
	}
	hdr := make([]byte, pkbf.HeaderSize)
	if _, err := io.ReadFull(nf, hdr); err != nil {
		return s, perr.Errorf("update: reading %s: %w", up.download, err)
	}
	for _, hh := range hashes {
		hh.Write(hdr)
	}
	nb, ob := make([]byte, min(scanChunk, h.Bits()/8)), []byte(nil)
	if compare {
		ob = make([]byte, len(nb))
	}
	for left := h.Bits() / 8; left > 0; {
		n := min(left, uint64(len(nb)))
		if _, err := io.ReadFull(nf, nb[:n]); err != nil {
			return s, perr.Errorf("update: reading %s: %w", up.download, err)
		}
		if compare {
			if _, err := io.ReadFull(of, ob[:n]); err != nil {
				return s, perr.Errorf("update: reading %s: %w", up.path, err)
			}
		}
		for _, hh := range hashes {
			hh.Write(nb[:n])
		}
		set, dropped := countBits(nb[:n], ob[:min(n, uint64(len(ob)))])
		s.set += set
		s.dropped += dropped
		left -= n
	}
	s.compared = compare
	if fold {
		if s.dropped, s.folded, err = up.foldDropped(h.Bits()/8, up.old.Bits()/8); err != nil {
			return s, err
		}
		s.foldedTo = up.old.HashLength
		s.compared = true
	}
	if sum256 != nil {
		s.sha256 = sum256.Sum(nil)
	}
	if sumSig != nil {
		s.sigHash = sumSig.Sum(nil)
	}
	return s, nil
}

// foldDropped counts the bits set in the installed filter that the
// download, of a longer hash length, lacks once folded onto it. A probe
// at bit p of the download is at bit p mod 2^L of the installed filter
// (hash length L ≥ 3): both put bit p in byte p/8 under mask 0x80>>(p%8),
// so byte i of the download's data answers for byte i mod oldSize of the
// installed data, and the installed byte must be covered by the OR of
// the download's bytes that fold onto it. It also returns the bits set in
// the folded data: what a filter of the download's keys at the installed
// length has set. newSize and oldSize are the data sizes, powers of two
// with oldSize < newSize.
func (up *updater) foldDropped(newSize, oldSize uint64) (dropped, folded uint64, err error) {
	nf, err := openRegular(up.download, os.O_RDONLY, 0)
	if err != nil {
		return 0, 0, perr.Errorf("update: %w", err)
	}
	defer nf.Close()
	of := up.installed
	n := min(scanChunk, oldSize)
	nb, ob, acc := make([]byte, n), make([]byte, n), make([]byte, n)
	for off := uint64(0); off < oldSize; off += n {
		clear(acc)
		for slice := off; slice < newSize; slice += oldSize {
			if _, err := nf.ReadAt(nb, int64(pkbf.HeaderSize+slice)); err != nil {
				return 0, 0, perr.Errorf("update: reading %s: %w", up.download, err)
			}
			for i := range acc {
				acc[i] |= nb[i]
			}
		}
		if _, err := of.ReadAt(ob, int64(pkbf.HeaderSize+off)); err != nil {
			return 0, 0, perr.Errorf("update: reading %s: %w", up.path, err)
		}
		set, d := countBits(acc, ob)
		folded += set
		dropped += d
	}
	return dropped, folded, nil
}

// countBits returns the bits set in b and, if old is as long as b, the
// bits set in old that b lacks (old &^ b), a 64-bit word at a time.
func countBits(b, old []byte) (set, dropped uint64) {
	cmp := len(old) == len(b)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		set += uint64(bits.OnesCount64(w))
		if cmp {
			dropped += uint64(bits.OnesCount64(binary.LittleEndian.Uint64(old[i:]) &^ w))
		}
	}
	for ; i < len(b); i++ {
		set += uint64(bits.OnesCount8(b[i]))
		if cmp {
			dropped += uint64(bits.OnesCount8(old[i] &^ b[i]))
		}
	}
	return set, dropped
}

// countSet counts the bits set in the data of the filter file f, whose
// data is size bytes.
func countSet(f *os.File, size uint64) (uint64, error) {
	r := io.NewSectionReader(f, pkbf.HeaderSize, int64(size))
	b := make([]byte, min(scanChunk, size))
	var set uint64
	for left := size; left > 0; {
		n := min(left, uint64(len(b)))
		if _, err := io.ReadFull(r, b[:n]); err != nil {
			return 0, perr.Errorf("update: reading %s: %w", f.Name(), err)
		}
		s, _ := countBits(b[:n], nil)
		set += s
		left -= n
	}
	return set, nil
}

// bitsNotInstalled counts the bits set in the download, whose header is
// h, that the installed filter, of h's parameters, lacks.
func (up *updater) bitsNotInstalled(h pkbf.Header) (uint64, error) {
	nf, err := openRegular(up.download, os.O_RDONLY, 0)
	if err != nil {
		return 0, perr.Errorf("update: %w", err)
	}
	defer nf.Close()
	size := h.Bits() / 8
	nr := io.NewSectionReader(nf, pkbf.HeaderSize, int64(size))
	or := io.NewSectionReader(up.installed, pkbf.HeaderSize, int64(size))
	nb, ob := make([]byte, min(scanChunk, size)), make([]byte, min(scanChunk, size))
	var extra uint64
	for left := size; left > 0; {
		n := min(left, uint64(len(nb)))
		if _, err := io.ReadFull(nr, nb[:n]); err != nil {
			return 0, perr.Errorf("update: reading %s: %w", up.download, err)
		}
		if _, err := io.ReadFull(or, ob[:n]); err != nil {
			return 0, perr.Errorf("update: reading %s: %w", up.path, err)
		}
		_, d := countBits(ob[:n], nb[:n]) // the download's bits the installed data lacks
		extra += d
		left -= n
	}
	return extra, nil
}

// The fill check. A filter of m bits into which n distinct keys were
// added with k probes each has about E = m·(1 - e^(-kn/m)) bits set,
// exactly m·(1 - (1-1/m)^(kn)) for random probes: the classic model, in
// which every add counts. The reference implementation (and pkbf's Add)
// counts only adds that set a new bit, so a filter it made has more set
// than that for its count: each counted add sets μ(x) = k(1-x)/(1-x^k) new
// bits on average at fill x, and integrating, n counted adds reach the
// fill x where (m/k)·Σ_{j=1..k} x^j/j = n (the classic model's -(m/k)·
// ln(1-x) is the same series without end). A genuine filter's expected
// fill lies between the two.
//
// How far from its expectation may it be? Each model gets a tail bound
// whose false-refusal probability is 2^-41 a side:
//
//   - Classic: the bits left clear are a sum of negatively associated
//     indicators (balls in bins), so their variance is at most
//     σ² = m·p·(1-p), p the fraction left clear, and Bernstein's
//     inequality holds: P(|X - E| ≥ t) ≤ 2·exp(-t²/(2σ² + 2t/3)).
//   - Counted adds: X minus the sum of the μ of each add is a martingale
//     whose steps are at most k and whose variance adds up to at most
//     Σ k·x(1-x) over the adds, ≤ m·x²/2 by the integral above; Freedman's
//     inequality bounds it as Bernstein's does, with 2kt/3 for 2t/3. A
//     fill above the mean-field path makes later adds set fewer new bits,
//     so the path pulls X back: its deviation is at most the martingale's.
//     Near a full filter this bound is the wider one.
//
// Solving for t: t = bc/3 + sqrt(b²c²/9 + 2cσ²), c = 41·ln 2, b = 1 or
// k, about 7.5σ for large filters plus an absolute slack (19 bits, or
// 19k) that dominates for small ones. The bounds are the widest of the
// two models; two hard facts narrow them further: each counted add sets
// at most k bits, so at most k·n are set (unless the count stopped at
// 2^32-1), and none are set beyond m.
//
// What this catches is a header that lies about the data: an empty or
// thinned-out filter claiming many keys, a full one claiming few. It does
// not catch keys removed from a filter within the tolerance: with other
// parameters than the installed filter's only pinning (a digest or a
// signature) proves a filter is the publisher's.
const fillTailBits = 41 // each side's false-refusal probability is 2^-fillTailBits

// fillBounds returns the fewest and most bits a genuine filter with
// header h may have set.
func fillBounds(h pkbf.Header) (lo, hi uint64) {
	m, k, n := float64(h.Bits()), float64(h.HashCount), float64(h.EntryCount)
	c := fillTailBits * math.Ln2
	tol := func(b, variance float64) float64 { return b*c/3 + math.Sqrt(b*b*c*c/9+2*c*variance) }
	// The classic model: every add counts.
	clear := math.Exp(k * n * math.Log1p(-1/m))
	eC, tC := m*(1-clear), tol(1, m*clear*(1-clear))
	// Counting only adds that set a bit.
	x := countedFill(h.HashCount, k*n/m)
	eA, tA := m*x, tol(k, m*x*x/2)
	lo = uint64(max(0, math.Floor(min(eC-tC, eA-tA))))
	hi = uint64(min(m, math.Ceil(max(eC+tC, eA+tA))))
	if h.EntryCount < math.MaxUint32 {
		hi = min(hi, uint64(h.HashCount)*uint64(h.EntryCount))
	}
	return lo, hi
}

// countedFill solves Σ_{j=1..k} x^j/j = r for x in [0, 1]: the fill of a
// filter whose count counts only adds that set a new bit, at r = kn/m.
func countedFill(k uint8, r float64) float64 {
	g := func(x float64) float64 {
		s, p := 0.0, 1.0
		for j := 1; j <= int(k); j++ {
			p *= x
			s += p / float64(j)
		}
		return s
	}
	if r >= g(1) {
		return 1
	}
	lo, hi := 0.0, 1.0
	for range 64 {
		mid := (lo + hi) / 2
		if g(mid) < r {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// checkFill refuses a filter whose bits set do not fit its entry count.
// For a filter longer than the installed one, its data folded onto the
// installed length must fit too: folded, a genuine filter is the filter
// of the same keys at that length, while one made by writing the
// installed data twice (and claiming twice the entries, to pass the first
// check) folds back to the installed data alone.
func (up *updater) checkFill(h pkbf.Header, s scanned) error {
	if err := up.checkFillOf(h, s.set, ""); err != nil {
		return err
	}
	if s.foldedTo == 0 {
		return nil
	}
	short := h
	short.HashLength = s.foldedTo
	return up.checkFillOf(short, s.folded, fmt.Sprintf(" folded onto the installed hash length %d", short.HashLength))
}

// checkFillOf refuses set bits that do not fit the entry count of h; how
// says how the data was read.
func (up *updater) checkFillOf(h pkbf.Header, set uint64, how string) error {
	lo, hi := fillBounds(h)
	if set >= lo && set <= hi {
		return nil
	}
	return perr.Kind(ErrImplausibleFill, up.errorf("the filter%s has %d of %d bits set, where %d entries with %d hashes each set %d to %d: its header does not describe its data (an empty or altered filter?); not installed",
		how, set, h.Bits(), h.EntryCount, h.HashCount, lo, hi))
}
