package weakkeys

import (
	"math/big"
	"math/bits"
)

// The small-prime, ROCA and Fermat tests all need a big number's
// remainders by many small moduli. Dividing by each with math/big costs a
// call and a pass over the number per modulus; instead each remainder is
// a sum of the number's words times the powers of the word base modulo
// the modulus, independent multiplications the CPU overlaps, and a
// remainder by a product of primes gives the remainders by its primes.
// Products of up to 56 bits make few of them, so few passes over the
// number: the sum of 256 products of a 64-bit word and a power below 2^56
// fits in 128 bits.

// maxModSetBits bounds the moduli of a modSet and maxModSetWords the
// numbers it sums the words of, 16384 bits: 256·2^maxModSetBits <= 2^64.
const (
	maxModSetBits  = 56
	maxModSetWords = 16384 / bits.UintSize
)

// wordMod is a modulus m with 1 < m < 2^63 and its Barrett constant.
type wordMod struct {
	m  uint64
	mu uint64 // floor(2^64 / m)
}

func newWordMod(m uint64) wordMod {
	mu, _ := bits.Div64(1, 0, m)
	return wordMod{m: m, mu: mu}
}

// reduce returns x mod w.m, for any x.
func (w wordMod) reduce(x uint64) uint64 {
	// q is floor(x/m) or one less: x·mu/2^64 > x/m - x/2^64 > x/m - 1.
	q, _ := bits.Mul64(x, w.mu)
	r := x - q*w.m
	if r >= w.m {
		r -= w.m
	}
	return r
}

// modSet is moduli of at most maxModSetBits bits and, for each, the
// powers of the word base modulo it, for numbers of up to len(powers[i])
// words.
type modSet struct {
	mods   []wordMod
	powers [][]uint64 // powers[i][j] = 2^(j·bits.UintSize) mod mods[i].m
}

// newModSet returns the set of mods, for numbers of up to maxWords words
// (at most maxModSetWords).
func newModSet(mods []wordMod, maxWords int) *modSet {
	s := &modSet{mods: mods, powers: make([][]uint64, len(mods))}
	for i, m := range mods {
		if m.m > 1<<maxModSetBits || maxWords > maxModSetWords {
			panic("weakkeys: modSet out of its bounds")
		}
		p := uint64(1) % m.m
		for range maxWords {
			s.powers[i] = append(s.powers[i], p)
			p = shiftWord(p, m) // p·2^UintSize mod m
		}
	}
	return s
}

// shiftWord returns r·2^bits.UintSize mod m, for r < m.
func shiftWord(r uint64, m wordMod) uint64 {
	return remainder(r, 0, m)
}

// remainder returns (r·2^bits.UintSize + w) mod m, for r < m and w below
// 2^bits.UintSize.
func remainder(r, w uint64, m wordMod) (rem uint64) {
	if bits.UintSize == 64 {
		_, rem = bits.Div64(r, w, m.m)
	} else {
		_, rem = bits.Div64(r>>32, r<<32|w, m.m)
	}
	return rem
}

// remainders sets out[i] to x mod s.mods[i], for x >= 0 given by its
// words (big.Int.Bits). It does not allocate.
func (s *modSet) remainders(out []uint64, x []big.Word) {
	out = out[:len(s.mods)]
	for i, m := range s.mods {
		pw := s.powers[i]
		if len(x) > len(pw) {
			out[i] = hornerRemainder(x, m)
			continue
		}
		pw = pw[:len(x)]
		// Each product's high word is at most m-2: the sum's, with the
		// carries, below 256·m <= 2^64 (with 32-bit words, far below).
		var hi, lo, carry uint64
		for j, w := range x {
			h, l := bits.Mul64(uint64(w), pw[j])
			lo, carry = bits.Add64(lo, l, 0)
			hi += h + carry
		}
		_, out[i] = bits.Div64(m.reduce(hi), lo, m.m)
	}
}

// hornerRemainder returns x mod m, a word at a time from the top.
func hornerRemainder(x []big.Word, m wordMod) uint64 {
	var r uint64
	for k := len(x) - 1; k >= 0; k-- {
		r = remainder(r, uint64(x[k]), m)
	}
	return r
}

// smallMod is a modulus below 2^16 with the constant of Lemire's
// remainder by multiplication (Lemire, Kaser, Kurz, "Faster remainder by
// direct computation", 2019): exact for any 32-bit dividend.
type smallMod struct {
	p uint32
	c uint64 // ceil(2^64 / p)
}

func newSmallMod(p uint32) smallMod {
	return smallMod{p: p, c: ^uint64(0)/uint64(p) + 1}
}

// of returns x mod s.p.
func (s smallMod) of(x uint32) uint32 {
	hi, _ := bits.Mul64(s.c*uint64(x), uint64(s.p))
	return uint32(hi)
}

// primesBelow returns the primes below n, by a sieve.
func primesBelow(n int) []uint32 {
	composite := make([]bool, n)
	var out []uint32
	for i := 2; i < n; i++ {
		if composite[i] {
			continue
		}
		out = append(out, uint32(i))
		for j := i * i; j < n; j += i {
			composite[j] = true
		}
	}
	return out
}

// primeGroups packs primes, in order, into products below 2^maxModSetBits
// and returns those products as moduli, with the index of each prime's
// group.
func primeGroups(primes []uint32) (mods []wordMod, group []int) {
	product := uint64(1)
	for _, p := range primes {
		if hi, lo := bits.Mul64(product, uint64(p)); hi != 0 || lo >= 1<<maxModSetBits {
			mods = append(mods, newWordMod(product))
			product = 1
		}
		product *= uint64(p)
		group = append(group, len(mods))
	}
	return append(mods, newWordMod(product)), group
}
