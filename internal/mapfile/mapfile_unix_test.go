//go:build unix

package mapfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var errFault = errors.New("the test's fault error")

// mapTemp writes content to a new file and maps it.
func mapTemp(t *testing.T, content []byte, writable bool) (*File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := Open(path, writable)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Map(file, path, writable, func() (int, error) { return len(content), nil }, errFault)
	if err != nil {
		file.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, path
}

func TestMapSeesWrites(t *testing.T) {
	content := []byte("0123456789abcdef0123456789")
	m, path := mapTemp(t, content, false)
	if !m.Mapped() || string(m.Bytes()) != string(content) || m.Size() != len(content) || m.Path() != path {
		t.Fatalf("mapped %v, bytes %q, size %d, path %q", m.Mapped(), m.Bytes(), m.Size(), m.Path())
	}
	// Another writer's change shows through a shared mapping.
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteAt([]byte("X"), 3); err != nil {
		t.Fatal(err)
	}
	if m.Bytes()[3] != 'X' {
		t.Errorf("byte 3 is %q after another writer wrote X there", m.Bytes()[3])
	}
}

func TestWritableMapReachesWholeWords(t *testing.T) {
	m, path := mapTemp(t, []byte("0123456789"), true)
	if len(m.Bytes()) != 12 {
		t.Fatalf("writable mapping of 10 bytes is %d bytes, want 12", len(m.Bytes()))
	}
	m.Bytes()[0] = 'W'
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "W123456789" {
		t.Errorf("file holds %q after a write through the mapping, want W123456789", b)
	}
}

func TestMapCheckUnderLock(t *testing.T) {
	for _, writable := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		other, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		file, err := Open(path, writable)
		if err != nil {
			t.Fatal(err)
		}
		var exclusiveRefused, sharedRefused bool
		checkErr := errors.New("check refused")
		_, err = Map(file, path, writable, func() (int, error) {
			exclusiveRefused = unix.Flock(int(other.Fd()), unix.LOCK_EX|unix.LOCK_NB) == unix.EWOULDBLOCK
			sharedRefused = unix.Flock(int(other.Fd()), unix.LOCK_SH|unix.LOCK_NB) == unix.EWOULDBLOCK
			unix.Flock(int(other.Fd()), unix.LOCK_UN)
			return 0, checkErr
		}, errFault)
		if err != checkErr {
			t.Errorf("writable %v: Map returned %v, want the check's error", writable, err)
		}
		if !exclusiveRefused || sharedRefused != writable {
			t.Errorf("writable %v: during check another exclusive lock refused %v, a shared one %v", writable, exclusiveRefused, sharedRefused)
		}
		// The lock is released after Map.
		if err := unix.Flock(int(other.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Errorf("writable %v: lock still held after Map: %v", writable, err)
		}
		other.Close()
		file.Close()
	}
}

func TestFaultGuard(t *testing.T) {
	m, path := mapTemp(t, make([]byte, 3*os.Getpagesize()), false)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	read := func() byte { return m.Bytes()[2*os.Getpagesize()] }

	var err error
	func() {
		defer m.RecoverFault(debug.SetPanicOnFault(true), &err)
		read()
	}()
	if err != errFault {
		t.Errorf("RecoverFault stored %v after a read past the truncated end, want the fault error", err)
	}

	func() {
		defer func() {
			if r := recover(); r != errFault {
				t.Errorf("CatchFault panicked with %v, want the fault error", r)
			}
		}()
		defer m.CatchFault(debug.SetPanicOnFault(true))
		read()
	}()

	// Other panics go on as they were.
	func() {
		defer func() {
			if r := recover(); r != "other" {
				t.Errorf("CatchFault turned panic(\"other\") into %v", r)
			}
		}()
		defer m.RecoverFault(debug.SetPanicOnFault(true), &err)
		panic("other")
	}()
}

func TestRenameNoReplace(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := RenameNoReplace(a, b); !errors.Is(err, fs.ErrExist) {
		t.Errorf("renaming over an existing file: %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(b); string(got) != b {
		t.Errorf("the existing file holds %q after a refused rename", got)
	}
	if err := RenameNoReplace(a, c); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(c); string(got) != a {
		t.Errorf("renamed file holds %q, want %q", got, a)
	}
	if _, err := os.Stat(a); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("old name after a rename: %v, want fs.ErrNotExist", err)
	}
}

// F3 of the sshd attack report: anyone who can open a filter read-only
// can hold its flock(2) exclusively; a reader (Map, Lock(false)) then
// goes on without the lock after SharedLockWait instead of waiting for
// ever. The watchdog only catches the hang: its bound is no assertion on
// how long the reader took.
func TestReadersDoNotWaitForeverOnAHeldLock(t *testing.T) {
	content := []byte("0123456789abcdef")
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, content, 0o644); err != nil {
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
		file, err := Open(path, false)
		if err != nil {
			done <- err
			return
		}
		m, err := Map(file, path, false, func() (int, error) { return len(content), nil }, errFault)
		if err != nil {
			file.Close()
			done <- err
			return
		}
		defer m.Close()
		if string(m.Bytes()) != string(content) {
			done <- errors.New("mapped " + string(m.Bytes()))
			return
		}
		if err := m.Lock(false); err != nil {
			done <- err
			return
		}
		m.Unlock()
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("a reader is still waiting for the shared lock another process holds exclusively")
	}
}

