//go:build unix

package pkbf

import (
	"os"

	"golang.org/x/sys/unix"
)

func flockForTest(f *os.File, exclusive bool) error {
	if exclusive {
		return unix.Flock(int(f.Fd()), unix.LOCK_EX)
	}
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}
