//go:build unix

package pkbf

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// F3 of the sshd attack report: with another process holding the current
// file's flock(2) exclusively (anyone who can read the filter can), a
// Live filter still switches to a new file renamed over the path, and a
// new Open still opens; before, Reload blocked in the old file's header
// check, holding the reload mutex, and the compromised key of the new file
// was accepted for as long as the lock was held. The watchdog only catches
// that hang; its bound is no assertion on how long anything took.
func TestLiveSwitchesWhileOldFileLockHeld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	writeVersion(t, path, 1)
	l, err := OpenLive(path, LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	holder, err := os.Open(path) // as `flock -x FILTER sleep 40` does
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := unix.Flock(int(holder.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		if err := l.Reload(); err != nil { // the same file, locked
			done <- err
			return
		}
		f, err := Open(path) // a new reader of the locked file
		if err != nil {
			done <- err
			return
		}
		if err := f.FileChanged(); err != nil {
			done <- err
			return
		}
		f.Close()
		writeVersion(t, path, 2)
		done <- l.Reload()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Reload or Open is still waiting on the lock another process holds")
	}
	if st := l.Stats(); st.Reloads != 1 || st.Header.EntryCount != 4 || !l.Probably([]byte("marker 2")) {
		t.Errorf("after a new file was renamed over the locked one: %+v", st)
	}
	l.Close() // not deferred: after a hang it would wait for the reload
}
