package weakkeys

import (
	"math/big"
	"math/bits"
	"math/rand"
	"testing"
)

func TestSmallPrimes(t *testing.T) {
	if len(smallPrimes) != 133 || smallPrimes[0] != 2 || smallPrimes[132] != 751 {
		t.Fatalf("%d primes from %d to %d, want the 133 primes from 2 to 751", len(smallPrimes), smallPrimes[0], smallPrimes[len(smallPrimes)-1])
	}
	for _, p := range smallPrimes {
		if !big.NewInt(int64(p)).ProbablyPrime(10) {
			t.Errorf("%d is not prime", p)
		}
	}
	if len(smallPrimes) != len(scratch{}.primeRem) {
		t.Fatalf("scratch holds %d remainders, want %d", len(scratch{}.primeRem), len(smallPrimes))
	}
	for _, m := range smallPrimeMods {
		if m.m >= 1<<maxModSetBits {
			t.Fatalf("group modulus %d is not below 2^%d", m.m, maxModSetBits)
		}
	}
	if len(smallPrimeMods) > len(scratch{}.groupRem) {
		t.Fatalf("%d groups, the scratch holds %d", len(smallPrimeMods), len(scratch{}.groupRem))
	}
	if smallPrimes[rocaPrimes-1] != 167 {
		t.Fatalf("the %dth prime is %d, want 167", rocaPrimes, smallPrimes[rocaPrimes-1])
	}
}

// TestRemainders compares the word-wise remainders with math/big's, on
// numbers of every size up to 16384 bits and at the moduli's edges: the
// largest modulus a set takes (2^56) and the largest number it sums
// (256 words of all ones), the sum's worst case.
func TestRemainders(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	mods := []wordMod{newWordMod(2), newWordMod(3), newWordMod(1<<32 - 1), newWordMod(1<<32 - 5), newWordMod(1<<32 + 15),
		newWordMod(1<<maxModSetBits - 5), newWordMod(1 << maxModSetBits)}
	mods = append(append(mods, smallPrimeMods...), fermatMods...)
	out := make([]uint64, len(mods))
	// Powers for numbers of up to 8000 bits (longer ones take the other
	// way, word by word), and for the most words a set takes.
	for _, set := range []*modSet{newModSet(mods, 8000/bits.UintSize), newModSet(mods, maxModSetWords)} {
		check := func(x *big.Int) {
			t.Helper()
			set.remainders(out, x.Bits())
			for j, m := range mods {
				want := new(big.Int).Mod(x, new(big.Int).SetUint64(m.m)).Uint64()
				if out[j] != want {
					t.Fatalf("%x mod %d = %d, want %d", x, m.m, out[j], want)
				}
			}
		}
		for i := range 2000 {
			bitLen := i * 8 % 16400
			x := new(big.Int).Rand(r, new(big.Int).Lsh(big.NewInt(1), uint(bitLen)))
			if i%7 == 0 { // all ones
				x.Sub(new(big.Int).Lsh(big.NewInt(1), uint(bitLen)), big.NewInt(1))
			}
			check(x)
		}
		check(new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), maxModSetWords*bits.UintSize), big.NewInt(1)))
	}
}

// TestModSetBounds: a set refuses moduli and lengths past the bounds its
// sums hold for.
func TestModSetBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mod   uint64
		words int
	}{
		{"modulus 2^56 + 1", 1<<maxModSetBits + 1, 1},
		{"a word more than 16384 bits", 3, maxModSetWords + 1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			newModSet([]wordMod{newWordMod(tc.mod)}, tc.words)
		}()
	}
}

func TestSmallMod(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, p := range []uint32{2, 3, 63, 64, 65, 751, 65535} {
		m := newSmallMod(p)
		for _, x := range []uint32{0, 1, p - 1, p, p + 1, 1<<32 - 1, 1<<32 - 2} {
			if got := m.of(x); got != x%p {
				t.Fatalf("%d mod %d = %d, want %d", x, p, got, x%p)
			}
		}
		for range 10000 {
			x := r.Uint32()
			if got := m.of(x); got != x%p {
				t.Fatalf("%d mod %d = %d, want %d", x, p, got, x%p)
			}
		}
	}
}
