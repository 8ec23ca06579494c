//go:build (!amd64 && !arm64) || purego

package pkbf

// prefetch does nothing here: without the instruction, the batch's
// independent loads still overlap as the CPU runs ahead.
func prefetch(addrs *uintptr, n int) {}
