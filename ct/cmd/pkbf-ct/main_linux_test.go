package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/pkbf/pkbf/ct/cttest"
)

// Issue 43, item 6: one interrupt handling, as pkbf's: the first Ctrl-C
// cancels the work (exit 130: TestKilledAndResumed), and the signal then
// has its default action again, so that a second one ends the command at
// once even where it waits on what heeds no context: here a write of a
// hit to standard output, a full pipe nobody reads. The command caught
// every SIGINT after the first, and waited.
func TestSecondInterruptQuits(t *testing.T) {
	bin := build(t)
	fx := cttest.NewFixture(t, 3000, 300, 11)
	dir, srv := serveStatic(t, fx)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const fSetPipeSize = 1031 // F_SETPIPE_SZ
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, w.Fd(), fSetPipeSize, 4096); errno != 0 {
		t.Fatal(errno)
	}
	cmd := exec.Command(bin, "--json", "--kind", "static", "--state", filepath.Join(dir, "state"), fx.Filter, srv.URL)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The pipe full: the command waits in a write (its handler of
	// SIGINT installed long before, when it started).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var n int32
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, r.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
			t.Fatalf("FIONREAD: %v", errno)
		}
		if n > 4096-512 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the pipe holds %d bytes after a minute\n%s", n, stderr.String())
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.After(20 * time.Second)
	for {
		select {
		case err := <-done:
			if code := exitCode(err); code != -int(syscall.SIGINT) {
				t.Errorf("exit %d, want an end by SIGINT\n%s", code, stderr.String())
			}
			return
		case <-tick.C:
			cmd.Process.Signal(syscall.SIGINT)
		case <-giveUp:
			go func() { r.Close() }() // the write fails
			err := <-done
			t.Fatalf("SIGINT after SIGINT did not end the command; with the pipe closed: exit %d\n%s", exitCode(err), stderr.String())
		}
	}
}
