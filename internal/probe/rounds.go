package probe

import (
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/pkbf/pkbf/internal/xxh64"
)

// Batches: out of cache, every probe of a query is a cache miss (and a
// TLB miss), and a negative answer's branch waits for its load. A batch
// keeps many keys in flight so that their misses overlap with each other.
// It works in rounds, and each round has separate passes: it takes a
// block of new keys' hashes, tests what the previous round fetched, and
// asks the CPU in one burst for the lines of the new block's first
// positions and the next line of every key still alive. Prefetches go in
// a burst, never between two keys' hashes: a prefetch that misses the TLB
// holds the core until its page walk ends, which stalls hashing issued
// behind it. A key's first position needs only its first hash, so keys
// are hashed with seed 0 alone (unless one vector pass gives both) and a
// key gets its second hash only once its first bit is found set: a key
// not in a half-full filter needs three quarters of the scalar hashing on
// average.
//
// The keys are hashed HashRun at a time, ahead of the rounds that take
// them a block at a time: read in one long stretch, keys that are not in
// the caches (a large slice of them, a page just read) stream in from
// memory ahead of their hashing, where a block a round, between the
// rounds' loads and tests, waited for them (BenchmarkBatch/KeySet in the
// root package measures both). A round between two runs has only its own
// tests to cover its lines' trip to memory; the block and the live keys
// keep enough lines in flight that the trips overlap.
//
// How many positions a key fetches after its second hash (its depth) is
// the caller's choice: fetched one at a time, a key not in a half-full
// filter touches two lines on average instead of k, but needs a round for
// each; a key with all its bits set gains from having several fetched at
// once. Rounds counts the bits its keys needed tested in turn (Visits),
// from which the caller picks the next batch's depth.

// RoundKeys is the number of keys a round starts: few enough that the
// lines of a round fit in the CPU's miss buffers as they arrive. HashRun,
// a multiple of it, is the number of keys hashed in one stretch. MaxDepth bounds the positions fetched
// after the second hash; LiveKeys bounds the keys being tested one line
// a round.
const (
	RoundKeys = 16
	MaxDepth  = 16
	LiveKeys  = 4 * RoundKeys
	HashRun   = 16 * RoundKeys
)

// MaxKeys is the most keys one Rounds takes: their index fits in an
// entry's uint32.
const MaxKeys = 1 << 30

// maxLive bounds the live keys: they join two rounds after their first
// hash and grow by at most a block a round, and a block is hashed only
// while there are at most LiveKeys of them.
const maxLive = LiveKeys + 3*RoundKeys

// maxTests bounds the positions a round fetches: a block's first
// positions, the depth positions of a block's keys, the live keys'.
const maxTests = RoundKeys + RoundKeys*MaxDepth + maxLive

// An entry is a key being tested one line a round: x is the position of
// its bit i before the reduction mod m, y the step to the next (see
// Step).
type entry struct {
	x, y   uint64
	i, key uint32
}

// Rounds is the state of one batch's rounds. A round:
//
//  1. takes the hashes of up to RoundKeys new keys (Hash), hashing the
//     next HashRun keys first when it has none left, and stores their
//     first positions;
//  2. the caller loads the bits at the positions Hash returns, those the
//     round before fetched, into Bits, with no test between the loads;
//  3. Next tests the first bits of the keys hashed the round before; a key
//     whose bit is set and has bits left gets its second hash now, and
//     its next depth positions are stored;
//  4. Next tests the depth bits of the keys of the round before's step 3,
//     with no branch between them; a key with all of them set and bits
//     left joins the live keys;
//  5. Next tests one bit of each live key fetched the round before; a key
//     whose bit is set and has bits left stays live, at its next position;
//  6. Next fetches in one burst the lines of the positions stored by
//     steps 1 and 3 and the next line of every live key.
//
// The live keys are compacted with no branch on the bits (which a
// half-full filter makes unpredictable): each is written at the end of
// the next list, which grows only if the key goes on. A Rounds is large
// (about 23 KB) and meant to live on its caller's stack: nothing in it
// escapes.
type Rounds struct {
	mask  uint64  // m - 1
	k     uint32  // hash count
	depth int     // positions fetched at once after the second hash
	base  uintptr // the address of the filter's data
	both  bool    // a block gets both hashes in one vector pass

	r, next int // the round; the index of the next key to hash
	firsts  [2]struct {
		h1, h2 [RoundKeys]uint64 // h2 only with both
		n      int
		next   int // the index of the block's first key
	}
	seconds [2]struct {
		rest [RoundKeys]entry // position depth+1, for keys that go on
		n    int
	}
	lives  [2][maxLive]entry
	nLive  int
	tests  [2][maxTests]uint64 // positions stored in a round, tested the next
	nTests [2]int
	lines  [maxTests]uintptr
	// run holds the hashes of the keys hashed ahead of the rounds that
	// take them (h2 only with both); at is the next a round takes.
	run struct {
		h1, h2 [HashRun]uint64
		n, at  int
	}

	// Bits receives the bits at the positions Hash returns, 0 or 1 each.
	Bits [maxTests]uint64
	// Visits counts the bits the keys needed tested in turn, up to the
	// first clear one.
	Visits uint64
}

