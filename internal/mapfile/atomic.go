package mapfile

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// WriteAtomic puts what write writes at path, replacing the file there
// (whose mode it keeps) or making one with mode 0644. A symbolic link at
// path stays, and the file it leads to is replaced; a directory, FIFO or
// device there is refused.
func WriteAtomic(path string, write func(io.Writer) error, synced func()) error {
	target, fi, err := ReplaceTarget(path)
	if err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if fi != nil {
		mode = fi.Mode().Perm()
	}
	return MakeAtomic(target, false, func(tmp *os.File) error {
		bw := bufio.NewWriterSize(tmp, 1<<20)
		if err := write(bw); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return tmp.Chmod(mode)
	}, synced)
}

// MakeAtomic gives path its content in one step: fill writes it to a
// new file under a temporary name in the same directory (.NAME.tmp-*),
// which is then synced, closed and renamed to path, and the directory
// synced. With noReplace the rename refuses an existing path, at that
// moment (errors.Is(err, fs.ErrExist)). A failure removes the temporary
// file; one left by a writer that was killed is removed by a later call
// (see CreateTemp). synced, if not nil, is called once the
// temporary file is synced, before the rename.
func MakeAtomic(path string, noReplace bool, fill func(tmp *os.File) error, synced func()) (err error) {
	tmp, err := CreateTemp(path)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := fill(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if synced != nil {
		synced() // tests crash here
	}
	// Renamed while still open, and so locked, where the system allows:
	// a sweep (SweepTemps) removes only unlocked files.
	closeFirst := runtime.GOOS == "windows" // no rename of an open file
	if closeFirst {
		if err := tmp.Close(); err != nil {
			return err
		}
	}
	if err := rename(tmp.Name(), path, noReplace); err != nil {
		return err
	}
	if !closeFirst {
		if err := tmp.Close(); err != nil {
			return err
		}
	}
	return SyncDir(filepath.Dir(path))
}

// Rename gives the complete file at from (synced, as MakeAtomic's are)
// the name to, in the same directory, and syncs the directory: readers
// see the old file or this one. With noReplace it refuses an existing to,
// at that moment (errors.Is(err, fs.ErrExist)).
func Rename(from, to string, noReplace bool) error {
	if err := rename(from, to, noReplace); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(to))
}

// rename is os.Rename, or RenameNoReplace with an error naming to.
func rename(from, to string, noReplace bool) error {
	if !noReplace {
		return os.Rename(from, to)
	}
	if err := RenameNoReplace(from, to); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return &fs.PathError{Op: "create", Path: to, Err: fs.ErrExist}
		}
		return err
	}
	return nil
}
