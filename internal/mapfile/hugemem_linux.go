package mapfile

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the platforms pkbf
// asks for them (x86-64 and arm64 with 4 KiB base pages).
const hugePage = 2 << 20

// AllocHuge returns n zero bytes for filter data the package owns (New,
// ReadFilter). Past a few huge pages it asks Linux to back them with
// transparent huge pages: out of cache, every probe of a query is also a
// TLB miss, and one 2 MiB page covers what 512 small ones do
// (BenchmarkBatch's ReadFilter cases measure it; docs/performance.md).
// The memory comes from the Go heap and is freed by the collector as
// usual; the advice covers the whole huge pages inside it, and only
// matters for pages not yet touched, which a fresh large allocation's are.
func AllocHuge(n int) []byte {
	b := make([]byte, n)
	if n < 4*hugePage {
		return b
	}
	unix.Madvise(hugeRange(b), unix.MADV_HUGEPAGE) // advice: an error changes nothing
	return b
}

// preferHuge asks Linux to back the whole huge pages inside b, fresh memory
// not yet touched (an anonymous mapping about to be filled), with
// transparent huge pages as they are first touched, when b is large enough
// to gain from them (as for AllocHuge).
func preferHuge(b []byte) {
	if len(b) >= 4*hugePage {
		unix.Madvise(hugeRange(b), unix.MADV_HUGEPAGE) // advice: an error changes nothing
	}
}

// hugeRange returns the whole huge pages inside b.
func hugeRange(b []byte) []byte {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	off := int(-start & (hugePage - 1))
	if off >= len(b) {
		return nil
	}
	return b[off : off+(len(b)-off)&^(hugePage-1)]
}

// SettleHuge is called once memory from AllocHuge has been filled: the Go
// heap may have handed out memory it had used before, whose pages were
// touched (zeroed) before the advice and so are small; Linux 6.1 and later
// can collapse them into huge pages now. Best effort: older kernels say no.
func SettleHuge(b []byte) {
	if len(b) >= 4*hugePage {
		unix.Madvise(hugeRange(b), unix.MADV_COLLAPSE)
	}
}

// AdviseHuge asks Linux to back the whole huge pages inside b, memory that
// another part of the program allocated and filled (a filter handed to
// Parse), with transparent huge pages, now: MADV_HUGEPAGE, then
// MADV_COLLAPSE, which copies each page it collapses (docs/performance.md
// says how long that takes). It waits for the copy: done in the background, it kept b from
// the collector for that long, and several at once piled up memory the
// callers had dropped. Only the backing changes, never a byte of b, and
// only for b's own huge pages. Best effort: where the kernel says no
// (before 6.1, memory it cannot collapse), b stays as it was.
func AdviseHuge(b []byte) {
	if len(b) >= 4*hugePage {
		r := hugeRange(b)
		unix.Madvise(r, unix.MADV_HUGEPAGE)
		unix.Madvise(r, unix.MADV_COLLAPSE)
	}
}
