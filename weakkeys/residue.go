package weakkeys

import (
	"math/big"
	"math/bits"
)

// The small-prime, ROCA and Fermat tests all need a big number's
// remainders by many small moduli. Dividing by each with math/big costs a
// call and a pass over the number per modulus; instead the number is read
// once, 32 bits at a time, against many moduli of at most 32 bits side by
// side (a Barrett reduction each: two multiplications, no division), and
// the remainder by a product of primes gives the remainders by its primes.

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

// remainders sets out[i] to x mod mods[i], for x >= 0 given by its words
// (big.Int.Bits). It does not allocate.
func remainders(out []uint32, x []big.Word, mods []wordMod) {
	out = out[:len(mods)]
	for i := range out {
		out[i] = 0
	}
	for k := len(x) - 1; k >= 0; k-- {
		w := uint64(x[k])
		if bits.UintSize == 64 {
			hi, lo := w>>32, w&0xffffffff
			for i, m := range mods {
				r := m.reduce(uint64(out[i])<<32 | hi)
				out[i] = uint32(m.reduce(r<<32 | lo))
			}
		} else {
			for i, m := range mods {
				out[i] = uint32(m.reduce(uint64(out[i])<<32 | w))
			}
		}
	}
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
