//go:build !race

package pkbf

// shiftedBit returns the byte holding bit x mod m of the data, shifted
// left to put that bit at 0x80; the bits above it mean nothing, so the
// caller tests shiftedBit(...)&0x80, once for several bits ANDed
// together. last is len(data)-1, which is (m-1)>>3 for every filter with
// data (L >= 3): x>>3&last is the byte of x mod m and x&7 the bit's place
// in it, whatever x's high bits, with no reduction mod m first. The load
// is plain, a Writable's (shared) too (see query.go; race.go has the
// race detector's). Written out, not through a helper for the load: the
// compiler then keeps a probe's four loads in registers.
func shiftedBit(data []byte, last, x uint64, _ bool) uint32 {
	return uint32(data[x>>3&last]) << (x & 7)
}

// bit returns bit p of the data, 0 or 1; last is len(data)-1.
func bit(data []byte, last, p uint64, _ bool) uint64 {
	return uint64(data[p>>3&last]>>(7-p&7)) & 1
}
