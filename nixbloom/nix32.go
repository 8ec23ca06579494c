package nixbloom

import "fmt"

// Nix32 is Nix's base-32 encoding of hashes: its own alphabet (no e, o, t,
// u), and the last character holds the lowest five bits of the first byte.
// Character len-1-n holds bits 5n to 5n+4 of the bytes read as one
// little-endian number.
const nix32Alphabet = "0123456789abcdfghijklmnpqrsvwxyz"

// hashPartLen is the length of a store path's hash part: 32 characters,
// exactly the 160 bits of hashPartBytes.
const (
	hashPartLen   = 32
	hashPartBytes = 20
)

// nix32Value maps a byte to its digit, or 0xff if it is not in the alphabet.
var nix32Value = func() (v [256]byte) {
	for i := range v {
		v[i] = 0xff
	}
	for i := range len(nix32Alphabet) {
		v[nix32Alphabet[i]] = byte(i)
	}
	return v
}()

// encodeNix32 returns the Nix32 encoding of b.
func encodeNix32(b []byte) string {
	n := (len(b)*8 + 4) / 5
	out := make([]byte, n)
	for i := range n {
		bit := i * 5
		j, shift := bit/8, bit%8
		c := uint(b[j]) >> shift
		if j+1 < len(b) {
			c |= uint(b[j+1]) << (8 - shift)
		}
		out[n-1-i] = nix32Alphabet[c&0x1f]
	}
	return string(out)
}

// decodeHashPart decodes a 32-character Nix32 hash part into dst. It does
// not allocate unless it fails.
func decodeHashPart(dst *[hashPartBytes]byte, s string) error {
	if len(s) != hashPartLen {
		return fmt.Errorf("%w: hash part %q is %d characters, want %d", ErrInvalidPath, s, len(s), hashPartLen)
	}
	*dst = [hashPartBytes]byte{}
	for n := range hashPartLen {
		c := s[hashPartLen-1-n]
		d := nix32Value[c]
		if d == 0xff {
			return fmt.Errorf("%w: %q in hash part %q is not a Nix32 character", ErrInvalidPath, c, s)
		}
		bit := n * 5
		j, shift := bit/8, bit%8
		dst[j] |= d << shift
		if j+1 < hashPartBytes {
			dst[j+1] |= d >> (8 - shift)
		}
	}
	return nil
}
