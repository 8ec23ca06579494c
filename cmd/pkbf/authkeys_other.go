//go:build !unix

package main

import (
	"fmt"
	"io"
)

type authLog struct{ stderr io.Writer }

func newAuthLog(stderr io.Writer, mode string) *authLog { return &authLog{stderr: stderr} }

func (lg *authLog) errorf(format string, args ...any) {
	fmt.Fprintf(lg.stderr, "pkbf: error: %s\n", fmt.Sprintf(format, args...))
}

func (lg *authLog) warnf(format string, args ...any) {
	fmt.Fprintf(lg.stderr, "pkbf: warning: %s\n", fmt.Sprintf(format, args...))
}

func (lg *authLog) close() {}