// Start readies r for a batch of spkis (Hash and Next are given the same
// spkis, and Next the out whose out[i] answers spkis[i]: arguments, not
// fields, so that the caller's slices stay where they are), on a filter
// of mask+1 bits and k hashes whose data starts at base; a key fetches
// depth positions at once after its second hash (at most k-1 and
// MaxDepth; 0 when k is 1). spkis holds at most MaxKeys keys.
func (r *Rounds) Start(spkis [][]byte, mask, k uint64, depth int, base uintptr) {
	*r = Rounds{mask: mask, k: uint32(k), base: base, both: xxh64.Vector()}
	r.depth = min(depth, int(k)-1, MaxDepth)
	if r.both {
		PrefetchFirst(spkis)
	}
}

// group is how many keys the vector hashes take in lockstep, and ahead
// how far before its hashing a key's lines are asked for.
const (
	group = 4
	ahead = 2 * group
)

// HashBlock sets h1[j], h2[j] to both hashes of spkis[i+j] for j < n (h2
// not made odd), a group of keys at a time, asking before each group for
// the lines of the keys ahead of it. Keys hashed in lockstep are read in
// lockstep, which the CPU's own prefetcher does not foresee: out of the
// caches (a large slice of keys, a page just read) every stripe of a
// group would wait for memory, where a loop of single queries reads one
// stream the prefetcher follows. A few keys at a time, the requests stay
// within the CPU's miss buffers and arrive while the keys before them are
// hashed. The caller asks for the first keys' lines (PrefetchFirst).
func HashBlock(spkis [][]byte, i, n int, h1, h2 []uint64) {
	for j := 0; j < n; j += group {
		g := min(group, n-j)
		if a := i + j + ahead; a < len(spkis) {
			prefetchKeys(spkis[a:min(a+group, len(spkis))])
		}
		xxh64.Sum2Batch(spkis[i+j:i+j+g], h1[j:], h2[j:])
	}
}

// PrefetchFirst asks for the lines of the keys HashBlock hashes first.
func PrefetchFirst(spkis [][]byte) { prefetchKeys(spkis[:min(ahead, len(spkis))]) }

// Base returns the address of a slice's data, for Start.
func Base(data []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(data))) }

// Hash hashes a block of new keys, unless the live keys could overflow,
// and returns the positions fetched the round before, whose bits the
// caller must store in Bits before it calls Next.
func (r *Rounds) Hash(spkis [][]byte) []uint64 {
	cur := &r.tests[r.r&1]
	fst := &r.firsts[r.r&1]
	fst.n, fst.next = 0, r.next
	if r.nLive <= LiveKeys {
		fst.n = min(RoundKeys, len(spkis)-r.next)
	}
	run := &r.run
	if fst.n > 0 && run.at == run.n {
		run.n, run.at = min(HashRun, len(spkis)-r.next), 0
		if r.both {
			HashBlock(spkis, r.next, run.n, run.h1[:], run.h2[:])
		} else {
			for j, s := range spkis[r.next : r.next+run.n] {
				run.h1[j] = xxhash.Sum64(s)
			}
		}
	}
	fst.n = min(fst.n, run.n-run.at)
	copy(fst.h1[:fst.n], run.h1[run.at:])
	if r.both {
		copy(fst.h2[:fst.n], run.h2[run.at:])
	}
	run.at += fst.n
	for j, h1 := range fst.h1[:fst.n] {
		cur[j] = h1 & r.mask
	}
	r.nTests[r.r&1] = fst.n
	r.next += fst.n
	prev := (r.r - 1) & 1
	return r.tests[prev][:r.nTests[prev]]
}

