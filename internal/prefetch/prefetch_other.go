//go:build (!amd64 && !arm64) || purego

package prefetch

// Lines does nothing here: without the instruction, a batch's independent
// loads still overlap as the CPU runs ahead.
func Lines(addrs *uintptr, n int) {}

// Keys does nothing here.
func Keys(keys [][]byte) {}
