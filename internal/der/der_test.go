package der

import (
	"bytes"
	"encoding/asn1"
	"testing"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

func TestDERReaderLengths(t *testing.T) {
	long := func(lenBytes []byte, n int) []byte {
		return append(append([]byte{0x04}, lenBytes...), make([]byte, n)...)
	}
	tests := []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"short form 0", []byte{0x04, 0x00}, true},
		{"short form 127", long([]byte{0x7f}, 127), true},
		{"0x81 128: smallest long form", long([]byte{0x81, 0x80}, 128), true},
		{"0x81 127: not minimal", long([]byte{0x81, 0x7f}, 127), false},
		{"0x82 256", long([]byte{0x82, 0x01, 0x00}, 256), true},
		{"0x82 255: not minimal", long([]byte{0x82, 0x00, 0xff}, 255), false},
		{"0x84: largest length form", long([]byte{0x84, 0x01, 0x00, 0x00, 0x00}, 1<<24), true},
		{"0x85: length too long", long([]byte{0x85, 0x01, 0x00, 0x00, 0x00, 0x00}, 0), false},
		{"0x80: indefinite (BER)", []byte{0x04, 0x80, 0x00, 0x00}, false},
		{"length past the end", []byte{0x04, 0x03, 0x00, 0x00}, false},
		{"long length cut", []byte{0x04, 0x82, 0x01}, false},
		{"multi-byte tag", []byte{0x1f, 0x81, 0x00, 0x00}, false},
		{"one byte", []byte{0x04}, false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Reader(tt.in)
			content, ok := d.Read(0x04)
			if ok != tt.ok {
				t.Fatalf("read ok = %v, want %v", ok, tt.ok)
			}
			// cryptobyte agrees on every case.
			s := cryptobyte.String(tt.in)
			var want cryptobyte.String
			if cbOK := s.ReadASN1(&want, cbasn1.OCTET_STRING); cbOK != ok || ok && !bytes.Equal(content, want) {
				t.Errorf("Reader says %v, cryptobyte says %v", ok, cbOK)
			}
			if ok && !d.Empty() {
				t.Errorf("%d bytes left", len(d))
			}
		})
	}
}

func TestDERReaderBitString(t *testing.T) {
	for _, tt := range []struct {
		in   []byte
		bits int
		ok   bool
	}{
		{[]byte{0x03, 0x01, 0x00}, 0, true},
		{[]byte{0x03, 0x02, 0x00, 0xff}, 8, true},
		{[]byte{0x03, 0x02, 0x04, 0xf0}, 4, true},
		{[]byte{0x03, 0x02, 0x04, 0xf8}, 0, false}, // padding bit set
		{[]byte{0x03, 0x01, 0x01}, 0, false},       // unused bits with no data
		{[]byte{0x03, 0x02, 0x08, 0x00}, 0, false}, // more than 7 unused
		{[]byte{0x03, 0x00}, 0, false},             // no unused-bits byte
		{[]byte{0x04, 0x01, 0x00}, 0, false},       // wrong tag
	} {
		d := Reader(tt.in)
		_, bits, ok := d.ReadBitString()
		if ok != tt.ok || ok && bits != tt.bits {
			t.Errorf("readBitString(%x) = %d bits, %v; want %d, %v", tt.in, bits, ok, tt.bits, tt.ok)
		}
	}
}

// OID encodes as encoding/asn1 does, for small and large arcs.
func TestOID(t *testing.T) {
	for _, arcs := range [][]int{
		{1, 2, 840, 113549, 1, 1, 1},
		{1, 3, 132, 0, 34},
		{2, 5, 4, 3},
		{0, 9, 2342, 19200300, 100, 1, 1},
		{2, 999, 1 << 28, 127, 128, 16383, 16384},
		{1, 39},
	} {
		want, err := asn1.Marshal(asn1.ObjectIdentifier(arcs))
		if err != nil {
			t.Fatal(err)
		}
		if got := OID(arcs...); !bytes.Equal(got, want[2:]) {
			t.Errorf("OID(%v) = %x, encoding/asn1 gives %x", arcs, got, want[2:])
		}
	}
}

// AppendHeader writes the minimal length form, and Len counts it.
func TestAppendHeader(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 255, 256, 65535, 65536, 1<<24 - 1, 1 << 24} {
		h := AppendHeader(nil, TagOctetString, n)
		if len(h)+n != Len(n) {
			t.Errorf("Len(%d) = %d, the header is %d bytes", n, Len(n), len(h))
		}
		d := Reader(append(h, make([]byte, n)...))
		if content, ok := d.Read(TagOctetString); !ok || len(content) != n || !d.Empty() {
			t.Errorf("header for %d bytes (%x) does not read back", n, h)
		}
	}
}
