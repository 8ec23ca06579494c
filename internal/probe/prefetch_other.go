//go:build (!amd64 && !arm64) || purego

package probe

// PrefetchLines does nothing here: without the instruction, a batch's
// independent loads still overlap as the CPU runs ahead.
func PrefetchLines(addrs *uintptr, n int) {}

// prefetchKeys does nothing here.
func prefetchKeys(keys [][]byte) {}
