//go:build unix

package nixbloom

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func init() {
	mkfifo = func(path string) error { return syscall.Mkfifo(path, 0o644) }
}

// Issue 41 follow-up F7: a local read opens the file and then looks at
// what it opened, so a FIFO swapped in for a regular file at any moment is
// refused, never waited on (nor read as an empty file). The test swaps a
// FIFO and a regular file at one name while reading it; a read that waits
// in open(2) is let go by opening the FIFO's other end, and then reads
// nothing, which the test catches.
func TestLocalReadsNeverWaitOnAFIFO(t *testing.T) {
	const reads = 40000 // the old code was caught in 1 of about 4,000
	dir := t.TempDir()
	want := []byte("StoreDir: /nix/store\n")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "x"), want, 0o644)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	c, err := OpenCache(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tt := range []struct {
		name string
		read func() ([]byte, error)
	}{
		{"Cache.readFile", func() ([]byte, error) { return c.readFile(t.Context(), "x", maxCacheInfo) }},
		{"readRegular", func() ([]byte, error) { return readRegular(root, dir, "x", maxCacheInfo) }},
	} {
		stop, swapped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(swapped)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tmp := filepath.Join(dir, ".r")
				if i%2 == 0 {
					os.WriteFile(tmp, want, 0o644)
				} else {
					os.Link(fifo, tmp)
				}
				os.Rename(tmp, filepath.Join(dir, "x"))
			}
		}()
		done := make(chan struct{})
		var wrong []string
		go func() {
			defer close(done)
			for range reads {
				b, err := tt.read()
				switch {
				case err == nil && !bytes.Equal(b, want):
					wrong = append(wrong, fmt.Sprintf("read %q", b))
				case err != nil && !strings.Contains(err.Error(), "not a regular file") && !strings.Contains(err.Error(), "changed while"):
					wrong = append(wrong, err.Error())
				}
			}
		}()
		for waiting := true; waiting; {
			select {
			case <-done:
				waiting = false
			case <-time.After(20 * time.Millisecond):
				// Let go of a read waiting in open(2) on the FIFO.
				if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
			}
		}
		close(stop)
		<-swapped
		if len(wrong) > 0 {
			t.Errorf("%s: %d of %d reads went wrong, such as %s", tt.name, len(wrong), reads, wrong[0])
		}
	}
}
