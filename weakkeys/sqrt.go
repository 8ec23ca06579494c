package weakkeys

import (
	"math"
	"math/big"
	"math/bits"
)

// The integer square root Fermat's method starts from: Zimmermann's
// Karatsuba square root ("Karatsuba Square Root", INRIA RR-3805, 1999),
// as GMP's mpn_sqrtrem computes it, on 64-bit words. Write n = H·b² +
// A1·b + A0 with b = 2^(64l), A1 and A0 below b, and H at least b²/4;
// from the root S1 of H and its remainder R1, Q = floor((R1·b + A1) / 2S1)
// gives S = S1·b + Q, with remainder U·b + A0 - Q² (U the division's),
// which is the root, or one above it when that remainder is negative. So
// a level costs a division of half its size by a quarter and a square of
// a quarter, the whole about twice the top level's: for a 2048-bit
// modulus, some 200 word products, where math/big's calls cost more than
// their arithmetic.

// sqrtScratch is sqrtRem's working memory, grown to the largest number
// it has seen.
type sqrtScratch struct {
	n, s, r, tmp []uint64
	t            big.Int
}

// sqrtRem sets z to floor(sqrt(n)) and rem to n - z², for n >= 0; z, rem
// and n are distinct and not in s.
func sqrtRem(z, rem, n *big.Int, s *sqrtScratch) {
	x := n.Bits()
	if len(x) == 0 {
		z.SetUint64(0)
		rem.SetUint64(0)
		return
	}
	// n·2^shift, of an even number of words, its top word at least 2^62.
	s.n = appendUint64s(s.n[:0], x)
	top := s.n[len(s.n)-1]
	shift := uint(bits.LeadingZeros64(top)) &^ 1
	if len(s.n)%2 == 1 {
		s.n = append(s.n, 0)
		shift += 64
	}
	shiftLeftWords(s.n, shift)
	l := len(s.n) / 2
	s.s, s.r, s.tmp = resize(s.s, l), resize(s.r, l+1), resize(s.tmp, 4*l+8)
	s.r[l] = sqrtRemWords(s.s, s.r[:l], s.n, s.tmp)
	setUint64s(z, s.s)
	if shift == 0 {
		setUint64s(rem, s.r)
		return
	}
	// The root of n·2^shift over 2^(shift/2) is n's; its remainder is not
	// the scaled one's, so it is computed (a size not a whole number of
	// pairs of words, rare for a modulus).
	z.Rsh(z, shift/2)
	s.t.Mul(z, z)
	rem.Sub(n, &s.t)
}

// sqrtRemWords sets s (l words) to floor(sqrt(n)) and r (l words) to the
// low words of the remainder n - s², for n of 2l words whose top word is
// at least 2^62, and returns the remainder's word l, 0 or 1 (it is at most
// 2s). tmp is working memory of 4l+8 words.
func sqrtRemWords(s, r, n, tmp []uint64) uint64 {
	L := len(s)
	if L == 1 {
		var rc uint64
		s[0], r[0], rc = sqrtRem128(n[1], n[0])
		return rc
	}
	l := L / 2
	h := L - l
	// T = R1·b + A1, L+1 words: R1 and its top word come from the root of
	// H, the top 2h words, into s[l:].
	t := tmp[:L+1]
	t[L] = sqrtRemWords(s[l:], t[l:L], n[2*l:], tmp[L+1:])
	copy(t[:l], n[l:2*l])
	// Q' = floor(T / S1) and U' = T mod S1 give Q = floor(T / 2S1) =
	// Q' >> 1 and U = U' + (Q' mod 2)·S1. Q is at most b: l words and
	// qc, a top bit set only when they are zero.
	q := tmp[L+1 : L+1+l+1]
	divRemWords(q, t, s[l:])
	odd := q[0] & 1
	shiftRight1(q)
	qc := q[l]
	// R = U·b + A0 - Q², with rc its word L, signed.
	copy(r[:l], n[:l])
	copy(r[l:], t[:h])
	rc := 0
	if odd == 1 {
		rc += int(addWords(r[l:], r[l:], s[l:]))
	}
	copy(s[:l], q[:l])
	sc := addWord(s[l:], qc) // S = S1·b + Q: β^L, one word more, before the correction
	if qc == 1 {             // Q² = b² = 2^(128l)
		if 2*l == L {
			rc--
		} else {
			rc -= int(subWord(r[2*l:], 1))
		}
	} else {
		sq := tmp[L+1+l+1 : L+1+l+1+2*l]
		sqrWords(sq, q[:l])
		borrow := subWords(r[:2*l], r[:2*l], sq)
		if 2*l < L {
			borrow = subWord(r[2*l:], borrow)
		}
		rc -= int(borrow)
	}
	if rc < 0 { // the root is S-1: n - (S-1)² = R + 2(S-1) + 1
		sc -= subWord(s, 1)
		c := addWords(r, r, s)
		c += addWords(r, r, s)
		c += addWord(r, 1)
		rc += int(c)
	}
	_ = sc // 0: the root has L words
	return uint64(rc)
}

