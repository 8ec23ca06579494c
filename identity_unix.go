//go:build unix

package pkbf

import (
	"io/fs"
	"syscall"
)

// fileIdentity returns the device and inode of a file.
func fileIdentity(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
