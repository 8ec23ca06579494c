package pkbf

import (
	"os"

	"golang.org/x/sys/unix"
)

// punchHole deallocates f's first n bytes, its size kept (fallocate
// --punch-hole): they read as zeros after.
func punchHole(f *os.File, n int64) error {
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, n)
}