// sqrtRem128 returns the root s of hi·2^64 + lo, for hi at least 2^62, and
// the remainder, rc·2^64 + r: one level of the same method on 32-bit
// halves, from isqrt64 of hi.
func sqrtRem128(hi, lo uint64) (s, r, rc uint64) {
	s1 := isqrt64(hi) // 2^31 <= s1 < 2^32
	r1 := hi - s1*s1  // at most 2·s1 < 2^33
	q, u := bits.Div64(r1>>32, r1<<32|lo>>32, 2*s1)
	rh, rl := u>>32, u<<32|lo&math.MaxUint32 // U·2^32 + A0
	qh, ql := bits.Mul64(q, q)               // q is at most 2^32
	var borrow uint64
	rl, borrow = bits.Sub64(rl, ql, 0)
	rh, _ = bits.Sub64(rh, qh, borrow)
	sl, sh := bits.Add64(s1<<32, q, 0)
	if int64(rh) < 0 { // the root is S-1
		sl, borrow = bits.Sub64(sl, 1, 0)
		sh -= borrow
		var c uint64
		for range 2 {
			rl, c = bits.Add64(rl, sl, 0)
			rh += sh + c
		}
		rl, c = bits.Add64(rl, 1, 0)
		rh += c
	}
	return sl, rl, rh
}

// divRemWords sets q, len(u)-len(v) words, to floor(u / v) and u[:len(v)]
// to the remainder (Knuth's algorithm D), for v whose top word has its top
// bit set and u whose top word is below v's.
func divRemWords(q, u, v []uint64) {
	h := len(v)
	vt := v[h-1]
	for j := len(u) - h - 1; j >= 0; j-- {
		// qhat from the top two words of u and the top word of v, then
		// the next word of each: at most one above the quotient's word.
		ut, un := u[j+h], u[j+h-1]
		var qhat, rhat uint64
		refine := true
		if ut == vt { // the quotient is below 2^64: start from 2^64-1
			qhat = math.MaxUint64
			var c uint64
			rhat, c = bits.Add64(un, vt, 0)
			refine = c == 0
		} else {
			qhat, rhat = bits.Div64(ut, un, vt)
		}
		for refine && h > 1 {
			ph, pl := bits.Mul64(qhat, v[h-2])
			if ph < rhat || ph == rhat && pl <= u[j+h-2] {
				break
			}
			qhat--
			var c uint64
			rhat, c = bits.Add64(rhat, vt, 0)
			refine = c == 0
		}
		if mulSubWords(u[j:j+h+1], v, qhat) != 0 { // one too many: add v back
			qhat--
			u[j+h] += addWords(u[j:j+h], u[j:j+h], v)
		}
		q[j] = qhat
	}
}

