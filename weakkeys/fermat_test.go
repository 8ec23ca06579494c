package weakkeys

import (
	"crypto/rand"
	"math/big"
	mrand "math/rand"
	"testing"
)

// naiveFermat is Fermat's method as the BR states it, with math/big:
// round k tests a = ceil(sqrt N) + k - 1.
func naiveFermat(n *big.Int, rounds int) int {
	a := new(big.Int).Sqrt(n)
	if new(big.Int).Mul(a, a).Cmp(n) != 0 {
		a.Add(a, one)
	}
	b2, b := new(big.Int), new(big.Int)
	for k := 1; k <= rounds; k++ {
		b2.Mul(a, a)
		b2.Sub(b2, n)
		b.Sqrt(b2)
		if new(big.Int).Mul(b, b).Cmp(b2) == 0 && new(big.Int).Sub(a, b).Cmp(one) > 0 {
			return k
		}
		a.Add(a, one)
	}
	return 0
}

// TestFermatRound compares fermatRound with the naive method on products
// of two close odd numbers (Fermat's method needs no primes), whose rounds
// spread from 1 to past the limits.
func TestFermatRound(t *testing.T) {
	r := mrand.New(mrand.NewSource(4))
	s := new(scratch)
	found := map[bool]int{}
	for i := range 300 {
		p := new(big.Int).Rand(r, new(big.Int).Lsh(one, 1024))
		p.SetBit(p, 1023, 1).SetBit(p, 0, 1)
		// q - p ≈ sqrt(8·p·target) makes the round about target.
		target := int64(1 + r.Intn(1500))
		if i%10 == 0 {
			target = int64(95 + i%11) // around the BR's 100
		}
		d := new(big.Int).Mul(p, big.NewInt(8*target))
		d.Sqrt(d)
		d.SetBit(d, 0, 0)
		d.Add(d, big.NewInt(2*int64(r.Intn(1000))))
		n := new(big.Int).Mul(p, new(big.Int).Add(p, d))
		for _, rounds := range []int{1, 100, 1000} {
			got, want := fermatRound(n, rounds, s), naiveFermat(n, rounds)
			if got != want {
				t.Fatalf("%d rounds of N = %x: round %d, want %d", rounds, n, got, want)
			}
			found[got > 0]++
		}
	}
	if found[true] < 100 || found[false] < 100 {
		t.Fatalf("the moduli were found %d times and missed %d: want many of each", found[true], found[false])
	}
}

func TestFermatSmallNumbers(t *testing.T) {
	s := new(scratch)
	for v := int64(1); v < 5000; v++ {
		n := big.NewInt(v)
		if got, want := fermatRound(n, 100, s), naiveFermat(n, 100); got != want {
			t.Fatalf("N = %d: round %d, want %d", v, got, want)
		}
	}
	// p = q: a square is found in round 1.
	p, _ := rand.Prime(rand.Reader, 1024)
	if got := fermatRound(new(big.Int).Mul(p, p), 100, s); got != 1 {
		t.Fatalf("p²: round %d, want 1", got)
	}
}
