//go:build unix

package main

import (
	"fmt"
	"io"
	"log/syslog"
)

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
