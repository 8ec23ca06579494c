package mapfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Kind names the type of a file for messages: "a directory", "a pipe or
// FIFO", ..., "a regular file".
func Kind(mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return "a regular file"
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeSymlink != 0:
		return "a symbolic link"
	case mode&fs.ModeNamedPipe != 0:
		return "a pipe or FIFO"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file"
}

// maxLinks bounds the symbolic links ReplaceTarget follows, as the
// kernel's ELOOP does.
const maxLinks = 40

// ReplaceTarget returns the path a new file must be renamed to so that it
// replaces path: path itself, or where path is a symbolic link, the file
// the links lead to (which need not exist yet), so that the link stays
// and its target is replaced in its own directory. fi is that file's
// FileInfo, nil if there is none. Anything there other than a regular
// file (a directory, a FIFO, a device, a socket) is refused: an error
// that names it and what it is.
func ReplaceTarget(path string) (target string, fi fs.FileInfo, err error) {
	target = path
	for range maxLinks {
		fi, err := os.Lstat(target)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return target, nil, nil
		case err != nil:
			return "", nil, err
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(target)
			if err != nil {
				return "", nil, err
			}
			if !filepath.IsAbs(link) {
				link = filepath.Join(filepath.Dir(target), link)
			}
			target = link
			continue
		case !fi.Mode().IsRegular():
			where := target
			if where != path {
				where = path + " (a link to " + target + ")"
			}
			return "", nil, fmt.Errorf("%s is %s, not a regular file: it is never replaced", where, Kind(fi.Mode()))
		}
		return target, fi, nil
	}
	return "", nil, &fs.PathError{Op: "resolve", Path: path, Err: errors.New("too many levels of symbolic links")}
}

// TempPrefix is the start of the names of the temporary files made for
// path's new content: ".NAME.tmp-".
func TempPrefix(path string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, "."+base+".tmp-")
}

// CreateTemp creates a new file for path's content under a temporary name
// in the same directory (see [TempPrefix]), with mode 0644 less the
// umask, as os.Create gives, and holds its exclusive flock(2) until it is
// closed, so that [SweepTemps] leaves it alone. It first removes the
// temporary files that writers killed before they finished left beside
// path.
func CreateTemp(path string) (*os.File, error) {
	SweepTemps(path)
	prefix := TempPrefix(path)
	for range 10000 {
		name := prefix + strconv.FormatUint(rand.Uint64(), 36)
		file, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := lock(file, true); err != nil {
			file.Close()
			os.Remove(name)
			return nil, err
		}
		// A sweep may have taken the lock first and removed the name;
		// from now on, locked, the file is safe from sweeps.
		if ours, err := file.Stat(); err == nil {
			if now, err := os.Stat(name); err == nil && os.SameFile(ours, now) {
				return file, nil
			}
		}
		file.Close()
	}
	return nil, &fs.PathError{Op: "create", Path: path, Err: errors.New("no free temporary name beside it")}
}

// SweepTemps removes the temporary files beside path that no writer holds
// (see [CreateTemp]). It returns how many it removed; it never fails, as
// what it cannot remove harms nothing but disk space. Where there is no
// flock(2) it removes nothing, as it cannot tell.
func SweepTemps(path string) int {
	if !haveFlock {
		return 0
	}
	prefix := TempPrefix(path)
	dir := filepath.Dir(prefix)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range entries {
		name := filepath.Join(dir, e.Name())
		if !strings.HasPrefix(name, prefix) || !e.Type().IsRegular() {
			continue
		}
		file, err := os.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if ok, err := tryLock(file); err == nil && ok {
			if os.Remove(name) == nil {
				removed++
			}
			unlock(file)
		}
		file.Close()
	}
	return removed
}
