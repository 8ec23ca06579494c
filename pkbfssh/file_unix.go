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

// A user's file is read with pkbf's rights, after checking that the user
// could read it: the mode bits of the file and the search bits of every
// directory of its resolved path, for the user's uid, gid and groups, as
// the kernel would check them for a process of the user. A helper process
// under the user's uid would follow ACLs too, but costs a fork and exec
// per file on every login (pkbf authorized-keys takes about 6 ms in all);
// switching a thread's fsuid is Linux-only. What the mode bits allow and
// an ACL denies is the one difference, and it is only ever the user's own
// setting.

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
	more, _ := u.GroupIds() // without them, fewer files are readable: fails closed
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
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, perr.Errorf("%s is not a regular file", path) // a FIFO or device is never opened
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	file := os.NewFile(uintptr(fd), path)
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
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, err
	}
	if rfi, err := os.Stat(real); err != nil || !os.SameFile(fi, rfi) {
		return nil, perr.Errorf("%s changed while it was read", path)
	}
	if err := mayRead(real, fi, id, u.Username); err != nil {
		return nil, err
	}
	if !opts.IgnoreModes {
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
