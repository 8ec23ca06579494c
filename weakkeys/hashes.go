package weakkeys

import (
	"crypto/sha1"
	"crypto/sha256"
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
	const digits = "0123456789ABCDEF"
	dst = append(dst, "Modulus="...)
	for i, c := range modulus {
		if i > 0 || c>>4 != 0 {
			dst = append(dst, digits[c>>4])
		}
		dst = append(dst, digits[c&15])
	}
	return append(dst, '\n')
}

// trimZeros drops leading zero bytes.
func trimZeros(b []byte) []byte {
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	return b
}
