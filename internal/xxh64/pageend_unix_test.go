//go:build unix

package xxh64

import (
	"testing"

	"golang.org/x/sys/unix"
)

func pageEndOS(t *testing.T, n int) []byte {
	page := unix.Getpagesize()
	size := (n + page - 1) / page * page
	m, err := unix.Mmap(-1, 0, size+page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	if err := unix.Mprotect(m[size:], unix.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	b := m[size-n : size : size]
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}
