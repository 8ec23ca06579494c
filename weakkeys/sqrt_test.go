package weakkeys

import (
	"math/big"
	"math/bits"
	mrand "math/rand"
	"testing"
)

// TestSqrtRem compares sqrtRem with math/big's Sqrt on numbers of every
// size to 16384 bits (so every number of levels, each level's split), and
// for roots a of every size to 1100 bits and those just below and above
// a multiple of the word size, on a², a²-1 and a²+1 (the remainder's
// largest value 2a, zero, and 1), powers of two and all-ones.
func TestSqrtRem(t *testing.T) {
	r := mrand.New(mrand.NewSource(3))
	var z, rem big.Int
	var s sqrtScratch
	check := func(n *big.Int) {
		t.Helper()
		sqrtRem(&z, &rem, n, &s)
		want := new(big.Int).Sqrt(n)
		wantRem := new(big.Int).Sub(n, new(big.Int).Mul(want, want))
		if z.Cmp(want) != 0 || rem.Cmp(wantRem) != 0 {
			t.Fatalf("sqrtRem(%x) = %x, %x; want %x, %x", n, &z, &rem, want, wantRem)
		}
	}
	for _, v := range []int64{0, 1, 2, 3, 4, 5, 8, 9, 15, 16, 17, 1 << 62, 1<<63 - 1} {
		check(big.NewInt(v))
	}
	square := func(a *big.Int) {
		t.Helper()
		a2 := new(big.Int).Mul(a, a)
		check(a2)
		check(new(big.Int).Add(a2, one))
		if a2.Sign() > 0 {
			check(new(big.Int).Sub(a2, one))
		}
	}
	for b := 1; b <= 16384; b += 1 + b/64 {
		limit := new(big.Int).Lsh(one, uint(b))
		check(new(big.Int).Sub(limit, one)) // all ones
		check(new(big.Int).Rsh(limit, 1))   // a power of two
		check(new(big.Int).Rand(r, limit))
		square(new(big.Int).Rand(r, new(big.Int).Lsh(one, uint(b/2+1))))
	}
	for b := 1; b <= 1100; b++ {
		limit := new(big.Int).Lsh(one, uint(b))
		a := new(big.Int).Rand(r, limit)
		square(a.SetBit(a, b-1, 1))
		square(new(big.Int).Sub(limit, one))
	}
}

// TestSqrtRemWordEdges: the word-level root on numbers of 1 to 40 words,
// at the edges the words make: all ones (the candidate root then one word
// longer than the root, before its correction), a top word of exactly
// 2^62 and 2^63, the squares of 2^(32w)-1, 2^(32w) and 2^(32w)+1 and their
// neighbours, and the largest remainder a root has, 2a.
func TestSqrtRemWordEdges(t *testing.T) {
	var z, rem big.Int
	var s sqrtScratch
	check := func(n *big.Int) {
		t.Helper()
		sqrtRem(&z, &rem, n, &s)
		want := new(big.Int).Sqrt(n)
		wantRem := new(big.Int).Sub(n, new(big.Int).Mul(want, want))
		if z.Cmp(want) != 0 || rem.Cmp(wantRem) != 0 {
			t.Fatalf("sqrtRem(%x) = %x, %x; want %x, %x", n, &z, &rem, want, wantRem)
		}
	}
	r := mrand.New(mrand.NewSource(22))
	for w := uint(1); w <= 40; w++ {
		pow := func(e uint) *big.Int { return new(big.Int).Lsh(one, e) }
		check(new(big.Int).Sub(pow(64*w), one))
		check(pow(64*w - 1))
		check(pow(64*w - 2))
		check(new(big.Int).Add(pow(64*w-2), big.NewInt(int64(r.Intn(1000)))))
		for _, a := range []*big.Int{new(big.Int).Sub(pow(32*w), one), pow(32 * w), new(big.Int).Add(pow(32*w), one)} {
			a2 := new(big.Int).Mul(a, a)
			check(a2)
			check(new(big.Int).Sub(a2, one))
			check(new(big.Int).Add(a2, one))
			check(new(big.Int).Add(a2, new(big.Int).Lsh(a, 1))) // remainder 2a
		}
	}
}

