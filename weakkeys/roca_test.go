package weakkeys

import (
	"crypto/rand"
	"math/big"
	mrand "math/rand"
	"testing"
)

// rocaM is the product of the 39 primes to 167.
var rocaM = func() *big.Int {
	m := big.NewInt(1)
	for _, p := range smallPrimes[:rocaPrimes] {
		m.Mul(m, big.NewInt(int64(p)))
	}
	return m
}()

func TestROCAOrder(t *testing.T) {
	l := big.NewInt(1)
	for _, o := range roca.order {
		ob := big.NewInt(int64(o))
		g := new(big.Int).GCD(nil, nil, l, ob)
		l.Mul(l, ob).Quo(l, g)
	}
	// The order the ROCA authors give for 65537 in (Z/M)*.
	if l.String() != "2454106387091158800" {
		t.Fatalf("order of 65537 mod M = %v, want 2454106387091158800", l)
	}
	if e := new(big.Int).Exp(big.NewInt(rocaGenerator), l, rocaM); e.Cmp(one) != 0 {
		t.Fatalf("65537^%v mod M = %v, want 1", l, e)
	}
}

// rocaOracle decides ROCA membership another way: it solves the
// congruences x ≡ log_p(N) (mod ord_p) one after another with math/big,
// then checks 65537^x ≡ N (mod M), the definition. perPrime reports the
// per-prime test alone.
func rocaOracle(n *big.Int) (member, perPrime bool) {
	x, l := big.NewInt(0), big.NewInt(1)
	consistent := true
	for i, p := range smallPrimes[:rocaPrimes] {
		r := new(big.Int).Mod(n, big.NewInt(int64(p))).Int64()
		d := int64(-1)
		g := big.NewInt(rocaGenerator % int64(p))
		for k := range int64(roca.order[i]) {
			if new(big.Int).Exp(g, big.NewInt(k), big.NewInt(int64(p))).Int64() == r {
				d = k
				break
			}
		}
		if d < 0 {
			return false, false
		}
		o := big.NewInt(int64(roca.order[i]))
		gcd := new(big.Int).GCD(nil, nil, l, o)
		diff := new(big.Int).Sub(big.NewInt(d), x)
		if new(big.Int).Mod(diff, gcd).Sign() != 0 {
			consistent = false
			continue
		}
		if !consistent {
			continue
		}
		// x += l · ((d-x)/gcd · (l/gcd)^-1 mod o/gcd)
		og := new(big.Int).Quo(o, gcd)
		inv := new(big.Int).ModInverse(new(big.Int).Quo(l, gcd).Mod(new(big.Int).Quo(l, gcd), og), og)
		if og.Cmp(one) == 0 {
			inv = big.NewInt(0)
		}
		t := new(big.Int).Quo(diff, gcd)
		t.Mul(t, inv).Mod(t, og)
		x.Add(x, new(big.Int).Mul(l, t))
		l.Mul(l, og)
		x.Mod(x, l)
	}
	if !consistent {
		return false, true
	}
	return new(big.Int).Exp(big.NewInt(rocaGenerator), x, rocaM).Cmp(new(big.Int).Mod(n, rocaM)) == 0, true
}

// rocaOf runs the checker's test on n.
func rocaOf(n *big.Int) bool {
	rem := make([]uint32, rocaPrimes)
	for i, p := range smallPrimes[:rocaPrimes] {
		rem[i] = uint32(new(big.Int).Mod(n, big.NewInt(int64(p))).Uint64())
	}
	return isROCA(rem)
}

// rocaPrime returns a prime of the form k·M + (65537^a mod M), as
// Infineon's library made them for keys of 512 to 960 bits.
func rocaPrime(t testing.TB, r *mrand.Rand, bits int) *big.Int {
	for {
		k := new(big.Int).Rand(r, new(big.Int).Lsh(one, uint(bits-rocaM.BitLen())))
		a := big.NewInt(r.Int63n(2454106387091158800))
		p := new(big.Int).Exp(big.NewInt(rocaGenerator), a, rocaM)
		p.Add(p, k.Mul(k, rocaM))
		if p.BitLen() == bits && p.ProbablyPrime(20) {
			return p
		}
	}
}

