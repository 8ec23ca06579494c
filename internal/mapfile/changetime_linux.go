package mapfile

import (
	"io/fs"
	"syscall"
)

// ChangeTime returns the change time (ctime) of the file fi describes, in
// nanoseconds since 1970: a write to the file sets it, and no writer can
// set it back as it can the modification time. It is 0 where the platform
// does not give it.
func ChangeTime(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return 0
}
