//go:build !linux

package pkbf

// allocData returns n zero bytes for filter data the package owns.
func allocData(n int) []byte { return make([]byte, n) }

// settleData does nothing here.
func settleData([]byte) {}
