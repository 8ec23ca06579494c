//go:build race

package pkbf

import (
	"sync/atomic"
	"unsafe"

	"github.com/pkbf/pkbf/internal/bitwords"
)

// dataByte returns data[i]. With the race detector, the bytes of a
// Writable, whose words Add sets atomically, are read with atomic loads
// of their word, which the detector sees as ordered with the adds (see
// query.go); elsewhere they are plain loads.
func (c *core) dataByte(data []byte, i uint64) byte {
	if !c.shared {
		return data[i]
	}
	w := atomic.LoadUint32((*uint32)(unsafe.Pointer(&data[i&^3]))) // a Writable's data is word-aligned
	return byte(w >> bitwords.ByteShift(i))
}
