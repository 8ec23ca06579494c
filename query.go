package pkbf

import (
	"runtime/debug"
	"sync/atomic"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/pkbf/pkbf/internal/prefetch"
	"golang.org/x/sys/cpu"
)

// hashes returns the two base hashes of a key: h1 = XXH64(spki, seed 0) and
// h2 = XXH64(spki, seed 1), made odd.
func hashes(spki []byte) (h1, h2 uint64) {
	return xxhash.Sum64(spki), seededHash(spki)
}

// step advances the probe sequence from position i to i+1. Consecutive
// positions differ by h2 + i(i+1)/2, so with x = f_i and y = that
// difference, f_{i+1} = x + y and the next difference is y + i + 1: the
// enhanced double hashing of Dillinger and Manolios in two additions. All
// arithmetic wraps mod 2^64, which is exact before the reduction mod 2^L.
func step(x, y, i uint64) (uint64, uint64) { return x + y, y + i + 1 }

// Probably reports whether spki, a DER SubjectPublicKeyInfo, is probably in
// the filter. False is definite: the key was never added. True means the key
// was added or is a false positive; confirm it online.
//
// Probably does not allocate and is safe for concurrent use.
//
// On a filter from [Open] or [Edit] whose file was cut short while in
// use (copied over, truncated, or on a file system too full to back it),
// a query that touches the lost part of the file panics with an error
// wrapping [ErrFileChanged], which names the file and says to replace
// filters by renaming; a caller that wants to go on may recover it. The
// Go runtime would otherwise end the program on that memory fault.
func (f *Filter) Probably(spki []byte) bool {
	if f.mapped != nil {
		return f.probablyMapped(spki)
	}
	return f.probably(spki)
}

// probablyMapped is probably on a file's mapping: a fault there becomes a
// panic with an ErrFileChanged error instead of the end of the program.
func (f *Filter) probablyMapped(spki []byte) bool {
	defer f.mapped.CatchFault(debug.SetPanicOnFault(true))
	return f.probably(spki)
}

func (f *Filter) probably(spki []byte) bool {
	data, mask := f.data, f.mask
	if data == nil {
		panic("pkbf: query on a closed Filter")
	}
	if f.words != nil { // writable: Add may be setting bits right now
		return f.probablyAtomic(spki)
	}
	h1 := xxhash.Sum64(spki)
	if f.large {
		// Out of cache, the k loads should overlap in one memory round
		// trip: compute both hashes, then probe.
		return f.probe(h1, seededHash(spki), 0)
	}
	// In cache, the first position (h1 itself) is tested before the second
	// hash: when its bit is clear, half the time in a half-full filter, the
	// answer costs half the hashing. (Out of cache this would put a memory
	// round trip before the second hash and another after it.)
	pos := h1 & mask
	if data[pos>>3]&(0x80>>(pos&7)) == 0 {
		return false
	}
	x, y := step(h1, seededHash(spki), 0)
	return f.probe(x, y, 1)
}

// seededHash returns h2: XXH64 with seed 1, made odd.
func seededHash(spki []byte) uint64 {
	var d xxhash.Digest
	d.ResetWithSeed(1)
	d.Write(spki)
	return d.Sum64() | 1
}

// probe tests positions i to k-1 of a key, where x is position i before
// the reduction mod m and y the difference to the next (see step). The
// positions depend only on the hashes, never on a loaded bit, and the
// branch on each bit is predicted taken, so the CPU issues the k loads
// together: on a filter far larger than the caches they overlap instead of
// waiting one after another.
func (f *Filter) probe(x, y, i uint64) bool {
	data, mask, k := f.data, f.mask, f.k
	if len(data) == 0 {
		return false
	}
	last := uint64(len(data) - 1) // == mask>>3; masking the index with it
	for ; i < k; i++ {            // lets the compiler drop bounds checks
		pos := x & mask
		if data[pos>>3&last]&(0x80>>(pos&7)) == 0 {
			return false
		}
		x, y = step(x, y, i)
	}
	return true
}

// Writable filters: Add may set bits while queries read them, so their
// words are loaded atomically, as Add stores them.

