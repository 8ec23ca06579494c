package pkbf

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// anonHugeKB returns the AnonHugePages of the mapping that holds addr, in
// KiB, from /proc/self/smaps.
func anonHugeKB(t *testing.T, addr uintptr) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if rest, ok := strings.CutPrefix(line, "AnonHugePages:"); ok && in {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kb
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return 0
}

// Parse of a filter larger than the caches in the caller's memory asks
// Linux for huge pages under it (issue 44: a 256 MiB filter from Parse
// paid a TLB miss a probe, where ReadFilter's own memory did not), and
// leaves every byte as it was. The memory is a private mapping of its
// own, so that nothing else in the process shares its accounting.
func TestParseAsksForHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !bytes.Contains(mode, []byte("[madvise]")) {
		t.Skipf("transparent huge pages are not in madvise mode here (%q, %v): nothing to tell apart", mode, err)
	}
	h := Header{HashCount: 3, HashLength: 28} // 32 MiB of data
	size := int(h.FileSize()) + 4<<20
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Munmap(mem)
	// The file ends where the mapping does: its data's 2 MiB pages lie
	// inside the mapping, whatever its alignment.
	b := mem[len(mem)-int(h.FileSize()):]
	h.AppendBinary(b[:0])
	for i := offData; i < len(b); i++ {
		b[i] = byte(i * 13)
	}
	addr := uintptr(unsafe.Pointer(&b[len(b)/2]))
	if kb := anonHugeKB(t, addr); kb != 0 {
		t.Skipf("the mapping has %d KiB of huge pages before Parse: nothing to tell apart", kb)
	}
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if kb := anonHugeKB(t, addr); kb < 16<<10 {
		if !canCollapse() {
			t.Skip("this kernel cannot collapse pages into huge pages (before Linux 6.1)")
		}
		t.Errorf("after Parse of a 32 MiB filter, its mapping has %d KiB of huge pages", kb)
	}
	for i := offData; i < len(b); i++ {
		if b[i] != byte(i*13) {
			t.Fatalf("Parse changed byte %d", i)
		}
	}
	if !f.large {
		t.Error("a 32 MiB filter is not large")
	}
}

// canCollapse reports whether madvise(MADV_COLLAPSE) works here, on a
// mapping of its own.
func canCollapse() bool {
	mem, err := unix.Mmap(-1, 0, 8<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return false
	}
	defer unix.Munmap(mem)
	for i := range mem {
		mem[i] = 1
	}
	start := int(-uintptr(unsafe.Pointer(&mem[0])) & (2<<20 - 1))
	return unix.Madvise(mem[start:start+4<<20], unix.MADV_COLLAPSE) == nil
}
