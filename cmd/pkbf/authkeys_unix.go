//go:build unix

package main

import (
	"fmt"
	"io"
	"io/fs"
	"log/syslog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// securePath makes sshd's StrictModes checks (auth_secure_path in
// OpenSSH's misc.c): the file, and every directory above it up to the
// user's home directory (or up to / for a file outside it), must be owned
// by the user or root and writable by neither group nor others.
func securePath(path string, fi fs.FileInfo, u *user.User) error {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return fmt.Errorf("user %s has uid %q", u.Username, u.Uid)
	}
	bad := func(fi fs.FileInfo) bool {
		st, ok := fi.Sys().(*syscall.Stat_t)
		return !ok || (uint64(st.Uid) != 0 && uint64(st.Uid) != uid) || fi.Mode().Perm()&0o022 != 0
	}
	if bad(fi) {
		return fmt.Errorf("bad ownership or modes for file %s", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	home := filepath.Clean(u.HomeDir)
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if bad(fi) {
			return fmt.Errorf("bad ownership or modes for directory %s", dir)
		}
		if dir == home || dir == filepath.Dir(dir) {
			return nil
		}
	}
}

// authLog writes authorized-keys' messages to standard error, which sshd
// passes on to its own, and to syslog's auth facility, where sshd's own
// messages go when it runs as a daemon.
type authLog struct {
	stderr io.Writer
	sys    *syslog.Writer
}

func newAuthLog(stderr io.Writer, mode string) *authLog {
	lg := &authLog{stderr: stderr}
	if mode == "off" {
		return lg
	}
	w, err := syslog.New(syslog.LOG_AUTH|syslog.LOG_WARNING, "pkbf")
	if err != nil {
		if mode == "on" {
			fmt.Fprintf(stderr, "pkbf: warning: no syslog: %v\n", err)
		}
		return lg
	}
	lg.sys = w
	return lg
}

func (lg *authLog) errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(lg.stderr, "pkbf: error: %s\n", msg)
	if lg.sys != nil {
		lg.sys.Err(msg)
	}
}

func (lg *authLog) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(lg.stderr, "pkbf: warning: %s\n", msg)
	if lg.sys != nil {
		lg.sys.Warning(msg)
	}
}

func (lg *authLog) close() {
	if lg.sys != nil {
		lg.sys.Close()
	}
}
