package probe

import (
	"testing"
	"unsafe"
)

// PrefetchLines touches nothing it is given, valid or not: a prefetch never
// faults, and the counts at the edges of the loop work.
func TestPrefetchLines(t *testing.T) {
	data := make([]byte, 4096)
	addrs := []uintptr{uintptr(unsafe.Pointer(&data[0])), uintptr(unsafe.Pointer(&data[4095])), 0, ^uintptr(0) / 3, ^uintptr(0)}
	for n := range len(addrs) + 1 {
		var first *uintptr
		if n > 0 {
			first = &addrs[0]
		}
		PrefetchLines(first, n)
	}
	for i, b := range data {
		if b != 0 {
			t.Fatalf("byte %d changed to %d", i, b)
		}
	}
}

func BenchmarkPrefetchLines(b *testing.B) {
	data := make([]byte, 1<<20)
	addrs := make([]uintptr, 16)
	for i := range addrs {
		addrs[i] = uintptr(unsafe.Pointer(&data[i*4096]))
	}
	b.ReportAllocs()
	for b.Loop() {
		PrefetchLines(&addrs[0], len(addrs))
	}
}

// prefetchKeys touches nothing either, whatever the keys: empty, nil, longer
// than its 16 lines, at any alignment.
func TestPrefetchKeys(t *testing.T) {
	data := make([]byte, 4096)
	keys := [][]byte{nil, {}, data[1:2], data[63:65], data[5:], data}
	for n := range len(keys) + 1 {
		prefetchKeys(keys[:n])
	}
	prefetchKeys(nil)
	for i, b := range data {
		if b != 0 {
			t.Fatalf("byte %d changed to %d", i, b)
		}
	}
}