// TestSqrtRem128 compares the two-word root with math/big's on the
// numbers it takes (a top word of 2^62 or more) at their edges and at
// random.
func TestSqrtRem128(t *testing.T) {
	r := mrand.New(mrand.NewSource(23))
	edges := []uint64{0, 1, 1<<32 - 1, 1 << 32, 1<<62 - 1, 1 << 62, 1<<63 - 1, 1 << 63, 1<<64 - 2, 1<<64 - 1}
	check := func(hi, lo uint64) {
		t.Helper()
		n := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
		n.Or(n, new(big.Int).SetUint64(lo))
		want := new(big.Int).Sqrt(n)
		wantRem := new(big.Int).Sub(n, new(big.Int).Mul(want, want))
		s, rl, rh := sqrtRem128(hi, lo)
		gotRem := new(big.Int).Lsh(new(big.Int).SetUint64(rh), 64)
		gotRem.Or(gotRem, new(big.Int).SetUint64(rl))
		if new(big.Int).SetUint64(s).Cmp(want) != 0 || gotRem.Cmp(wantRem) != 0 {
			t.Fatalf("sqrtRem128(%#x, %#x) = %#x, %x; want %x, %x", hi, lo, s, gotRem, want, wantRem)
		}
	}
	for _, hi := range edges {
		for _, lo := range edges {
			if hi >= 1<<62 {
				check(hi, lo)
			}
		}
	}
	for range 100000 {
		hi := r.Uint64() | 1<<62
		check(hi, r.Uint64())
		a := r.Uint64() | 1<<63 // a² and its neighbours
		hi, lo := bits.Mul64(a, a)
		check(hi, lo)
		if lo > 0 {
			check(hi, lo-1)
		}
		if lo < 1<<64-1 {
			check(hi, lo+1)
		}
	}
}

// TestDivRemWords compares the word-level division with math/big's on
// divisors of 1 to 12 words whose words are often at their edges (0, 1,
// 2^63, 2^64-1, ...), where the quotient's estimate is too large and the
// divisor is added back, or the top words are equal; and on Hacker's
// Delight's case of an add-back, in 64-bit words.
func TestDivRemWords(t *testing.T) {
	r := mrand.New(mrand.NewSource(24))
	edge := []uint64{0, 1, 2, 1<<63 - 1, 1 << 63, 1<<63 + 1, 1<<64 - 2, 1<<64 - 1}
	word := func() uint64 {
		if r.Intn(2) == 0 {
			return edge[r.Intn(len(edge))]
		}
		return r.Uint64()
	}
	toInt := func(x []uint64) *big.Int {
		var z big.Int
		setUint64s(&z, x)
		return &z
	}
	check := func(u, v []uint64) {
		t.Helper()
		uu, vv := toInt(u), toInt(v)
		wantQ, wantR := new(big.Int).QuoRem(uu, vv, new(big.Int))
		q := make([]uint64, len(u)-len(v))
		divRemWords(q, u, v)
		if toInt(q).Cmp(wantQ) != 0 || toInt(u[:len(v)]).Cmp(wantR) != 0 {
			t.Fatalf("%x / %x = %x rem %x, want %x rem %x", uu, vv, toInt(q), toInt(u[:len(v)]), wantQ, wantR)
		}
	}
	check([]uint64{0, 0, 1 << 63, 1<<63 - 1}, []uint64{1, 0, 1 << 63})
	for range 200000 {
		h := 1 + r.Intn(12)
		v := make([]uint64, h)
		for i := range v {
			v[i] = word()
		}
		v[h-1] |= 1 << 63
		u := make([]uint64, h+1+r.Intn(10))
		for i := range u {
			u[i] = word()
		}
		u[len(u)-1] = min(u[len(u)-1], v[h-1]-1) // below v's top word
		if r.Intn(4) == 0 {
			u[len(u)-1] = v[h-1] - 1
			copy(u[len(u)-h:len(u)-1], v[:h-1])
		}
		check(u, v)
	}
}
