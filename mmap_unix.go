//go:build unix

package pkbf

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the first size bytes of file read-only. It falls back to
// reading the file where the file system cannot be mapped.
func mapFile(file *os.File, size int) ([]byte, func() error, error) {
	// A shared lock while mapping, as the reference implementation takes
	// to read, so the checks and the mapping see no half-done change.
	if err := unix.Flock(int(file.Fd()), unix.LOCK_SH); err != nil {
		return nil, nil, &fs.PathError{Op: "flock", Path: file.Name(), Err: err}
	}
	defer unix.Flock(int(file.Fd()), unix.LOCK_UN)
	b, err := unix.Mmap(int(file.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		if err == unix.ENODEV || err == unix.EACCES || err == unix.EINVAL {
			return readFile(file, size)
		}
		return nil, nil, &fs.PathError{Op: "mmap", Path: file.Name(), Err: err}
	}
	return b, func() error { return unix.Munmap(b) }, nil
}
