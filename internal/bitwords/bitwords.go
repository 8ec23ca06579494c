// Package bitwords works on a filter's bit data a word at a time: where
// bit p sits in the 32-bit words Add sets atomically, ORing one filter's
// data into another's (Merge's plain words, Writable.Union's atomic ones),
// and counting the bits set.
package bitwords

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Bit returns the index of the 32-bit word holding bit p of the data, and
// the bit's mask within that word: bit p is data byte p/8 under
// 0x80>>(p%8), and the word is that byte's, read in this machine's byte
// order.
func Bit(p uint64) (uint64, uint32) {
	b := p >> 3
	return b >> 2, 1 << (ByteShift(b) + 7 - p&7)
}

// ByteShift returns where data byte i sits in the value of its 32-bit
// word: how far to shift the word right to bring the byte to the bottom.
// Byte i&3 of a word is its least significant on little-endian machines,
// its most significant on big-endian ones.
func ByteShift(i uint64) uint64 {
	if cpu.IsBigEndian {
		return (3 - i&3) * 8
	}
	return (i & 3) * 8
}

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

// Count returns the number of bits set in b.
func Count(b []byte) uint64 {
	var set uint64
	for len(b) >= 8 {
		set += uint64(bits.OnesCount64(binary.LittleEndian.Uint64(b)))
		b = b[8:]
	}
	for _, c := range b {
		set += uint64(bits.OnesCount8(c))
	}
	return set
}

// Lost returns the number of bits set in old and clear in b, two filters'
// data of one length.
func Lost(old, b []byte) uint64 {
	var lost uint64
	for len(b) >= 8 && len(old) >= 8 {
		lost += uint64(bits.OnesCount64(binary.LittleEndian.Uint64(old) &^ binary.LittleEndian.Uint64(b)))
		old, b = old[8:], b[8:]
	}
	for i := range min(len(old), len(b)) {
		lost += uint64(bits.OnesCount8(old[i] &^ b[i]))
	}
	return lost
}
