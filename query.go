package pkbf

import "github.com/cespare/xxhash/v2"

// hashes returns the two base hashes of a key: h1 = XXH64(spki, seed 0) and
// h2 = XXH64(spki, seed 1), made odd.
func hashes(spki []byte) (h1, h2 uint64) {
	var d xxhash.Digest
	d.ResetWithSeed(1)
	d.Write(spki)
	return xxhash.Sum64(spki), d.Sum64() | 1
}

// Positions appends to dst the k bit positions of spki in a filter with
// 2^hashLength bits, in probe order, and returns the extended slice:
// f_i = (h1 + i·h2 + (i³-i)/6) mod 2^L for i = 0..k-1. It is the
// definition behind [Filter.Probably], for tools and tests that inspect a
// filter bit by bit. Bit p is data byte p/8 under mask 0x80>>(p%8).
func Positions(dst []uint64, spki []byte, hashCount, hashLength uint8) []uint64 {
	h1, h2 := hashes(spki)
	mask := uint64(1)<<hashLength - 1
	if hashLength >= 64 {
		mask = ^uint64(0)
	}
	p := newProbe(h1, h2)
	for range hashCount {
		dst = append(dst, p.next()&mask)
	}
	return dst
}

// probe walks the positions of one key. The differences between
// consecutive f_i are h2 + i(i+1)/2, so each step costs two additions: this
// is the enhanced double hashing of Dillinger and Manolios. All arithmetic
// wraps mod 2^64, which is exact before the reduction mod 2^L.
type probe struct{ x, y, i uint64 }

func newProbe(h1, h2 uint64) probe { return probe{x: h1, y: h2} }

// next returns the next position, not yet reduced mod m.
func (p *probe) next() uint64 {
	f := p.x
	p.i++
	p.x += p.y
	p.y += p.i
	return f
}

// Probably reports whether spki, a DER SubjectPublicKeyInfo, is probably in
// the filter. False is definite: the key was never added. True means the key
// was added or is a false positive; confirm it online.
//
// Probably does not allocate and is safe for concurrent use.
func (f *Filter) Probably(spki []byte) bool {
	h1, h2 := hashes(spki)
	return f.probablyHashes(h1, h2)
}

// batchSize is how many positions a batched query computes before loading.
const batchSize = 16

func (f *Filter) probablyHashes(h1, h2 uint64) bool {
	data, mask := f.data, f.mask
	if data == nil {
		panic("pkbf: query on a closed Filter")
	}
	p := newProbe(h1, h2)
	if !f.batched {
		// In cache: stop at the first clear bit.
		for range f.k {
			pos := p.next() & mask
			if data[pos>>3]&(0x80>>(pos&7)) == 0 {
				return false
			}
		}
		return true
	}
	// Out of cache: compute a batch of positions, then load them all with
	// no branch between the loads, so the cache misses overlap.
	var pos [batchSize]uint64
	for left := f.k; left > 0; {
		n := min(left, batchSize)
		left -= n
		for j := range n {
			pos[j] = p.next() & mask
		}
		var clear byte
		for _, q := range pos[:n] {
			clear |= ^data[q>>3] & (0x80 >> (q & 7))
		}
		if clear != 0 {
			return false
		}
	}
	return true
}