// wordBit returns the index of the word holding bit p of the data, and the
// bit's mask within that word (bit p is data byte p/8 under 0x80>>(p%8)).
func wordBit(p uint64) (uint64, uint32) {
	w, shift := wordShift(p)
	return w, 1 << shift
}

// wordShift returns the index of the word holding bit p of the data, and
// the bit's place in that word, 0 for the least significant. Where a byte
// sits in its word depends on the machine's byte order: see byteInWord.
func wordShift(p uint64) (uint64, uint64) {
	b := p >> 3
	return b >> 2, (b&3^byteInWord())*8 + 7 - p&7
}

// byteInWord maps a byte's index within a 32-bit word to its position in
// the word's value: the identity on little-endian machines, reversed on
// big-endian ones. cpu.IsBigEndian is a constant, so this is one too once
// inlined.
func byteInWord() uint64 {
	if cpu.IsBigEndian {
		return 3
	}
	return 0
}

// bitOf returns bit p of the data, 0 or 1, for the batch probes: loaded
// atomically from words on a writable filter (Add may be setting bits),
// else from data; last is len(data)-1. The branch goes the same way for
// every bit of a batch.
func bitOf(data []byte, words []uint32, last, p uint64) uint64 {
	if words != nil {
		return atomicBit(words, p)
	}
	return plainBit(data, last, p)
}

func atomicBit(words []uint32, p uint64) uint64 {
	w, shift := wordShift(p)
	return uint64(atomic.LoadUint32(&words[w])>>shift) & 1
}

func plainBit(data []byte, last, p uint64) uint64 {
	return uint64(data[p>>3&last]>>(7-p&7)) & 1
}

// probablyAtomic is Probably for writable filters: it loads the words
// atomically, as Add stores them.
func (f *Filter) probablyAtomic(spki []byte) bool {
	h1, h2 := hashes(spki)
	return f.probeAtomic(h1, h2)
}

func (f *Filter) probeAtomic(x, y uint64) bool {
	words, mask := f.words, f.mask
	for i := range f.k {
		w, m := wordBit(x & mask)
		if atomic.LoadUint32(&words[w])&m == 0 {
			return false
		}
		x, y = step(x, y, i)
	}
	return true
}

// loadAll loads the word of every position of a key, with no branch
// between the loads, and reports whether all its bits are set.
func (f *Filter) loadAll(x, y uint64) bool {
	words, mask := f.words, f.mask
	var missing uint32
	for i := range f.k {
		w, m := wordBit(x & mask)
		missing |= m &^ atomic.LoadUint32(&words[w])
		x, y = step(x, y, i)
	}
	return missing == 0
}

// Batches: out of cache, every probe of Probably is a cache miss (and a
// TLB miss), and a negative answer's branch waits for its load.
// ProbablyBatch keeps many keys in flight, asking the CPU to fetch each
// line as soon as its position is known and testing it once it has had
// time to arrive, so that the misses of many keys overlap with each other
// and with the hashing. It has two ways of doing so, for the two shapes a
// batch can have:
//
//   - Sequential (probeSequential): a key's bits are fetched one at a
//     time, each only if the one before was set. A negative key in a
//     half-full filter touches two lines on average instead of k, so the
//     memory system keeps up with the hashing.
//   - Pipelined (probePipelined): all k lines of a key are fetched as soon
//     as it is hashed. When most keys have most of their bits set (a
//     nearly full filter, or batches of keys that are in it), this costs
//     one round trip per key instead of k.
//
// Each batch measures how many bits its keys would have needed tested in
// turn, and the filter keeps a running mean (batchVisits): the next batch
// is pipelined when that mean passes 5/8 of k, about where the two cross.
// BenchmarkBatchWays, 256 MiB, k = 12, RSA-2048 keys, medians of three
// runs, times the two hashes alone (bits in turn: the mean for a key not
// in the filter):
//
//	bits set   in turn   sequential   pipelined
//	1/2        2.0       1.33         1.98
//	3/4        3.9       1.53         2.06
//	7/8        6.4       1.83         2.09
//	15/16      8.6       2.10         1.96
//	all        12        2.71         1.95

