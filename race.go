//go:build race

package pkbf

import (
	"sync/atomic"
	"unsafe"

	"github.com/pkbf/pkbf/internal/bitwords"
)

// shiftedBit and bit (query.go) read the bytes of a Writable (shared: Add
// sets its words atomically) with atomic loads of their word, which the
// race detector sees as ordered with the adds; other filters' plainly.

func shiftedBit(data []byte, last, x uint64, shared bool) uint32 {
	return uint32(dataByte(data, x>>3&last, shared)) << (x & 7)
}

func bit(data []byte, last, p uint64, shared bool) uint64 {
	return uint64(dataByte(data, p>>3&last, shared)>>(7-p&7)) & 1
}

// dataByte returns data[i].
func dataByte(data []byte, i uint64, shared bool) byte {
	if !shared {
		return data[i]
	}
	w := atomic.LoadUint32((*uint32)(unsafe.Pointer(&data[i&^3]))) // a Writable's data is word-aligned
	return byte(w >> bitwords.ByteShift(i))
}
