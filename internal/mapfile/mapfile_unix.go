//go:build unix

package mapfile

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/pkbf/pkbf/internal/perr"
	"golang.org/x/sys/unix"
)

// openFlags opens without blocking: opening a FIFO that has no writer
// would otherwise wait for one for ever.
const openFlags = unix.O_NONBLOCK

func (m *File) mmap(writable bool) error {
	prot, length := unix.PROT_READ, m.size
	if writable {
		// Back the whole file now, so that a write to a hole of a sparse
		// file cannot fail later for want of space (a fault, not an error).
		if err := Reserve(m.file, int64(m.size)); err != nil {
			return perr.Errorf("reserving disk space for the whole filter (%d bytes) before editing it in place: %w", m.size, err)
		}
		// Whole 32-bit words: the last may reach past the end of the file
		// but not past its last page, which the kernel maps whole.
		prot, length = unix.PROT_READ|unix.PROT_WRITE, (m.size+3)&^3
	}
	b, err := unix.Mmap(int(m.file.Fd()), 0, length, prot, unix.MAP_SHARED)
	if err != nil {
		if !writable && (err == unix.ENODEV || err == unix.EACCES || err == unix.EINVAL) {
			return m.read()
		}
		return &fs.PathError{Op: "mmap", Path: m.path, Err: err}
	}
	// A query reads a few bytes at random places: reading ahead around
	// each fault (the default) would make every lookup in a filter not
	// in the page cache read tens of pages from the disk for one.
	unix.Madvise(b, unix.MADV_RANDOM) // advice: an error changes nothing
	m.b, m.mapped = b, true
	return nil
}

// copy reads the first m.size bytes of the file into an anonymous
// mapping of its own, outside the Go heap (its memory is returned at
// Close, not at a collection), with huge pages where a large filter
// gains from them, read-only once filled.
func (m *File) copy() error {
	if m.size == 0 {
		return nil
	}
	b, err := unix.Mmap(-1, 0, m.size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return perr.Errorf("allocating %d bytes for a copy of %s: %w", m.size, m.path, err)
	}
	preferHuge(b)
	if _, err := m.file.ReadAt(b, 0); err != nil {
		unix.Munmap(b)
		if err == io.EOF { // cut short since its size was taken
			err = ErrChanging
		}
		return &fs.PathError{Op: "read", Path: m.path, Err: err}
	}
	unix.Mprotect(b, unix.PROT_READ) // a guard: an error changes nothing
	m.b, m.own = b, true
	return nil
}

// stampOf returns what a write to the open file changes.
func stampOf(file *os.File) (stamp, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(file.Fd()), &st); err != nil {
		return stamp{}, &fs.PathError{Op: "fstat", Path: file.Name(), Err: err}
	}
	return stamp{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size, modified: st.Mtim.Nano(), changed: st.Ctim.Nano()}, nil
}

// ReadingAll advises the kernel that the whole mapping is about to be
// read in order (counting bits, copying the filter), so that it reads
// ahead; call the function it returns when done, to go back to random
// reads.
func (m *File) ReadingAll() (done func()) {
	if !m.mapped {
		return func() {}
	}
	unix.Madvise(m.b, unix.MADV_SEQUENTIAL)
	return func() { unix.Madvise(m.b, unix.MADV_RANDOM) }
}

// Sync writes the mapping's changes to the file and waits for them.
func (m *File) Sync() error {
	if !m.mapped {
		return nil
	}
	if err := unix.Msync(m.b, unix.MS_SYNC); err != nil {
		return &fs.PathError{Op: "msync", Path: m.path, Err: err}
	}
	return nil
}

func munmap(b []byte) error { return unix.Munmap(b) }

// haveFlock is true: flock(2) locks files.
const haveFlock = true

func lock(file *os.File, exclusive bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(int(file.Fd()), how); err != nil {
		return &fs.PathError{Op: "flock", Path: file.Name(), Err: err}
	}
	return nil
}

func unlock(file *os.File) { unix.Flock(int(file.Fd()), unix.LOCK_UN) }

func tryLock(file *os.File) (bool, error) { return flockNB(file, unix.LOCK_EX) }

func tryLockShared(file *os.File) (bool, error) { return flockNB(file, unix.LOCK_SH) }

// flockNB takes file's flock(2) how without waiting, and reports whether
// it did: not when another process holds a lock in the way.
func flockNB(file *os.File, how int) (bool, error) {
	err := unix.Flock(int(file.Fd()), how|unix.LOCK_NB)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return false, nil
	}
	return false, &fs.PathError{Op: "flock", Path: file.Name(), Err: err}
}