// ringSize is the number of keys the sequential probe keeps in flight
// (a power of two), and ringGroup how many of them it tests between two
// rounds of hashing: enough for a line to arrive before it is tested,
// few enough that the CPU can have them all outstanding.
const (
	ringSize  = 32
	ringGroup = 8
)

// minBatch is the smallest batch probed as a batch: a key alone would
// wait for its bits one round trip after another in probeSequential,
// where Probably waits for all of them at once.
const minBatch = 4

// pipeDepth is the number of keys the pipelined probe hashes ahead of the
// one it tests (a power of two); maxPrefetch bounds the lines it fetches
// ahead for one key, past which a key's probes load as Probably's do.
const (
	pipeDepth   = 8
	maxPrefetch = 16
)

// ProbablyBatch sets out[i] = f.Probably(spkis[i]) for every i: exactly the
// same answers, computed together. On a filter larger than the CPU caches
// it overlaps the memory latency of many keys (one key cannot: see
// [Filter.Probably]), either fetching each key's bits one at a time while
// other keys are hashed, which suits filters about half full and keys
// mostly absent, or fetching all of a key's bits at once, which suits
// keys with most of their bits set; the filter learns from each batch
// which way the next should take. Batches of a few hundred keys or more
// get the most from it. In cache, and for fewer than four keys, it is
// Probably in a loop. out must be at least as long as spkis;
// ProbablyBatch panics otherwise. It does not allocate, is safe for
// concurrent use (with Add too, on a writable filter), and panics as
// Probably does on a closed filter or a file cut short.
func (f *Filter) ProbablyBatch(spkis [][]byte, out []bool) {
	if len(out) < len(spkis) {
		panic("pkbf: ProbablyBatch: out is shorter than spkis")
	}
	if f.data == nil {
		panic("pkbf: query on a closed Filter")
	}
	if f.mapped != nil {
		defer f.mapped.CatchFault(debug.SetPanicOnFault(true))
	}
	switch {
	case !f.large || len(spkis) < minBatch:
		for i, s := range spkis {
			out[i] = f.probably(s)
		}
	default:
		mean := f.batchVisits.Load() // visits per key, in 16ths
		var visits uint64
		if uint64(mean)*8 > f.k*16*5 {
			visits = f.probePipelined(spkis, out)
		} else {
			visits = f.probeSequential(spkis, out)
		}
		f.learnVisits(mean, visits, len(spkis))
	}
}

// learnVisits moves the filter's running mean of visits per key (in
// 16ths) towards this batch's, by as much as the batch's size warrants
// (a batch of 256 keys or more replaces it). It stores only a change, so
// that small batches from many goroutines do not fight over the line.
func (f *Filter) learnVisits(mean uint32, visits uint64, keys int) {
	batch := int64(visits * 16 / uint64(keys))
	w := int64(min(keys, 256))
	next := uint32(int64(mean) + (batch-int64(mean))*w/256)
	if next != mean {
		f.batchVisits.Store(next)
	}
}

// A ringEntry is a key in flight in probeSequential: x is the position of
// its bit i before the reduction mod m, y the step to the next (see step).
type ringEntry struct {
	x, y   uint64
	i, key int
}

// probeSequential is ProbablyBatch testing each key's bits one at a time.
// A ring holds the keys in flight: new keys are hashed in until it is
// full, with a prefetch of the line of their first bit; then a group of
// keys from its head is tested, one bit each, and a key whose bit is set
// and has bits left goes back at the tail with a prefetch of its next
// line. By the time a key comes round again its line has arrived. The
// tests have no branch on the bits (which a half-full filter makes
// unpredictable): every key writes its answer so far and is copied to the
// tail, which moves on only if the key goes on. It returns the number of
// bits tested.
func (f *Filter) probeSequential(spkis [][]byte, out []bool) uint64 {
	const ringMask = ringSize - 1
	data, words, mask, k := f.data, f.words, f.mask, int(f.k)
	last := uint64(len(data) - 1) // == mask>>3, as in probe
	base := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	var ring [ringSize]ringEntry
	var lines [ringGroup]uintptr
	var visits uint64
	head, tail, next := 0, 0, 0
	for {
		for ; tail-head < ringSize && next < len(spkis); next++ {
			x, y := hashes(spkis[next])
			ring[tail&ringMask] = ringEntry{x: x, y: y, key: next}
			tail++
			line := base + uintptr(x&mask>>3)
			prefetch.Lines(&line, 1)
		}
		group := min(ringGroup, tail-head)
		if group == 0 {
			return visits
		}
		visits += uint64(group)
		n := 0
		for range group {
			e := &ring[head&ringMask]
			head++
			pos := e.x & mask
			bit := int(bitOf(data, words, last, pos))
			out[e.key] = bit != 0
			x, y := step(e.x, e.y, uint64(e.i))
			more := bit
			if e.i+1 == k {
				more = 0
			}
			ring[tail&ringMask] = ringEntry{x: x, y: y, i: e.i + 1, key: e.key}
			tail += more
			lines[n] = base + uintptr(x&mask>>3)
			n += more
		}
		prefetch.Lines(&lines[0], n)
	}
}