// fakeROCA returns a modulus of the given size that passes the per-prime
// test and fails the full one: each N mod p a power of 65537, combined by
// the Chinese remainder theorem from logarithms that disagree.
func fakeROCA(t testing.TB, r *mrand.Rand, bits int) *big.Int {
	for {
		n := big.NewInt(0)
		for i, p := range smallPrimes[:rocaPrimes] {
			pb := big.NewInt(int64(p))
			d := big.NewInt(r.Int63n(int64(roca.order[i])))
			res := new(big.Int).Exp(big.NewInt(rocaGenerator), d, pb)
			// n += res · (M/p) · ((M/p)^-1 mod p)
			mp := new(big.Int).Quo(rocaM, pb)
			c := new(big.Int).ModInverse(new(big.Int).Mod(mp, pb), pb)
			n.Add(n, res.Mul(res, mp).Mul(res, c))
		}
		n.Mod(n, rocaM)
		k := new(big.Int).Rand(r, new(big.Int).Lsh(one, uint(bits-rocaM.BitLen())))
		n.Add(n, k.Mul(k, rocaM))
		if n.BitLen() != bits {
			continue
		}
		if member, perPrime := rocaOracle(n); perPrime && !member {
			return n
		}
	}
}

// TestROCAFakeModuli: moduli that pass the per-prime test but are not in
// the subgroup, as the ROCA authors' test_fake_mods, generated here; the
// checker must not call them ROCA.
func TestROCAFakeModuli(t *testing.T) {
	r := mrand.New(mrand.NewSource(5))
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		n := fakeROCA(t, r, 1023+i%2)
		if rocaOf(n) {
			t.Fatalf("fake modulus %x (per-prime test passes, not in the subgroup) called ROCA", n)
		}
		res, err := c.CheckModulus(n.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if hasRule(res, RuleROCA) {
			t.Fatalf("CheckModulus(fake %x) = %v, want no ROCA finding", n, res.Findings)
		}
	}
}

// TestROCAPositives: moduli of primes made as Infineon's library made
// them are ROCA, as are products of random subgroup members.
func TestROCAPositives(t *testing.T) {
	r := mrand.New(mrand.NewSource(6))
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		n := new(big.Int).Mul(rocaPrime(t, r, 256), rocaPrime(t, r, 256))
		if member, _ := rocaOracle(n); !member {
			t.Fatalf("oracle: %x is not in the subgroup", n)
		}
		res, err := c.CheckModulus(n.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if !hasRule(res, RuleROCA) {
			t.Fatalf("CheckModulus(ROCA modulus %x) = %v, want a ROCA finding", n, res.Findings)
		}
	}
}

// TestROCAAgreesWithOracle compares the test with the oracle on random
// numbers, on subgroup members and on fakes.
func TestROCAAgreesWithOracle(t *testing.T) {
	r := mrand.New(mrand.NewSource(7))
	for i := range 600 {
		var n *big.Int
		switch i % 3 {
		case 0:
			n = new(big.Int).Rand(r, new(big.Int).Lsh(one, 2048))
		case 1:
			n = new(big.Int).Exp(big.NewInt(rocaGenerator), big.NewInt(r.Int63()), rocaM)
			n.Add(n, new(big.Int).Mul(rocaM, big.NewInt(r.Int63())))
		default:
			n = fakeROCA(t, r, 1024)
		}
		if member, _ := rocaOracle(n); rocaOf(n) != member {
			t.Fatalf("ROCA test of %x = %v, oracle says %v", n, !member, member)
		}
	}
	// A random prime is no member.
	p, _ := rand.Prime(rand.Reader, 512)
	if member, _ := rocaOracle(p); rocaOf(p) != member {
		t.Fatalf("prime %x: test and oracle disagree", p)
	}
}

func hasRule(r Result, rule Rule) bool {
	for _, f := range r.Findings {
		if f.Rule == rule {
			return true
		}
	}
	return false
}
