package weakkeys

import (
	"math"
	"math/big"
	"math/bits"
)

// Fermat's method writes N = a² - b² = (a-b)(a+b): round k tries
// a = ceil(sqrt N) + k - 1 and succeeds when a² - N is a perfect square,
// quickly when N's primes are close (Böck, "Fermat Factorization in the
// Wild", 2023; BR 6.1.1.3 asks for 100 rounds). One integer square root
// gives a0 = ceil(sqrt N) and R = a0² - N; round j+1 then tests
// R + j(2·a0 + j), whose remainders by small moduli follow from those of
// R and a0 with word arithmetic. A square is a square modulo everything,
// so a candidate that is not a square modulo one of the moduli below is
// no square; the rare candidate that passes them all (about 3 in a
// million non-squares) gets an exact square root.

// fermatFilter is a small modulus and the squares modulo it.
type fermatFilter struct {
	smallMod
	group   int       // index of the word modulus it divides
	squares [2]uint64 // bit x set: x is a square mod p
}

// fermatMods are products of the filters' moduli below 2^32; the filters
// are in the order that rejects non-squares soonest (a larger share of
// non-squares modulo the first). 64 is handled apart, with the low bits.
var fermatMods, fermatFilters = func() ([]wordMod, []fermatFilter) {
	groups := [][]uint32{{63, 65, 11, 17}, {19, 23, 29, 31, 37, 41}, {43, 47, 53, 59, 61}}
	var mods []wordMod
	var filters []fermatFilter
	for g, ms := range groups {
		product := uint64(1)
		for _, m := range ms {
			product *= uint64(m)
			f := fermatFilter{smallMod: newSmallMod(m), group: g}
			for x := range m {
				sq := x * x % m
				f.squares[sq/64] |= 1 << (sq % 64)
			}
			filters = append(filters, f)
		}
		mods = append(mods, newWordMod(product))
	}
	return mods, filters
}()

// fermatSet reduces a0 and R, of at most half a modulus's bits and two.
var fermatSet = newModSet(fermatMods, (maxRSABits/2+2)/bits.UintSize+1)

// squaresMod64 has bit x set when x is a square mod 64.
var squaresMod64 = func() (m uint64) {
	for x := range uint64(64) {
		m |= 1 << (x * x % 64)
	}
	return m
}()

// maxFermatRounds bounds the rounds a Checker may be asked for: its word
// arithmetic holds for up to 2^20 rounds, and more would cost milliseconds.
const maxFermatRounds = 1 << 20

var one = big.NewInt(1)

// fermatRound returns the round in which Fermat's method finds a
// non-trivial factorization of n > 0, or 0 if none of the first rounds
// does. It uses s's numbers as scratch.
func fermatRound(n *big.Int, rounds int, s *scratch) int {
	a, sq := &s.a, &s.sq
	isqrt(a, sq, n, &s.sqrt)
	if sq.Cmp(n) == 0 { // a square: p = q, found in round 1
		if a.Cmp(one) > 0 {
			return 1
		}
		return 0
	}
	// a0 = floor(sqrt n) + 1, R = a0² - n = floor(sqrt n)² + 2·floor(sqrt n) + 1 - n.
	r := &s.r
	r.Lsh(a, 1)
	r.Add(r, sq)
	r.Add(r, one)
	r.Sub(r, n)
	a.Add(a, one)
	var aRem, rRem [3]uint32
	fermatSet.remainders(aRem[:], a.Bits())
	fermatSet.remainders(rRem[:], r.Bits())
	var aF, rF [16]uint32
	for i, f := range fermatFilters {
		aF[i], rF[i] = f.of(aRem[f.group]), f.of(rRem[f.group])
	}
	a64, r64 := uint64(a.Bits()[0])&63, uint64(r.Bits()[0])&63
rounds:
	for j := range uint64(rounds) {
		if squaresMod64>>((r64+j*(2*a64+j))&63)&1 == 0 {
			continue
		}
		for i, f := range fermatFilters {
			jm := f.of(uint32(j))
			t := f.of(rF[i] + jm*(2*aF[i]+jm))
			if f.squares[t/64]>>(t%64)&1 == 0 {
				continue rounds
			}
		}
		if fermatExact(n, a, r, j, s) {
			return int(j) + 1
		}
	}
	return 0
}

// fermatExact reports whether round j+1 (a = a0 + j) factors n:
// whether R + j(2·a0 + j) is a square b² with a - b > 1.
func fermatExact(n, a0, r *big.Int, j uint64, s *scratch) bool {
	c, b, b2 := &s.v, &s.w, &s.q
	c.SetUint64(j)
	b.Lsh(a0, 1)
	b.Add(b, c)
	c.Mul(c, b)
	c.Add(c, r)
	isqrt(b, b2, c, &s.sqrt)
	if b2.Cmp(c) != 0 {
		return false
	}
	c.SetUint64(j)
	c.Add(c, a0)
	c.Sub(c, b) // a - b, the smaller factor
	return c.Cmp(one) > 0
}

// sqrtScratch is isqrt's working numbers.
type sqrtScratch struct{ t, q, r big.Int }

// isqrt sets z to floor(sqrt(n)) and sq to z², for n >= 0; z, sq and n
// are distinct and not in s.
//
// It recurses on the top half of n's bits: with y = floor(sqrt(n >> 2s)),
// x = (y+1)·2^s exceeds sqrt(n) by at most 2^s, and one Newton step
// floor((x + floor(n/x))/2) lands within 2^(2s)/(2x) < 1 of sqrt(n) when
// 4s <= bitlen(n) - 1, never below floor(sqrt(n)): on it or one above,
// which its square tells. So each level costs one division of its size,
// and the whole about two divisions of n by a number of half its size.
func isqrt(z, sq, n *big.Int, s *sqrtScratch) {
	t := &s.t
	var shifts [64]uint
	levels := 0
	total := uint(0)
	for b := n.BitLen(); b > 64; levels++ {
		shift := uint(b-1) / 4
		shifts[levels] = shift
		total += shift
		b -= int(2 * shift)
	}
	t.Rsh(n, 2*total)
	z.SetUint64(isqrt64(t.Uint64()))
	sq.Mul(z, z)
	for l := levels - 1; l >= 0; l-- {
		total -= shifts[l]
		nl := n
		if total > 0 {
			nl = t.Rsh(n, 2*total)
		}
		z.Add(z, one)
		z.Lsh(z, shifts[l])
		s.q.QuoRem(nl, z, &s.r) // Quo would allocate the remainder
		z.Add(z, &s.q)
		z.Rsh(z, 1)
		sq.Mul(z, z)
		if sq.Cmp(nl) > 0 { // (z-1)² = z² - 2z + 1
			sq.Sub(sq, z)
			z.Sub(z, one)
			sq.Sub(sq, z)
		}
	}
}

// isqrt64 returns floor(sqrt(v)).
func isqrt64(v uint64) uint64 {
	r := uint64(math.Sqrt(float64(v)))
	for r > math.MaxUint32 || r*r > v {
		r--
	}
	for r < math.MaxUint32 {
		hi, lo := bits.Mul64(r+1, r+1)
		if hi != 0 || lo > v {
			break
		}
		r++
	}
	return r
}
