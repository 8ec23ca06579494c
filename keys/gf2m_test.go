package keys

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// The field arithmetic, on an odd and an even degree (sect163k1's
// pentanomial, c2pnb176v1's), against its own definitions: a·a⁻¹ = 1,
// sqr = mul by itself, and z² + z = β for the solver's z whenever β is
// of the form w² + w, and a refusal for half of the other elements.
func TestGF2m(t *testing.T) {
	for _, tc := range []struct{ m, k1, k2, k3 int }{{163, 3, 6, 7}, {176, 1, 2, 43}} {
		f := new(big.Int).SetBit(new(big.Int), tc.m, 1)
		for _, k := range []int{0, tc.k1, tc.k2, tc.k3} {
			f.SetBit(f, k, 1)
		}
		F := &gf2m{m: tc.m, f: f}
		r := rand.New(rand.NewPCG(uint64(tc.m), 1))
		random := func() *big.Int {
			v := new(big.Int)
			for i := range tc.m {
				if r.IntN(2) == 1 {
					v.SetBit(v, i, 1)
				}
			}
			return v
		}
		refused := 0
		for range 50 {
			a := random()
			if a.Sign() == 0 {
				continue
			}
			if p := F.mul(a, F.inv(a)); p.Cmp(big.NewInt(1)) != 0 {
				t.Fatalf("m %d: a·a⁻¹ = %x", tc.m, p)
			}
			if F.sqr(a).Cmp(F.mul(a, a)) != 0 {
				t.Fatalf("m %d: sqr(a) != a·a", tc.m)
			}
			beta := F.sqr(a)
			beta.Xor(beta, a)
			z, ok := F.solveQuadratic(beta)
			if !ok || (z.Cmp(a) != 0 && new(big.Int).Xor(z, a).Cmp(big.NewInt(1)) != 0) {
				t.Fatalf("m %d: z² + z = β gives %x, %v; want a or a+1", tc.m, z, ok)
			}
			if _, ok := F.solveQuadratic(random()); !ok {
				refused++
			}
		}
		if refused < 10 || refused > 40 {
			t.Errorf("m %d: %d of 50 random β refused, want about half (those of trace 1)", tc.m, refused)
		}
		if F.inv(new(big.Int)) != nil {
			t.Errorf("m %d: 0 has an inverse", tc.m)
		}
	}
}
