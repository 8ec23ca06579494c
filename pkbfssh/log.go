package pkbfssh

import (
	"fmt"
	"io"
	"sync"
)

// A Log writes a [Gate]'s messages where sshd's own go: to w, which sshd
// passes on to its log, one line each ("NAME: error: ..." or "NAME:
// warning: ..."), and on Unix also to syslog's auth facility under the
// tag NAME, where sshd logs when it runs as a daemon. Its Log method is a
// Gate's Log. It is safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	name string
	w    io.Writer
	sys  syslogWriter // nil: no syslog
}

// NewLog returns a Log writing to w, and to syslog as mode says: "auto"
// when a syslog socket exists, "on" the same but saying on w when there is
// none, "off" never. Call Close when done.
func NewLog(w io.Writer, name, mode string) *Log {
	l := &Log{name: name, w: w}
	if mode == "off" {
		return l
	}
	sys, err := openSyslog(name)
	if err != nil {
		if mode == "on" {
			fmt.Fprintf(w, "%s: warning: no syslog: %v\n", name, err)
		}
		return l
	}
	l.sys = sys
	return l
}

// Log writes msg as a warning or an error.
func (l *Log) Log(warning bool, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	level := "error"
	if warning {
		level = "warning"
	}
	fmt.Fprintf(l.w, "%s: %s: %s\n", l.name, level, msg)
	if l.sys == nil {
		return
	}
	if warning {
		l.sys.Warning(msg)
	} else {
		l.sys.Err(msg)
	}
}

// Close closes the connection to syslog, if any.
func (l *Log) Close() error {
	if l.sys == nil {
		return nil
	}
	return l.sys.Close()
}

// syslogWriter is what a Log needs of log/syslog's Writer.
type syslogWriter interface {
	Err(string) error
	Warning(string) error
	Close() error
}
