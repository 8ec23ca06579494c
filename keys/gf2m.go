package keys

import (
	"math/big"
	"math/bits"
	"sync"
)

// gf2m is the field GF(2^m) of an elliptic curve over a field of
// characteristic two (X9.62, SEC 1 section 2.2.2), in polynomial basis:
// an element is a polynomial over GF(2) of degree below m, held as the
// bits of a big.Int, and products are reduced modulo f, the field's
// irreducible trinomial or pentanomial. Speed hardly matters here: pkbf
// computes on these curves only to convert a key between point forms and
// parameter encodings.
type gf2m struct {
	m int
	f *big.Int // the reduction polynomial, of degree m

	solverOnce sync.Once
	solver     *quadSolver
}

// reduce reduces a modulo f, in place, and returns it.
func (F *gf2m) reduce(a *big.Int) *big.Int {
	var t big.Int
	for a.BitLen() > F.m {
		a.Xor(a, t.Lsh(F.f, uint(a.BitLen()-1-F.m)))
	}
	return a
}

// mul returns a·b in the field.
func (F *gf2m) mul(a, b *big.Int) *big.Int {
	r := new(big.Int)
	var t big.Int
	for i := b.BitLen() - 1; i >= 0; i-- {
		if b.Bit(i) == 1 {
			r.Xor(r, t.Lsh(a, uint(i)))
		}
	}
	return F.reduce(r)
}

// sqr returns a² in the field: squaring a polynomial over GF(2) spreads
// its bits apart.
func (F *gf2m) sqr(a *big.Int) *big.Int {
	in := a.Bytes()
	out := make([]byte, 2*len(in))
	for i, c := range in {
		s := spread(c)
		out[2*i], out[2*i+1] = byte(s>>8), byte(s)
	}
	return F.reduce(new(big.Int).SetBytes(out))
}

// spread puts a zero bit between the bits of c.
func spread(c byte) uint16 {
	var s uint16
	for i := range 8 {
		s |= uint16(c>>i&1) << (2 * i)
	}
	return s
}

// inv returns 1/a in the field, by the extended Euclidean algorithm over
// GF(2)[x], or nil if a is zero (or f, given by untrusted parameters, is
// not irreducible and a shares a factor with it).
func (F *gf2m) inv(a *big.Int) *big.Int {
	u, v := new(big.Int).Set(a), new(big.Int).Set(F.f)
	g1, g2 := big.NewInt(1), new(big.Int)
	var t big.Int
	for u.BitLen() > 1 {
		j := u.BitLen() - v.BitLen()
		if j < 0 {
			u, v, g1, g2, j = v, u, g2, g1, -j
		}
		u.Xor(u, t.Lsh(v, uint(j)))
		g1.Xor(g1, t.Lsh(g2, uint(j)))
	}
	if u.Sign() == 0 {
		return nil
	}
	return F.reduce(g1)
}

// solveQuadratic returns a z with z² + z = beta, or false if there is
// none. The other solution is z + 1.
func (F *gf2m) solveQuadratic(beta *big.Int) (*big.Int, bool) {
	F.solverOnce.Do(func() { F.solver = newQuadSolver(F) })
	z, ok := F.solver.solve(beta)
	if !ok {
		return nil, false
	}
	// The solver is linear algebra on the map z -> z² + z; check its answer.
	check := F.sqr(z)
	return z, check.Xor(check, z).Cmp(beta) == 0
}

// quadSolver solves z² + z = beta for any m, odd or even: z -> z² + z is
// linear over GF(2), with kernel {0, 1}, so Gauss-Jordan elimination on
// its matrix, done once per field, gives for each pivot row the
// combination of beta's bits that is the pivot's bit of z.
type quadSolver struct {
	pivots []int      // the bit of z that row k of combos gives
	combos []*big.Int // row k: the bits of beta whose sum (parity) is z's bit pivots[k]
	zero   []*big.Int // combinations of beta's bits that must sum to 0 for a solution
}