// mulSubWords sets x (len(v)+1 words) to x - y·v and returns the borrow.
func mulSubWords(x, v []uint64, y uint64) uint64 {
	var carry, borrow uint64
	for i, w := range v {
		hi, lo := bits.Mul64(w, y)
		lo, c := bits.Add64(lo, carry, 0)
		x[i], borrow = bits.Sub64(x[i], lo, borrow)
		carry = hi + c
	}
	x[len(v)], borrow = bits.Sub64(x[len(v)], carry, borrow)
	return borrow
}

// sqrWords sets z (2·len(x) words) to x².
func sqrWords(z, x []uint64) {
	clear(z)
	for i, a := range x {
		var carry uint64
		for j, b := range x {
			hi, lo := bits.Mul64(a, b)
			lo, c := bits.Add64(lo, z[i+j], 0)
			hi += c
			z[i+j], c = bits.Add64(lo, carry, 0)
			carry = hi + c
		}
		z[i+len(x)] = carry
	}
}

// addWords sets z to x + y, all of one length, and returns the carry.
func addWords(z, x, y []uint64) uint64 {
	var c uint64
	for i := range z {
		z[i], c = bits.Add64(x[i], y[i], c)
	}
	return c
}

// subWords sets z to x - y, all of one length, and returns the borrow.
func subWords(z, x, y []uint64) uint64 {
	var b uint64
	for i := range z {
		z[i], b = bits.Sub64(x[i], y[i], b)
	}
	return b
}

// addWord adds w to z in place and returns the carry.
func addWord(z []uint64, w uint64) uint64 {
	for i := range z {
		if w == 0 {
			break
		}
		z[i], w = bits.Add64(z[i], w, 0)
	}
	return w
}

// subWord subtracts w from z in place and returns the borrow.
func subWord(z []uint64, w uint64) uint64 {
	for i := range z {
		if w == 0 {
			break
		}
		z[i], w = bits.Sub64(z[i], w, 0)
	}
	return w
}

// shiftRight1 halves z in place.
func shiftRight1(z []uint64) {
	for i := range z {
		z[i] >>= 1
		if i+1 < len(z) {
			z[i] |= z[i+1] << 63
		}
	}
}

// shiftLeftWords shifts z left by shift bits in place, shift below 128;
// the bits shifted out of the top are lost.
func shiftLeftWords(z []uint64, shift uint) {
	ws, bs := int(shift/64), shift%64
	for i := len(z) - 1; i >= 0; i-- {
		var w uint64
		if i-ws >= 0 {
			w = z[i-ws] << bs
			if bs > 0 && i-ws-1 >= 0 {
				w |= z[i-ws-1] >> (64 - bs)
			}
		}
		z[i] = w
	}
}

// appendUint64s appends the words of x to dst, as 64-bit words.
func appendUint64s(dst []uint64, x []big.Word) []uint64 {
	if bits.UintSize == 64 {
		for _, w := range x {
			dst = append(dst, uint64(w))
		}
		return dst
	}
	for i := 0; i < len(x); i += 2 {
		w := uint64(x[i])
		if i+1 < len(x) {
			w |= uint64(x[i+1]) << 32
		}
		dst = append(dst, w)
	}
	return dst
}

// setUint64s sets z to the number of the 64-bit words x, in z's own
// memory.
func setUint64s(z *big.Int, x []uint64) {
	w := z.Bits()[:0]
	for _, v := range x {
		if bits.UintSize == 64 {
			w = append(w, big.Word(v))
		} else {
			w = append(w, big.Word(v&math.MaxUint32), big.Word(v>>32))
		}
	}
	z.SetBits(w)
}

// resize returns x with n words, reusing its memory when it can.
func resize(x []uint64, n int) []uint64 {
	if cap(x) < n {
		return make([]uint64, n)
	}
	return x[:n]
}

// isqrt64 returns floor(sqrt(v)).
func isqrt64(v uint64) uint64 {
	r := uint64(math.Sqrt(float64(v)))
	for r > math.MaxUint32 || r*r > v {
		r--
	}
	for r < math.MaxUint32 {
		hi, lo := bits.Mul64(r+1, r+1)
		if hi != 0 || lo > v {
			break
		}
		r++
	}
	return r
}
