//go:build unix

package pkbfssh

import (
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/pkbf/pkbf/internal/perr"
)

// A user's file is opened with the user's rights. On Linux, pkbf running
// as root opens it on a thread of its own that has taken the user's
// filesystem uid, gid and groups (setfsuid, setfsgid, setgroups: per
// thread, as sshd's temporarily_use_uid), so that the kernel decides, once,
// on the path as it resolves it then: mode bits, ACLs, /proc's ptrace
// checks. The thread is never given back to the scheduler: it ends with its
// goroutine. Where pkbf cannot take the user's rights (another system, or a
// command user that is neither root nor the user), it checks the mode bits
// of the file and the search bits of every directory of its resolved path
// for the user's uid, gid and groups instead; that check walks the path
// again after the open, so a user who swaps a directory at the right moment
// can pass it with a file only the command user can read.

// ids are a user's credentials, as the kernel checks them.
type ids struct {
	uid    uint32
	groups []uint32 // the primary group first
}

func lookupIDs(u *user.User) (ids, error) {
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return ids{}, perr.Errorf("user %s has uid %q and gid %q", u.Username, u.Uid, u.Gid)
	}
	id := ids{uid: uint32(uid), groups: []uint32{uint32(gid)}}
	// Without its supplementary groups a user falls through to the others'
	// bits, which may grant what a group's deny (mode 0604): no guess.
	more, err := u.GroupIds()
	if err != nil {
		return ids{}, perr.Errorf("the groups of user %s: %w", u.Username, err)
	}
	for _, g := range more {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			id.groups = append(id.groups, uint32(n))
		}
	}
	return id, nil
}

// permits reports whether the mode bits let id do what (4 read, 1
// search): the owner's bits for the owner, else the group's for a member,
// else the others'.
func (id ids) permits(fi fs.FileInfo, what fs.FileMode) bool {
	if id.uid == 0 {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	mode := fi.Mode().Perm()
	switch {
	case uint32(st.Uid) == id.uid:
		return mode>>6&what != 0
	case slices.Contains(id.groups, uint32(st.Gid)):
		return mode>>3&what != 0
	}
	return mode&what != 0
}

func readFile(path string, u *user.User, opts Options) ([]byte, error) {
	id, err := lookupIDs(u)
	if err != nil {
		return nil, err
	}
	file, err := openAsUser(path, id, u.Username)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, perr.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > opts.MaxSize {
		return nil, perr.Errorf("%s is %d bytes, over the limit of %d", path, fi.Size(), opts.MaxSize)
	}
	if !opts.IgnoreModes {
		real, err := resolved(path, fi)
		if err != nil {
			return nil, err
		}
		if err := safePath(real, fi, id.uid, u.HomeDir); err != nil {
			return nil, err
		}
	}
	b, err := io.ReadAll(io.LimitReader(file, opts.MaxSize+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > opts.MaxSize {
		return nil, perr.Errorf("%s grew over the limit of %d bytes", path, opts.MaxSize)
	}
	return b, nil
}

// openRegular opens path, with the rights of the calling thread, if it is
// a regular file: a FIFO or device is never opened, and the open does not
// block.
func openRegular(path string) (*os.File, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, perr.Errorf("%s is not a regular file", path)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// resolved returns the absolute path with its symlinks resolved of the
// file fi opened at path, or an error if that names another file now.
func resolved(path string, fi fs.FileInfo) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", err
	}
	if rfi, err := os.Stat(real); err != nil || !os.SameFile(fi, rfi) {
		return "", perr.Errorf("%s changed while it was read", path)
	}
	return real, nil
}

// openChecked opens path with pkbf's rights, for the user id, name whose
// rights pkbf cannot take: only a regular file, and only if the mode bits
// let the user read it (mayRead).
func openChecked(path string, id ids, name string) (*os.File, error) {
	file, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	fi, err := file.Stat()
	if err == nil {
		var real string
		if real, err = resolved(path, fi); err == nil {
			err = mayRead(real, fi, id, name)
		}
	}
	if err != nil {
		file.Close()
		return nil, err
	}
	return file, nil
}

// mayRead checks that the user could read the file at the resolved path
// real: read permission on it, search permission on every directory
// above it.
func mayRead(real string, fi fs.FileInfo, id ids, name string) error {
	if !id.permits(fi, 4) {
		return perr.Errorf("user %s may not read %s (mode %v)", name, real, fi.Mode().Perm())
	}
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		di, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if !id.permits(di, 1) {
			return perr.Errorf("user %s may not read %s: no search permission on %s (mode %v)", name, real, dir, di.Mode().Perm())
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
	}
}

// safePath makes sshd's StrictModes checks (safe_path in OpenSSH's
// misc.c) on the resolved path real: the file, and every directory above
// it up to the user's resolved home directory (or up to / for a file
// outside it), must be owned by the user or root and writable by neither
// group nor others.
func safePath(real string, fi fs.FileInfo, uid uint32, home string) error {
	bad := func(fi fs.FileInfo) bool {
		st, ok := fi.Sys().(*syscall.Stat_t)
		return !ok || (uint32(st.Uid) != 0 && uint32(st.Uid) != uid) || fi.Mode().Perm()&0o022 != 0
	}
	if bad(fi) {
		return perr.Errorf("bad ownership or modes for file %s", real)
	}
	home, err := filepath.EvalSymlinks(home)
	compareHome := err == nil
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		di, err := os.Stat(dir)
		if err != nil || bad(di) {
			return perr.Errorf("bad ownership or modes for directory %s", dir)
		}
		if compareHome && dir == home || dir == filepath.Dir(dir) {
			return nil
		}
	}
}
