package pkbfssh

import (
	"errors"
	"io/fs"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/pkbf/pkbf/internal/perr"
)

// errNoSwitch: pkbf may not take another user's rights (no CAP_SETGID).
var errNoSwitch = errors.New("cannot take another user's rights")

// openAsUser opens path, a regular file, with the rights of the user id,
// name: as pkbf when pkbf runs as the user; else on a thread that takes
// the user's filesystem credentials and ends with the open (see the top of
// file_unix.go); else, when pkbf may not switch, with pkbf's rights after
// checking the mode bits (openChecked).
func openAsUser(path string, id ids, name string) (*os.File, error) {
	if uint32(os.Geteuid()) == id.uid {
		return openRegular(path)
	}
	type result struct {
		file *os.File
		err  error
	}
	done := make(chan result, 1)
	go func() {
		// Never unlocked: the thread, with the user's credentials, exits
		// with this goroutine instead of running other goroutines.
		runtime.LockOSThread()
		if err := takeRights(id); err != nil {
			done <- result{err: err}
			return
		}
		file, err := openRegular(path)
		done <- result{file, err}
	}()
	r := <-done
	switch {
	case errors.Is(r.err, errNoSwitch):
		return openChecked(path, id, name)
	case errors.Is(r.err, fs.ErrPermission):
		var pe *fs.PathError
		if errors.As(r.err, &pe) {
			return nil, perr.Errorf("user %s may not read %s (%s: %w)", name, path, pe.Op, pe.Err)
		}
		return nil, perr.Errorf("user %s may not read %s: %w", name, path, r.err)
	}
	return r.file, r.err
}

// takeRights gives the calling thread, locked to it, the filesystem
// credentials of id (its groups, gid and uid, in that order: setgroups and
// setfsgid need CAP_SETGID, which setfsuid to another uid drops) and no
// effective capability (setfsuid keeps CAP_SYS_PTRACE, which would let
// the thread read another root process's /proc files). The system calls
// act on this thread only (golang.org/x/sys/unix, unlike package syscall,
// does not apply them to all threads).
func takeRights(id ids) error {
	groups := make([]int, len(id.groups))
	for i, g := range id.groups {
		groups[i] = int(g)
	}
	if err := unix.Setgroups(groups); err != nil {
		if errors.Is(err, unix.EPERM) {
			return errNoSwitch
		}
		return perr.Errorf("setgroups: %w", err)
	}
	unix.SetfsgidRetGid(int(id.groups[0]))
	unix.SetfsuidRetUid(int(id.uid))
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3} // Pid 0: this thread
	var caps [2]unix.CapUserData
	err := unix.Capget(&hdr, &caps[0])
	if err == nil {
		caps[0].Effective, caps[1].Effective = 0, 0
		err = unix.Capset(&hdr, &caps[0])
	}
	if err == nil {
		err = unix.Capget(&hdr, &caps[0])
	}
	// An invalid id (-1) changes nothing and returns the current one.
	gid, _ := unix.SetfsgidRetGid(-1)
	uid, _ := unix.SetfsuidRetUid(-1)
	if err != nil || uint32(gid) != id.groups[0] || uint32(uid) != id.uid || caps[0].Effective|caps[1].Effective != 0 {
		return perr.Errorf("could not take uid %d and gid %d to read the user's file (fsuid %d, fsgid %d, capabilities %v)", id.uid, id.groups[0], uid, gid, err)
	}
	return nil
}