// Next tests the bits the caller loaded, fetches the lines of the next
// round and reports whether there is one.
func (r *Rounds) Next(spkis [][]byte, out []bool) bool {
	mask, k, depth := r.mask, r.k, r.depth
	cur := &r.tests[r.r&1]
	nTests := r.nTests[r.r&1]
	bits := r.Bits[:]
	b := 0 // the next bit to test

	// Test the previous block's first bits; a key whose bit is set gets
	// its second hash and its next depth positions.
	snd := &r.seconds[r.r&1]
	snd.n = 0
	prev := &r.firsts[(r.r-1)&1]
	r.Visits += uint64(prev.n)
	for j, h1 := range prev.h1[:prev.n] {
		key := prev.next + j
		set := bits[b] != 0
		b++
		out[key] = set
		if !set || depth == 0 {
			continue
		}
		var h2 uint64
		if r.both {
			h2 = prev.h2[j] | 1
		} else {
			h2 = SeededHash(spkis[key])
		}
		x, y := Step(h1, h2, 0)
		pos := cur[nTests : nTests+depth]
		for i := range pos {
			pos[i] = x & mask
			x, y = Step(x, y, uint64(i+1))
		}
		nTests += depth
		snd.rest[snd.n] = entry{x: x, y: y, i: uint32(depth + 1), key: uint32(key)}
		snd.n++
	}

	// Test the depth bits of the previous round's second hashes; their
	// survivors join the live keys.
	nextLive := &r.lives[(r.r+1)&1]
	n := 0
	done := &r.seconds[(r.r-1)&1]
	for _, e := range done.rest[:done.n] {
		alive, run := uint64(1), uint64(0)
		for _, bit := range bits[b : b+depth] {
			alive &= bit
			run += alive
		}
		b += depth
		r.Visits += run + 1 - alive // run if all were set, else run+1
		out[e.key] = alive != 0
		if e.i == k {
			alive = 0
		}
		nextLive[n] = e
		n += int(alive)
	}

	// Test one bit of each live key.
	live := &r.lives[r.r&1]
	r.Visits += uint64(r.nLive)
	for _, e := range live[:r.nLive] {
		bit := bits[b]
		b++
		out[e.key] = bit != 0
		x, y := Step(e.x, e.y, uint64(e.i))
		if e.i+1 == k {
			bit = 0
		}
		nextLive[n] = entry{x: x, y: y, i: e.i + 1, key: e.key}
		n += int(bit)
	}

	// Fetch the lines of the new block's first positions, of the second
	// hashes' positions and of every live key's next one, in one burst.
	for _, e := range nextLive[:n] {
		cur[nTests] = e.x & mask
		nTests++
	}
	for i, p := range cur[:nTests] {
		r.lines[i] = r.base + uintptr(p>>3)
	}
	if nTests > 0 {
		PrefetchLines(&r.lines[0], nTests)
	}
	r.nTests[r.r&1] = nTests
	r.nLive = n
	fst := &r.firsts[r.r&1]
	r.r++
	return n > 0 || fst.n > 0 || snd.n > 0 || r.next < len(spkis)
}

// Depth returns the number of positions a key fetches after its second
// hash, given the mean visits per key of the batches before, in 16ths:
// half the mean rounded up, at least 1, at most k and MaxDepth (a round
// fetches at most the k-1 positions after the first). It is the best
// depth in BenchmarkBatchDepth at every share of bits set, within its
// noise.
func Depth(mean uint32, k uint64) int {
	d := (uint64(mean) + 31) / 32
	return int(max(1, min(d, k, MaxDepth)))
}

// Mean moves a running mean of visits per key (in 16ths) towards a
// batch's, visits for keys keys, by as much as the batch's size warrants:
// a batch of 256 keys or more replaces it.
func Mean(mean uint32, visits uint64, keys int) uint32 {
	batch := int64(visits * 16 / uint64(keys))
	w := int64(min(keys, 256))
	return uint32(int64(mean) + (batch-int64(mean))*w/256)
}
