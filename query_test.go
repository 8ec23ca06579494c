package pkbf

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/pkbf/pkbf/internal/xxh64"
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

// hashPaths runs f with each way this machine has of hashing keys: both
// hashes in one vector pass, where it can, and two scalar XXH64 calls
// (which ProbablyBatch then computes lazily), so that both run in CI on
// any machine that has them.
func hashPaths(t *testing.T, f func(t *testing.T)) {
	for _, vector := range []bool{true, false} {
		restore := xxh64.Use(vector)
		if vector && !xxh64.Vector() {
			restore()
			continue
		}
		t.Run(map[bool]string{true: "vector", false: "scalar"}[vector], f)
		restore()
	}
}

// The answers of Probably and ProbablyBatch are the same with either way
// of hashing (keycheck's TestHashPaths runs Check both ways).
func TestHashPaths(t *testing.T) {
	hashPaths(t, TestProbablyBatch)
	hashPaths(t, TestProbablyBatchVisits)
	hashPaths(t, TestProbablyNoFalseNegatives)
	hashPaths(t, TestExampleFilters)
}
