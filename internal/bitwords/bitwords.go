// Package bitwords ORs a filter's data into another's a word at a time:
// plain words for data pkbf streams (Merge), atomic ones for a filter
// that queries read while it changes (Writable.Union).
package bitwords

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// Or sets dst to dst OR src, a word at a time; they have one length.
func Or(dst, src []byte) {
	n := min(len(dst), len(src)) &^ 7
	if n > 0 && uintptr(unsafe.Pointer(&dst[0]))%8 == 0 && uintptr(unsafe.Pointer(&src[0]))%8 == 0 {
		d := unsafe.Slice((*uint64)(unsafe.Pointer(&dst[0])), n/8)
		s := unsafe.Slice((*uint64)(unsafe.Pointer(&src[0])), n/8)
		for i := range d {
			d[i] |= s[i]
		}
		dst, src = dst[n:], src[n:]
	}
	for i := range min(len(dst), len(src)) {
		dst[i] |= src[i]
	}
}

// OrAtomic ORs src, a filter's data, into words, the same filter's
// data as 32-bit words (which Add sets atomically), and reports whether
// any bit was newly set.
func OrAtomic(words []uint32, src []byte) (changed bool) {
	or := func(i int, x uint32) {
		if x&^atomic.LoadUint32(&words[i]) != 0 {
			atomic.OrUint32(&words[i], x)
			changed = true
		}
	}
	full := len(src) / 4
	for i := range full {
		or(i, binary.NativeEndian.Uint32(src[4*i:]))
	}
	if tail := src[4*full:]; len(tail) > 0 {
		var w [4]byte
		copy(w[:], tail)
		or(full, binary.NativeEndian.Uint32(w[:]))
	}
	return changed
}
