package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/term"
)

// screen coordinates everything the command writes: verdicts on stdout,
// errors and the progress line on stderr. When they share a terminal (the
// usual interactive case), the progress line is erased before anything
// else is written, so a verdict never lands in the middle of it, and it
// is redrawn by the next tick. On a terminal, verdicts are flushed line
// by line; elsewhere they are buffered and flushed when the input idles.
type screen struct {
	mu       sync.Mutex
	stdout   io.Writer
	stderr   io.Writer
	out      *bufio.Writer
	perLine  bool // stdout is a terminal
	progress bool // stderr is a terminal: progress may be shown
	shown    bool // the progress line is on the screen
}

// isTerminal reports whether w is a terminal; a variable so tests can
// point it at a pseudo-terminal of their own.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalWidth is the width of the terminal w, or 80.
var terminalWidth = func(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
			return width
		}
	}
	return 80
}

func newScreen(stdout, stderr io.Writer) *screen {
	return &screen{stdout: stdout, stderr: stderr, out: bufio.NewWriterSize(stdout, 64<<10),
		perLine: isTerminal(stdout), progress: isTerminal(stderr)}
}

// eraseLocked removes the progress line; mu is held.
func (s *screen) eraseLocked() {
	if s.shown {
		io.WriteString(s.stderr, "\r\033[K")
		s.shown = false
	}
}

// write writes one verdict line to stdout.
func (s *screen) write(line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perLine {
		s.eraseLocked()
	}
	if _, err := s.out.Write(line); err != nil {
		return err
	}
	if s.perLine {
		return s.out.Flush()
	}
	return nil
}

// flush writes out the verdicts buffered.
func (s *screen) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Flush()
}

// message writes a line to stderr, after the verdicts before it, with the
// progress line out of the way.
func (s *screen) message(prefix, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eraseLocked()
	s.out.Flush() // on a shared terminal, keep the order of what happened
	fmt.Fprintf(s.stderr, prefix+format+"\n", args...)
}

func (s *screen) errorf(format string, args ...any) { s.message("pkbf: error: ", format, args...) }
func (s *screen) warnf(format string, args ...any)  { s.message("pkbf: warning: ", format, args...) }

// showProgress draws the progress line, cut to the terminal's width so
// that it never wraps.
func (s *screen) showProgress(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if width := terminalWidth(s.stderr) - 1; len(text) > width {
		text = text[:max(width, 0)]
	}
	io.WriteString(s.stderr, "\r\033[K"+text)
	s.shown = true
}

// eraseProgress removes the progress line.
func (s *screen) eraseProgress() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eraseLocked()
}