// copyTemp writes content to a new file and copies it.
func copyTemp(t *testing.T, content []byte) (*File, string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := Open(path, false)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Copy(file, path, func() (int, error) { return len(content), nil })
	if err != nil {
		file.Close()
		return nil, path, err
	}
	t.Cleanup(func() { m.Close() })
	return m, path, nil
}

// A copy is the file as it was read: a write to the file afterwards, in
// place, changes none of its bytes (Issue 48, item 7), and the file
// itself is still there to be checked (ReadStart).
func TestCopyIsItsOwn(t *testing.T) {
	content := []byte("0123456789abcdef0123456789")
	m, path, err := copyTemp(t, content)
	if err != nil {
		t.Fatal(err)
	}
	if m.Mapped() || string(m.Bytes()) != string(content) || m.Size() != len(content) {
		t.Fatalf("mapped %v, bytes %q, size %d", m.Mapped(), m.Bytes(), m.Size())
	}
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteAt([]byte("XYZ"), 0); err != nil {
		t.Fatal(err)
	}
	if string(m.Bytes()) != string(content) {
		t.Errorf("the copy is %q after another writer wrote XYZ over the file", m.Bytes())
	}
	start := make([]byte, 4)
	if err := m.ReadStart(start); err != nil || string(start) != "XYZ3" {
		t.Errorf("ReadStart = %q, %v; want the file as it is now", start, err)
	}
}

// A writer at work while the file is copied (one that takes no lock, as
// cp and dd do): Copy returns ErrChanging, naming the file, instead of a
// copy with some of the writer's bytes and not others.
func TestCopyRefusesAFileWrittenWhileRead(t *testing.T) {
	content := []byte("0123456789abcdef0123456789")
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	afterRead = func() {
		if err := os.WriteFile(path, []byte("0123456789ABCDEF0123456789"), 0o644); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterRead = nil }()
	file, err := Open(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	m, err := Copy(file, path, func() (int, error) { return len(content), nil })
	if err == nil {
		m.Close()
		t.Fatal("Copy took a file written while it was read")
	}
	if !errors.Is(err, ErrChanging) || !strings.Contains(err.Error(), path) {
		t.Errorf("Copy: %v, want ErrChanging naming the file", err)
	}
	afterRead = nil
	if m, err := Copy(file, path, func() (int, error) { return len(content), nil }); err != nil || string(m.Bytes()) != "0123456789ABCDEF0123456789" {
		t.Errorf("Copy once the writer is done: %v", err)
	} else {
		m.free()
	}
}
