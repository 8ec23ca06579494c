package pkbfssh

import (
	"os"
	"os/user"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// swapSetup builds the attack report's F1/F2 race for the user nobody:
// a root-only directory priv holding name (made by mk), a decoy
// home/x/name (a regular file nobody may read), home/y a symlink to priv,
// and home/keys a symlink to home/x/name. Exchanging x and y makes the
// same path lead to the decoy or to the root-only file.
func swapSetup(t *testing.T, mk func(path string) error) (home *user.User, keys, x, y, target string) {
	t.Helper()
	dir, u := nobodyIn(t)
	priv := filepath.Join(dir, "priv")
	os.Mkdir(priv, 0o700)
	target = filepath.Join(priv, "f644")
	if err := mk(target); err != nil {
		t.Fatal(err)
	}
	h := filepath.Join(dir, "home")
	x, y = filepath.Join(h, "x"), filepath.Join(h, "y")
	os.MkdirAll(x, 0o755)
	os.Chmod(h, 0o755)
	os.WriteFile(filepath.Join(x, "f644"), []byte("decoy\n"), 0o644)
	os.Symlink(priv, y)
	keys = filepath.Join(h, "keys")
	os.Symlink(filepath.Join(x, "f644"), keys)
	u.HomeDir = h
	return u, keys, x, y, target
}

// swapping exchanges x and y (renameat2 RENAME_EXCHANGE, as the report's
// swapper) until stop is closed or count exchanges are made; wait waits
// for it to end.
func swapping(t *testing.T, x, y string, count int) (stop func()) {
	t.Helper()
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < count && !done.Load(); i++ {
			if err := unix.Renameat2(unix.AT_FDCWD, x, unix.AT_FDCWD, y, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("exchange: %v", err)
				return
			}
		}
	}()
	return func() { done.Store(true); wg.Wait() }
}

// F1: however the user's directories are swapped during the read, pkbf
// never reads a file the user could not read.
func TestReadFileSymlinkSwapNeverReadsRootOnlyFile(t *testing.T) {
	const secret = "ssh-ed25519 AAAA root-only\n"
	home, keys, x, y, _ := swapSetup(t, func(p string) error { return os.WriteFile(p, []byte(secret), 0o644) })
	stop := swapping(t, x, y, 1_000_000)
	defer stop()
	for i := 0; i < 5_000; i++ {
		b, _ := ReadFile(keys, home, Options{IgnoreModes: true})
		if string(b) == secret {
			t.Fatalf("read %d: pkbf read the root-only file through %s", i, keys)
		}
	}
}

// F2: however the user's directories are swapped, pkbf never opens a
// FIFO the user could not open (seen by inotify's IN_OPEN on it).
func TestReadFileSymlinkSwapNeverOpensRootOnlyFIFO(t *testing.T) {
	home, keys, x, y, fifo := swapSetup(t, func(p string) error { return syscall.Mkfifo(p, 0o600) })
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, fifo, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	stop := swapping(t, x, y, 1_000_000)
	for i := 0; i < 5_000; i++ {
		ReadFile(keys, home, Options{IgnoreModes: true})
	}
	stop()
	var buf [4096]byte
	if n, err := unix.Read(in, buf[:]); n > 0 {
		t.Fatalf("pkbf opened the root-only FIFO %s through %s (inotify: %d bytes of IN_OPEN events)", fifo, keys, n)
	} else if err != unix.EAGAIN {
		t.Fatalf("reading inotify events: %v", err)
	}
}
