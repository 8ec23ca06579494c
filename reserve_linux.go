package pkbf

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// reserve allocates disk space for the first size bytes of file, so that
// a later write through a mapping cannot fail for want of space: it fails
// now, with ENOSPC, instead. File systems that cannot preallocate are left
// as they are.
func reserve(file *os.File, size int64) error {
	for {
		err := unix.Fallocate(int(file.Fd()), 0, 0, size)
		switch err {
		case nil, unix.EOPNOTSUPP, unix.ENOSYS:
			return nil
		case unix.EINTR:
			continue
		}
		return &fs.PathError{Op: "fallocate", Path: file.Name(), Err: err}
	}
}

// renameNoReplace renames oldpath to newpath unless newpath exists, in one
// step. File systems without renameat2's RENAME_NOREPLACE fall back to a
// hard link.
func renameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	switch err {
	case nil:
		return nil
	case unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP:
		return linkNoReplace(oldpath, newpath)
	}
	return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
}
