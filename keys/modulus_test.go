package keys

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestBareModulus: an input that is one hex integer, "0x" and its digits
// (the ROCA authors' .txt files), is one Key whose Modulus is that
// integer, from a Scanner and from ParseKey, and whose SPKI is an error
// wrapping ErrUnsupportedKey; any other text around it, or a line that is
// not exactly such an integer, is text as before.
func TestBareModulus(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []byte // nil: not a bare modulus
	}{
		{"lowercase", "0xc0ffee\n", []byte{0xc0, 0xff, 0xee}},
		{"uppercase prefix, spaces around", "\n  0XABC  \n\n", []byte{0x0a, 0xbc}},
		{"leading zeros", "0x0000ff", []byte{0xff}},
		{"CR LF", "0x0102\r\n", []byte{0x01, 0x02}},
		{"no prefix", "c0ffee\n", nil},
		{"prefix alone", "0x\n", nil},
		{"not hex", "0xc0ffeg\n", nil},
		{"two integers", "0x01\n0x02\n", nil},
		{"text after", "0x01\nmore text\n", nil},
		{"text before", "a modulus:\n0x01\n", nil},
		{"space inside", "0x01 02\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScanner(strings.NewReader(tc.in))
			var got []Key
			for s.Scan() {
				got = append(got, s.Key())
			}
			if len(got) != 1 {
				t.Fatalf("%d keys, want 1", len(got))
			}
			k := got[0]
			n, ok := k.Modulus()
			if tc.want == nil {
				if ok {
					t.Fatalf("Modulus = %x, want none", n)
				}
				if _, err := k.SPKI(); !errors.Is(err, ErrInvalidKey) || errors.Is(err, ErrUnsupportedKey) {
					t.Fatalf("SPKI error %v, want an invalid key (text)", err)
				}
				return
			}
			if !ok || !bytes.Equal(n, tc.want) {
				t.Fatalf("Modulus = %x, %v; want %x", n, ok, tc.want)
			}
			if k.Line == 0 || k.Index != 1 || k.Source() != "line "+strconv.Itoa(k.Line) {
				t.Errorf("source %q, index %d", k.Source(), k.Index)
			}
			if spki, err := k.SPKI(); spki != nil || !errors.Is(err, ErrUnsupportedKey) || !errors.Is(err, ErrInvalidKey) {
				t.Errorf("SPKI = %x, %v; want an unsupported key", spki, err)
			}
			if spki, _, _, err := k.Forms(nil); spki != nil || !errors.Is(err, ErrUnsupportedKey) {
				t.Errorf("Forms = %x, %v; want an unsupported key", spki, err)
			}
			p := ParseKey([]byte(tc.in))
			if n, ok := p.Modulus(); !ok || !bytes.Equal(n, tc.want) {
				t.Errorf("ParseKey: Modulus = %x, %v; want %x", n, ok, tc.want)
			}
			if _, err := SPKI([]byte(tc.in)); !errors.Is(err, ErrUnsupportedKey) || !strings.Contains(err.Error(), "bare RSA modulus") {
				t.Errorf("SPKI(data) = %v, want the bare modulus's error", err)
			}
		})
	}
	// Keys around it: the line is text, as before.
	s := NewScanner(strings.NewReader("0x01\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"))
	for s.Scan() {
		if k := s.Key(); k.kind == kindModulus {
			t.Errorf("a modulus line beside a key was read as a modulus")
		}
	}
}
