package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pkbf/pkbf/internal/testkit"
)

// Without a terminal on stderr there is no progress display.
func TestNoProgressWithoutTerminal(t *testing.T) {
	defer setProgressTiming(0, time.Millisecond)()
	pr, pw := io.Pipe()
	go slowWriter(pw, testkit.ReadFile(t, key("ed25519.pub")), 40, 5*time.Millisecond)
	r := runWith(t, pr, "check", exampleFilter)
	if r.stderr != "pkbf: checked 40 keys: 40 probably, 0 no\n" || strings.Contains(r.stdout, "keys/s") || strings.Count(r.stdout, "\n") != 40 {
		t.Errorf("stderr %q, stdout %q", r.stderr, r.stdout)
	}
}

func setProgressTiming(delay, every time.Duration) (restore func()) {
	d, e := progressDelay, progressEvery
	progressDelay, progressEvery = delay, every
	return func() { progressDelay, progressEvery = d, e }
}

// slowWriter writes data n times, pausing between writes, then closes.
func slowWriter(w *io.PipeWriter, data []byte, n int, pause time.Duration) {
	for range n {
		if _, err := w.Write(data); err != nil {
			return
		}
		time.Sleep(pause)
	}
	w.Close()
}

// The progress line shows keys done and the rate in human units and, for
// regular files, the share of bytes read; the screen cuts it to the
// terminal's width and erases it.
func TestProgressLine(t *testing.T) {
	p := &progress{started: time.Now().Add(-2 * time.Second), total: 3 << 30, what: "keys"}
	p.keys.Store(123456)
	p.bytes.Store(3 << 28)
	if got := p.text(); !regexp.MustCompile(`^123\.5k keys, 6\d\.\dk keys/s, 25% of 3 GiB$`).MatchString(got) {
		t.Errorf("progress line %q", got)
	}
	var buf bytes.Buffer
	scr := &screen{stderr: &buf, progress: true}
	defer func(w func(io.Writer) int) { terminalWidth = w }(terminalWidth)
	terminalWidth = func(io.Writer) int { return 20 }
	scr.showProgress(p.text())
	scr.eraseProgress()
	if got := buf.String(); got != "\r\x1b[K123.5k keys, 61.\r\x1b[K" && !regexp.MustCompile(`^\r\x1b\[K.{19}\r\x1b\[K$`).MatchString(got) {
		t.Errorf("screen wrote %q: want the line cut to 19 columns, then erased", got)
	}
}
