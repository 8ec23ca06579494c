package pkcs12

import (
	"bytes"
	"hash"
	"unicode/utf16"
)

// BMPPassword encodes a password as PKCS#12 wants it for its own key
// derivation: UTF-16 big-endian with two zero bytes at the end.
func BMPPassword(password string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(password)) {
		b = append(b, byte(u>>8), byte(u))
	}
	return append(b, 0, 0)
}

// KDF is the key derivation of RFC 7292 appendix B.2: size bytes for the
// purpose id (1 key, 2 IV, 3 MAC key), from a password as BMPPassword
// encodes it. It runs its iterations once for each block of h's size.
func KDF(h func() hash.Hash, id byte, password, salt []byte, iterations, size int) []byte {
	d := h()
	u, v := d.Size(), d.BlockSize()
	fill := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		out := make([]byte, v*((len(b)+v-1)/v))
		for i := range out {
			out[i] = b[i%len(b)]
		}
		return out
	}
	i := append(fill(salt), fill(password)...)
	diversifier := bytes.Repeat([]byte{id}, v)
	var out []byte
	for len(out) < size {
		d.Reset()
		d.Write(diversifier)
		d.Write(i)
		a := d.Sum(nil)
		for range iterations - 1 {
			d.Reset()
			d.Write(a)
			a = d.Sum(a[:0])
		}
		out = append(out, a...)
		// I_j = (I_j + B + 1) mod 2^(8v), with B = A repeated to v bytes.
		b := make([]byte, v)
		for k := range b {
			b[k] = a[k%u]
		}
		for j := 0; j < len(i); j += v {
			carry := 1
			for k := v - 1; k >= 0; k-- {
				sum := int(i[j+k]) + int(b[k]) + carry
				i[j+k], carry = byte(sum), sum>>8
			}
		}
	}
	return out[:size]
}
