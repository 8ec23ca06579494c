package ct

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// writeAtomic replaces the file at path with b in one step: b goes to a
// new file in the same directory, which is synced and renamed over path,
// and the directory synced, so that a crash at any moment leaves the old
// state or the new one. A symbolic link at path stays, and the file it
// leads to is replaced; anything but a regular file there is refused. The
// file keeps its mode, or gets 0644.
//
// The scan's state is the package's own small file, not a filter: it is
// written here rather than by the main module's file machinery, which is
// internal to that module.
func writeAtomic(path string, b []byte) (err error) {
	mode := fs.FileMode(0o644)
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file (%s): the state is not written there", path, fi.Mode().Type())
		}
		mode = fi.Mode().Perm()
	} else if !os.IsNotExist(err) {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}