func newQuadSolver(F *gf2m) *quadSolver {
	m := F.m
	// Row r of the system: bit r of (x^i)² + x^i, over the unknowns i.
	rows := make([]*big.Int, m)
	combos := make([]*big.Int, m)
	for r := range m {
		rows[r], combos[r] = new(big.Int), new(big.Int).SetBit(new(big.Int), r, 1)
	}
	xi := big.NewInt(1)
	for i := range m {
		col := F.sqr(xi)
		col.Xor(col, xi)
		for r := range m {
			if col.Bit(r) == 1 {
				rows[r].SetBit(rows[r], i, 1)
			}
		}
		xi = F.reduce(new(big.Int).Lsh(xi, 1))
	}
	s := &quadSolver{}
	rank := 0
	for c := 0; c < m && rank < m; c++ {
		p := rank
		for p < m && rows[p].Bit(c) == 0 {
			p++
		}
		if p == m {
			continue // no pivot: a free unknown, left 0
		}
		rows[rank], rows[p] = rows[p], rows[rank]
		combos[rank], combos[p] = combos[p], combos[rank]
		for r := range m {
			if r != rank && rows[r].Bit(c) == 1 {
				rows[r].Xor(rows[r], rows[rank])
				combos[r].Xor(combos[r], combos[rank])
			}
		}
		s.pivots = append(s.pivots, c)
		rank++
	}
	s.combos, s.zero = combos[:rank], combos[rank:]
	return s
}

func (s *quadSolver) solve(beta *big.Int) (*big.Int, bool) {
	for _, c := range s.zero {
		if parityAnd(c, beta) == 1 {
			return nil, false
		}
	}
	z := new(big.Int)
	for k, c := range s.combos {
		if parityAnd(c, beta) == 1 {
			z.SetBit(z, s.pivots[k], 1)
		}
	}
	return z, true
}

// parityAnd is the parity of the bits a and b share.
func parityAnd(a, b *big.Int) uint {
	aw, bw := a.Bits(), b.Bits()
	var n int
	for i := range min(len(aw), len(bw)) {
		n += bits.OnesCount(uint(aw[i] & bw[i]))
	}
	return uint(n & 1)
}

// decodeBinaryPoint is decodePoint on a curve over GF(2^m). A compressed
// point carries x and the low bit of y/x (0 when x is 0), as X9.62 and
// OpenSSL define it: y = x·z for the root z of z² + z = x + a + b/x²
// whose low bit it is; when x is 0, y is the square root of b.
func (c *ecCurve) decodeBinaryPoint(pt []byte) (x, y *big.Int, ok bool) {
	F := c.binary
	switch {
	case len(pt) == 1+c.size && (pt[0] == 2 || pt[0] == 3):
		x = new(big.Int).SetBytes(pt[1:])
		if x.BitLen() > F.m {
			return nil, nil, false
		}
		if x.Sign() == 0 {
			y = new(big.Int).Set(c.b)
			for range F.m - 1 { // sqrt(b) = b^(2^(m-1))
				y = F.sqr(y)
			}
			return x, y, pt[0] == 2
		}
		xInv := F.inv(x)
		if xInv == nil {
			return nil, nil, false
		}
		beta := F.mul(c.b, F.sqr(xInv))
		beta.Xor(beta, x).Xor(beta, c.a)
		z, ok := F.solveQuadratic(beta)
		if !ok {
			return nil, nil, false
		}
		if z.Bit(0) != uint(pt[0]&1) {
			z.SetBit(z, 0, z.Bit(0)^1)
		}
		return x, F.mul(x, z), true
	case len(pt) == 1+2*c.size && (pt[0] == 4 || pt[0] == 6 || pt[0] == 7):
		x = new(big.Int).SetBytes(pt[1 : 1+c.size])
		y = new(big.Int).SetBytes(pt[1+c.size:])
		if !c.onBinaryCurve(x, y) || pt[0] != 4 && c.yBit(x, y) != pt[0]&1 {
			return nil, nil, false
		}
		return x, y, true
	}
	return nil, nil, false
}

// onBinaryCurve reports whether y² + xy = x³ + ax² + b in GF(2^m).
func (c *ecCurve) onBinaryCurve(x, y *big.Int) bool {
	F := c.binary
	if x.BitLen() > F.m || y.BitLen() > F.m {
		return false
	}
	lhs := F.sqr(y)
	lhs.Xor(lhs, F.mul(x, y))
	x2 := F.sqr(x)
	rhs := F.mul(x2, x)
	rhs.Xor(rhs, F.mul(c.a, x2)).Xor(rhs, c.b)
	return lhs.Cmp(rhs) == 0
}

// yBit is the bit a compressed point carries: the low bit of y over a
// prime field, of y/x over GF(2^m) (0 when x is 0).
func (c *ecCurve) yBit(x, y *big.Int) byte {
	if c.binary == nil {
		return byte(y.Bit(0))
	}
	xInv := c.binary.inv(x)
	if xInv == nil { // x is 0 (or the polynomial, from untrusted parameters, is reducible)
		return 0
	}
	return byte(c.binary.mul(y, xInv).Bit(0))
}
