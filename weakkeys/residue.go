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

// wordMod is a modulus m with 1 < m < 2^32 and its Barrett constant.
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

// modSet is moduli below 2^32 and, for each, the powers of the word base
// modulo it, for numbers of up to len(powers[i]) words.
type modSet struct {
	mods   []wordMod
	two64  []uint64   // 2^64 mod m
	powers [][]uint64 // powers[i][j] = 2^(j·bits.UintSize) mod mods[i].m
}

func newModSet(mods []wordMod, maxWords int) *modSet {
	s := &modSet{mods: mods, two64: make([]uint64, len(mods)), powers: make([][]uint64, len(mods))}
	for i, m := range mods {
		_, s.two64[i] = bits.Div64(1%m.m, 0, m.m)
		half := uint(bits.UintSize / 2)
		p := uint64(1) % m.m
		for range maxWords {
			s.powers[i] = append(s.powers[i], p)
			p = (p << half % m.m) << half % m.m // p·2^UintSize mod m
		}
	}
	return s
}

// remainders sets out[i] to x mod s.mods[i], for x >= 0 given by its
// words (big.Int.Bits). It does not allocate.
func (s *modSet) remainders(out []uint32, x []big.Word) {
	out = out[:len(s.mods)]
	for i, m := range s.mods {
		pw := s.powers[i]
		if len(x) > len(pw) {
			out[i] = uint32(hornerRemainder(x, m))
			continue
		}
		pw = pw[:len(x)]
		// Each product is below 2^(bits.UintSize+32): the sum of a few
		// hundred fits in 128 bits.
		var hi, lo, carry uint64
		for j, w := range x {
			h, l := bits.Mul64(uint64(w), pw[j])
			lo, carry = bits.Add64(lo, l, 0)
			hi += h + carry
		}
		r := m.reduce(m.reduce(hi)*s.two64[i]) + m.reduce(lo)
		if r >= m.m {
			r -= m.m
		}
		out[i] = uint32(r)
	}
}

// hornerRemainder returns x mod m, reading x 32 bits at a time.
func hornerRemainder(x []big.Word, m wordMod) uint64 {
	var r uint64
	for k := len(x) - 1; k >= 0; k-- {
		w := uint64(x[k])
		if bits.UintSize == 64 {
			r = m.reduce(r<<32 | w>>32)
			r = m.reduce(r<<32 | w&0xffffffff)
		} else {
			r = m.reduce(r<<32 | w)
		}
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

// primeGroups packs primes, in order, into products below 2^32 and
// returns those products as moduli, with the index of each prime's group.
func primeGroups(primes []uint32) (mods []wordMod, group []int) {
	product := uint64(1)
	for _, p := range primes {
		if product*uint64(p) >= 1<<32 {
			mods = append(mods, newWordMod(product))
			product = 1
		}
		product *= uint64(p)
		group = append(group, len(mods))
	}
	return append(mods, newWordMod(product)), group
}
