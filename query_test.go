package pkbf

import (
	"encoding/binary"
	"testing"
	"unsafe"
)

// The word a writable filter updates holds its bytes where the byte order
// of this machine puts them.
func TestByteInWord(t *testing.T) {
	little := binary.NativeEndian.Uint16([]byte{1, 0}) == 1
	if (byteInWord() == 0) != little {
		t.Fatalf("byteInWord is %d on a machine where little-endian is %v", byteInWord(), little)
	}
	for p := range uint64(64) {
		words := make([]uint32, 2)
		w, m := wordBit(p)
		words[w] |= m
		data := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 8)
		for i, c := range data {
			want := byte(0)
			if uint64(i) == p/8 {
				want = 0x80 >> (p % 8)
			}
			if c != want {
				t.Fatalf("bit %d: byte %d is %#02x, want %#02x", p, i, c, want)
			}
		}
	}
}
