package weakkeys

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
)

// keyHashes computes a key's hashes under each scheme once, when a list
// asks for them.
type keyHashes struct {
	material []byte // the modulus or x-coordinate, without leading zeros
	sha256   [sha256.Size]byte
	sha1     [sha1.Size]byte
	have     [4]bool // by scheme
	text     []byte  // scratch for VulnKey's text
}

// reset starts on a new key.
func (k *keyHashes) reset(material []byte) {
	k.material = trimZeros(material)
	k.have = [4]bool{}
}

// of returns the key's hash under s, at least as long as s's entries, the
// entry first.
func (k *keyHashes) of(s Scheme) []byte {
	switch s {
	case SHA256Modulus, SHA256X:
		if !k.have[s] {
			k.sha256 = sha256.Sum256(k.material)
			k.have[SHA256Modulus], k.have[SHA256X] = true, true
		}
		return k.sha256[:]
	case VulnKey:
		if !k.have[s] {
			k.text = appendVulnKeyText(k.text[:0], k.material)
			k.sha1 = sha1.Sum(k.text)
			k.have[s] = true
		}
		return k.sha1[sha1.Size-VulnKey.width():]
	}
	return nil
}

// appendVulnKeyText appends what openssl-vulnkey hashes for a modulus:
// "Modulus=", its uppercase hex as "openssl rsa -noout -modulus" prints it
// (BN_print: no leading zero digit), and a newline.
func appendVulnKeyText(dst, modulus []byte) []byte {
	digits := 2 * len(modulus)
	if len(modulus) > 0 && modulus[0] < 0x10 {
		digits--
	}
	n := len(dst) + len("Modulus=") + digits + 1
	if cap(dst) < n {
		dst = append(make([]byte, 0, n), dst...)
	}
	dst = append(dst, "Modulus="...)
	if len(modulus) > 0 && modulus[0] < 0x10 {
		dst = append(dst, upperHex[modulus[0]][1])
		modulus = modulus[1:]
	}
	b := dst[len(dst) : n-1]
	i := 0
	for ; i+4 <= len(modulus); i += 4 {
		binary.LittleEndian.PutUint64(b[2*i:], hexDigits4(binary.LittleEndian.Uint32(modulus[i:])))
	}
	for ; i < len(modulus); i++ {
		b[2*i], b[2*i+1] = upperHex[modulus[i]][0], upperHex[modulus[i]][1]
	}
	return append(dst[:n-1], '\n')
}

// hexDigits4 returns the uppercase hex digits of the four bytes of v, its
// low byte's first, as the bytes of a little-endian word: each byte's
// nibbles spread to bytes of their own, then each made a digit, eight at
// a time (a table costs a load and a store a digit).
func hexDigits4(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x&0x000f000f000f000f)<<8 | (x&0x00f000f000f000f0)>>4     // high nibble first
	letters := (x + 0x0606060606060606) >> 4 & 0x0101010101010101 // 1 where a nibble is 10 or more
	return x + 0x3030303030303030 + letters*('A'-'0'-10)
}

// upperHex is each byte's two uppercase hex digits.
var upperHex = func() (t [256][2]byte) {
	const digits = "0123456789ABCDEF"
	for i := range t {
		t[i] = [2]byte{digits[i>>4], digits[i&15]}
	}
	return t
}()

// trimZeros drops leading zero bytes.
func trimZeros(b []byte) []byte {
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	return b
}
