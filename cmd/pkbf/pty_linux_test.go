//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the master to read what is written to
// the terminal, the slave to write to as stderr.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open slave: %v", err)
	}
	return master, slave
}

// Under a terminal, a check that lasts long enough shows progress on
// stderr, erases it at the end, and never writes it to stdout.
func TestProgressOnTerminal(t *testing.T) {
	master, slave := openPTY(t)
	defer master.Close()
	defer setProgressTiming(20*time.Millisecond, 10*time.Millisecond)()
	var screen bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&screen, master); close(done) }()

	pr, pw := io.Pipe()
	go slowWriter(pw, mustRead(t, key("ed25519.pub")), 30, 10*time.Millisecond)
	var stdout bytes.Buffer
	code := run([]string{"check", exampleFilter}, pr, &stdout, slave)
	slave.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("reading the terminal did not finish")
	}
	got := screen.String()
	if code != 1 || !strings.Contains(got, " keys, ") || !strings.Contains(got, " keys/s") || !strings.HasSuffix(got, "\r\x1b[Kpkbf: checked 30 keys: 30 probably, 0 no\r\n") {
		t.Errorf("exit %d; terminal showed %q; want progress lines, erased at the end", code, got)
	}
	if strings.Contains(got, "% of") {
		t.Errorf("progress shows a percentage for a pipe: %q", got)
	}
	if strings.Contains(stdout.String(), "keys/s") || strings.Count(stdout.String(), "\n") != 30 {
		t.Errorf("stdout %q", stdout.String())
	}
}
