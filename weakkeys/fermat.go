package weakkeys

import (
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
	a, r := &s.a, &s.r
	sqrtRem(a, r, n, &s.sqrt)
	if r.Sign() == 0 { // a square: p = q, found in round 1
		if a.Cmp(one) > 0 {
			return 1
		}
		return 0
	}
	// a0 = floor(sqrt n) + 1, R = a0² - n = 2·floor(sqrt n) + 1 - (n - floor(sqrt n)²).
	r.Sub(one, r)
	r.Add(r, a)
	r.Add(r, a)
	a.Add(a, one)
	var aRem, rRem [3]uint64
	fermatSet.remainders(aRem[:], a.Bits())
	fermatSet.remainders(rRem[:], r.Bits())
	var aF, rF [16]uint32
	for i, f := range fermatFilters {
		aF[i], rF[i] = f.of(uint32(aRem[f.group])), f.of(uint32(rRem[f.group])) // below 2^32
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
	c, b, rem := &s.v, &s.w, &s.q
	c.SetUint64(j)
	b.Lsh(a0, 1)
	b.Add(b, c)
	c.Mul(c, b)
	c.Add(c, r)
	sqrtRem(b, rem, c, &s.sqrt)
	if rem.Sign() != 0 {
		return false
	}
	c.SetUint64(j)
	c.Add(c, a0)
	c.Sub(c, b) // a - b, the smaller factor
	return c.Cmp(one) > 0
}
