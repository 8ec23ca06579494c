//go:build !unix

package mapfile

import (
	"errors"
	"os"

	"github.com/pkbf/pkbf/internal/perr"
)

const openFlags = 0

// mmap reads the file: this platform has no mmap or flock here, and
// editing in place needs both.
func (m *File) mmap(writable bool) error {
	if writable {
		return perr.Errorf("editing %s in place needs a Unix system: %w", m.path, errors.ErrUnsupported)
	}
	return m.read()
}

// copy reads the file into memory: this platform has no mmap here.
func (m *File) copy() error {
	if err := m.read(); err != nil {
		return err
	}
	m.own = false // Go's memory: the collector frees it
	return nil
}

// stampOf returns what a write to the open file changes: here its size
// and modification time.
func stampOf(file *os.File) (stamp, error) {
	fi, err := file.Stat()
	if err != nil {
		return stamp{}, err
	}
	return stamp{size: fi.Size(), modified: fi.ModTime().UnixNano()}, nil
}

// ReadingAll does nothing: nothing is mapped.
func (m *File) ReadingAll() (done func()) { return func() {} }

// Sync does nothing: nothing is mapped.
func (m *File) Sync() error { return nil }

func munmap([]byte) error { return nil }

// haveFlock is false: there are no file locks here.
const haveFlock = false

func lock(*os.File, bool) error { return nil }

func unlock(*os.File) {}

func tryLock(*os.File) (bool, error) { return true, nil }

func tryLockShared(*os.File) (bool, error) { return true, nil }
