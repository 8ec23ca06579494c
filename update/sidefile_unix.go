//go:build unix

package update

import (
	"os"
	"syscall"

	"github.com/pkbf/pkbf/internal/perr"
)

// oNoFollow makes an open fail on a symbolic link.
const oNoFollow = syscall.O_NOFOLLOW

// oNonBlock keeps an open from waiting: on a FIFO, for the other end.
const oNonBlock = syscall.O_NONBLOCK

// hardLinks is the number of names the file fi describes has.
func hardLinks(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// checkDir refuses a directory that a user other than root and this
// process's own can write: that user could plant links named as the files
// Update keeps there, or swap the filter for a link, and have this
// process write where they cannot.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return perr.Errorf("update: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case ok && st.Uid != 0 && int(st.Uid) != os.Geteuid():
		return perr.Errorf("update: the directory %s belongs to user %d, not to root or this user: whoever owns it could make this update write elsewhere through links; keep the filter in a directory of its own", dir, st.Uid)
	case fi.Mode().Perm()&0o022 != 0:
		return perr.Errorf("update: the directory %s is writable by others (mode %04o): anyone who can write it could make this update write elsewhere through links; keep the filter in a directory only its owner can write", dir, fi.Mode().Perm())
	}
	return nil
}
