package mapfile

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Reserve allocates disk space for the first size bytes of file, so that
// a later write through a mapping cannot fail for want of space: it fails
// now, with ENOSPC, instead. File systems that cannot preallocate are left
// as they are. A failed fallocate can keep what it allocated before space
// ran out (ext4 does), which would leave every other writer on the file
// system short: Reserve gives back what was a hole before it, so that a
// failure leaves the file system as it found it. The caller holds the
// file's exclusive lock, so no writer fills those holes meanwhile.
func Reserve(file *os.File, size int64) error {
	fd := int(file.Fd())
	holes := holesOf(fd, size)
	for {
		err := unix.Fallocate(fd, 0, 0, size)
		switch err {
		case nil, unix.EOPNOTSUPP, unix.ENOSYS:
			return nil
		case unix.EINTR:
			continue
		}
		for _, h := range holes {
			unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, h[0], h[1]-h[0])
		}
		return &fs.PathError{Op: "fallocate", Path: file.Name(), Err: err}
	}
}

// holesOf lists the holes in the first size bytes of fd as [start, end)
// pairs, by lseek's SEEK_HOLE and SEEK_DATA; none where the file system
// cannot tell. It moves fd's offset, which pkbf never reads from (it
// reads with ReadAt).
func holesOf(fd int, size int64) [][2]int64 {
	var holes [][2]int64
	for off := int64(0); off < size; {
		start, err := unix.Seek(fd, off, unix.SEEK_HOLE)
		if err != nil || start >= size {
			break
		}
		end, err := unix.Seek(fd, start, unix.SEEK_DATA)
		if err != nil || end > size { // ENXIO: a hole to the end
			end = size
		}
		holes = append(holes, [2]int64{start, end})
		off = end
	}
	return holes
}

// RenameNoReplace renames oldpath to newpath unless newpath exists, in one
// step. File systems without renameat2's RENAME_NOREPLACE fall back to a
// hard link.
func RenameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	switch err {
	case nil:
		return nil
	case unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP:
		return linkNoReplace(oldpath, newpath)
	}
	return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
}
