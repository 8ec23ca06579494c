//go:build unix

package pkbf

import (
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openFlags opens a filter without blocking: opening a FIFO that has no
// writer would otherwise wait for one for ever.
const openFlags = unix.O_NONBLOCK

// mapFile validates the regular file and maps it, read-only or, for
// editing in place, writable. Everything happens under a shared flock(2),
// the lock the reference implementation takes to read, so no writer that
// follows the protocol is half-way through a change: the header read is
// consistent with the data mapped. For editing the lock is exclusive, as
// reserving space (and giving it back if that fails) must not race another
// writer. Where the file system cannot be mapped, a read-only filter is
// read into memory instead.
func mapFile(file *os.File, path string, writable bool) (*mapping, error) {
	if err := lockFile(file, writable); err != nil {
		return nil, err
	}
	defer unlockFile(file)
	h, size, err := checkFile(file, path)
	if err != nil {
		return nil, err
	}
	m := &mapping{file: file, path: path, opened: h, size: size}
	prot, length := unix.PROT_READ, size
	if writable {
		// Back the whole file now, so that a write to a hole of a sparse
		// file cannot fail later for want of space (a fault, not an error).
		if err := reserve(file, int64(size)); err != nil {
			return nil, fmt.Errorf("pkbf: reserving disk space for the whole filter (%d bytes) before editing it in place: %w", size, err)
		}
		// Whole 32-bit words: the last may reach past the end of the file
		// but not past its last page, which the kernel maps whole.
		prot, length = unix.PROT_READ|unix.PROT_WRITE, (size+3)&^3
	}
	b, err := unix.Mmap(int(file.Fd()), 0, length, prot, unix.MAP_SHARED)
	if err != nil {
		if !writable && (err == unix.ENODEV || err == unix.EACCES || err == unix.EINVAL) {
			m.b, err = readFile(file, size)
			return m, err
		}
		return nil, &fs.PathError{Op: "mmap", Path: path, Err: err}
	}
	m.b, m.unmap = b, true
	return m, nil
}

func munmap(b []byte) error { return unix.Munmap(b) }

// lockFile takes the file's flock(2), shared or exclusive; unlockFile
// releases it.
func lockFile(file *os.File, exclusive bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(int(file.Fd()), how); err != nil {
		return &fs.PathError{Op: "flock", Path: file.Name(), Err: err}
	}
	return nil
}

func unlockFile(file *os.File) { unix.Flock(int(file.Fd()), unix.LOCK_UN) }
