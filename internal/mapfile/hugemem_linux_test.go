package mapfile

import (
	"testing"
	"unsafe"
)

// hugeRange gives the whole huge pages inside a slice, and nothing when
// there is none.
func TestHugeRange(t *testing.T) {
	b := make([]byte, 5*hugePage)
	start := uintptr(unsafe.Pointer(&b[0]))
	for _, tc := range []struct{ off, n int }{{0, len(b)}, {1, len(b) - 1}, {0, hugePage - 1}, {3, 2 * hugePage}} {
		s := b[tc.off : tc.off+tc.n]
		r := hugeRange(s)
		if len(r) == 0 {
			continue
		}
		first := uintptr(unsafe.Pointer(&r[0]))
		switch {
		case first%hugePage != 0 || len(r)%hugePage != 0:
			t.Errorf("%+v: range at %#x of %d bytes is not whole huge pages", tc, first-start, len(r))
		case first < uintptr(unsafe.Pointer(&s[0])) || first+uintptr(len(r)) > uintptr(unsafe.Pointer(&s[0]))+uintptr(len(s)):
			t.Errorf("%+v: range reaches outside the slice", tc)
		case uintptr(unsafe.Pointer(&s[0]))+uintptr(len(s))-(first+uintptr(len(r))) >= hugePage || first-uintptr(unsafe.Pointer(&s[0])) >= hugePage:
			t.Errorf("%+v: range leaves a whole huge page out", tc)
		}
	}
	if r := hugeRange(b[1 : hugePage-1]); len(r) != 0 {
		t.Errorf("a slice smaller than a huge page gave %d bytes", len(r))
	}
}

// Alloc gives zeroed memory of the size asked, small or large, and Settle
// leaves it as it was.
func TestAllocHuge(t *testing.T) {
	for _, n := range []int{0, 1, 4*hugePage - 1, 4 * hugePage, 4*hugePage + 12345} {
		b := AllocHuge(n)
		if len(b) != n {
			t.Fatalf("AllocHuge(%d) gave %d bytes", n, len(b))
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("AllocHuge(%d): byte %d is %d", n, i, b[i])
			}
			b[i] = byte(i)
		}
		SettleHuge(b)
		for i := range b {
			if b[i] != byte(i) {
				t.Fatalf("Settle changed byte %d", i)
			}
		}
	}
}

// AdviseHuge changes the backing of memory it did not allocate, never its
// bytes, small or large, aligned or not.
func TestAdviseHugeKeepsBytes(t *testing.T) {
	for _, n := range []int{0, 1, 4*hugePage - 1, 4*hugePage + 12345, 9 * hugePage} {
		b := make([]byte, n+1)[1:] // not aligned to anything
		for i := range b {
			b[i] = byte(i*7 + 1)
		}
		AdviseHuge(b)
		for i := range b {
			if b[i] != byte(i*7+1) {
				t.Fatalf("Advise of %d bytes changed byte %d", n, i)
			}
		}
	}
}
