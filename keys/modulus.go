package keys

import (
	"bytes"
	"encoding/hex"
)

// A bare RSA modulus is what the ROCA authors' test files hold: one
// integer in hex, "0x" and its digits, with no exponent. It is no key a
// filter can hold (an SPKI needs the exponent), but the weak-key checks
// of a modulus (package weakkeys) need nothing else. The form is kept
// narrow, so that no text is taken for one by chance: the whole input is
// that one line, with white space around it.

// hexModulus returns the magnitude of line when it is a bare modulus:
// "0x" or "0X", then hex digits and nothing else (an odd count is read
// with a leading zero), big-endian without leading zeros.
func hexModulus(line []byte) ([]byte, bool) {
	digits, ok := bytes.CutPrefix(line, []byte("0x"))
	if !ok {
		digits, ok = bytes.CutPrefix(line, []byte("0X"))
	}
	if !ok || len(digits) == 0 {
		return nil, false
	}
	if len(digits)%2 == 1 {
		digits = append([]byte{'0'}, digits...)
	}
	n := make([]byte, len(digits)/2)
	if _, err := hex.Decode(n, digits); err != nil {
		return nil, false
	}
	return bytes.TrimLeft(n, "\x00"), true
}

// Modulus returns the modulus of a Key that is a bare RSA modulus (an
// input that is one hex integer, "0x...", as the ROCA authors' test files
// are), big-endian without leading zeros, and true; for every other Key,
// nil and false. A bare modulus has no SPKI: [Key.SPKI] returns an error
// wrapping [ErrUnsupportedKey] for it.
func (k *Key) Modulus() ([]byte, bool) {
	if k.kind != kindModulus {
		return nil, false
	}
	n, _ := hexModulus(bytes.TrimSpace(k.Raw))
	return n, true
}

// errBareModulus is the SPKI error of a bare modulus.
var errBareModulus = unsupportedErrorf("a bare RSA modulus (one hex integer, no exponent) has no SubjectPublicKeyInfo: only the weak-key checks (package weakkeys) read it")

// hexStart reports whether head, an input's first bytes, starts "0x" and
// hex digits: a bare modulus's text. Its "0" is a DER SEQUENCE's tag,
// and "0x0" the start of a DER SEQUENCE of a SEQUENCE; but the inner
// SEQUENCE's length would then be a hex digit's code, which starts no
// key's DER (an algorithm identifier, a certificate's TBS).
func hexStart(head []byte) bool {
	if len(head) < 3 || head[0] != '0' || head[1]|0x20 != 'x' {
		return false
	}
	for _, c := range head[2:] {
		if !isHexDigit(c) {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'f'
}

// bareModulus reports whether text, a whole input's text, is one bare
// modulus.
func bareModulus(text []byte) bool {
	_, ok := hexModulus(bytes.TrimSpace(text))
	return ok
}
