//go:build !unix

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/user"
)

// securePath: sshd's StrictModes are Unix ownership and modes.
func securePath(path string, fi fs.FileInfo, u *user.User) error {
	return errors.New("--strict-modes needs Unix file ownership: give --strict-modes=false")
}

type authLog struct{ stderr io.Writer }

func newAuthLog(stderr io.Writer, mode string) *authLog { return &authLog{stderr: stderr} }

func (lg *authLog) errorf(format string, args ...any) {
	fmt.Fprintf(lg.stderr, "pkbf: error: %s\n", fmt.Sprintf(format, args...))
}

func (lg *authLog) warnf(format string, args ...any) {
	fmt.Fprintf(lg.stderr, "pkbf: warning: %s\n", fmt.Sprintf(format, args...))
}

func (lg *authLog) close() {}
