//go:build !linux

package mapfile

// AllocHuge returns n zero bytes.
func AllocHuge(n int) []byte { return make([]byte, n) }

// SettleHuge does nothing here.
func SettleHuge([]byte) {}

// preferHuge does nothing here.
func preferHuge([]byte) {}

// AdviseHuge does nothing here.
func AdviseHuge([]byte) {}
