//go:build !linux

package hugemem

// Alloc returns n zero bytes.
func Alloc(n int) []byte { return make([]byte, n) }

// Settle does nothing here.
func Settle([]byte) {}

// Prefer does nothing here.
func Prefer([]byte) {}

// Advise does nothing here.
func Advise([]byte) {}