// probePipelined is ProbablyBatch fetching all the lines of a key (up to
// maxPrefetch) as soon as it is hashed, and testing them pipeDepth keys
// later. The fetches of a key are split in two, the second half issued
// during the hashing of the next key, so that they do not all wait at
// once for the CPU's few line buffers. The tests load every line with no
// branch between the loads. It returns the number of bits the keys would
// have needed tested one at a time (up to the first clear one), which
// ProbablyBatch learns from.
func (f *Filter) probePipelined(spkis [][]byte, out []bool) uint64 {
	const depthMask = pipeDepth - 1
	data, words, mask := f.data, f.words, f.mask
	last := uint64(len(data) - 1) // == mask>>3, as in probe
	base := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	k := int(min(f.k, maxPrefetch)) // the positions tested from the slot
	half := k / 2
	var slots [pipeDepth]struct {
		pos   [maxPrefetch]uint64
		lines [maxPrefetch]uintptr
		x, y  uint64 // position k and its step, for a key with more bits
	}
	var visits uint64
	for j := 0; j < len(spkis)+pipeDepth; j++ {
		if t := j - pipeDepth; t >= 0 {
			slot := &slots[t&depthMask]
			alive, run := uint64(1), uint64(0)
			if words == nil { // tested outside the loops: inside, it cost 5%
				for _, p := range slot.pos[:k] {
					alive &= plainBit(data, last, p)
					run += alive
				}
			} else {
				for _, p := range slot.pos[:k] {
					alive &= atomicBit(words, p)
					run += alive
				}
			}
			visits += run + 1 - alive // run if all were set, else run+1
			if alive != 0 && f.k > maxPrefetch {
				var rest uint64
				alive, rest = f.probeCounting(slot.x, slot.y, maxPrefetch)
				visits += rest
			}
			out[t] = alive != 0
		}
		if j >= len(spkis) {
			if j == len(spkis) && j > 0 {
				prev := &slots[(j-1)&depthMask]
				prefetch.Lines(&prev.lines[half], k-half)
			}
			continue
		}
		s := spkis[j]
		x := xxhash.Sum64(s)
		if j > 0 {
			prev := &slots[(j-1)&depthMask]
			prefetch.Lines(&prev.lines[half], k-half)
		}
		y := seededHash(s)
		slot := &slots[j&depthMask]
		for i := range k {
			p := x & mask
			slot.pos[i] = p
			slot.lines[i] = base + uintptr(p>>3)
			x, y = step(x, y, uint64(i))
		}
		slot.x, slot.y = x, y
		prefetch.Lines(&slot.lines[0], half)
	}
	return visits
}

// probeCounting is probe for the bits past maxPrefetch of a pipelined
// key: it also returns how many bits it tested. It reports 1 if all were
// set, else 0.
func (f *Filter) probeCounting(x, y, i uint64) (alive, tested uint64) {
	data, words, mask := f.data, f.words, f.mask
	last := uint64(len(data) - 1)
	for ; i < f.k; i++ {
		tested++
		if bitOf(data, words, last, x&mask) == 0 {
			return 0, tested
		}
		x, y = step(x, y, i)
	}
	return 1, tested
}
