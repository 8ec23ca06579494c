package weakkeys

import (
	"fmt"
	"math/big"
	mrand "math/rand"
	"testing"
)

// TestAppendVulnKeyText compares openssl-vulnkey's text with Go's %X of
// the modulus (uppercase, no leading zero digit), for moduli of every
// length to 67 bytes (the word-at-a-time digits and the bytes after them),
// every byte value at every place of a word, and a first byte below 0x10
// (one digit).
func TestAppendVulnKeyText(t *testing.T) {
	r := mrand.New(mrand.NewSource(19))
	check := func(m []byte) {
		t.Helper()
		got := string(appendVulnKeyText([]byte("prefix "), m))
		if want := fmt.Sprintf("prefix Modulus=%X\n", new(big.Int).SetBytes(m)); got != want {
			t.Fatalf("modulus %x: %q, want %q", m, got, want)
		}
	}
	for n := 1; n <= 67; n++ {
		m := make([]byte, n)
		r.Read(m)
		m[0] |= 0x10
		check(m)
		m[0] = byte(1 + r.Intn(15))
		check(m)
	}
	for v := range 256 {
		for at := range 5 {
			m := []byte{0xa5, 0x5a, 0xff, 0x01, 0x80}
			m[at] = byte(v)
			if m[0] != 0 {
				check(m)
			}
		}
	}
}
