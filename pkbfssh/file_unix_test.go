//go:build unix

package pkbfssh

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestExpandPath(t *testing.T) {
	u := &user.User{Username: "alice", Uid: "1000", HomeDir: "/home/alice"}
	for pattern, want := range map[string]string{
		"%h/.ssh/%u.%U%%":         "/home/alice/.ssh/alice.1000%",
		"keys/%u":                 "/home/alice/keys/alice",
		"/etc/ssh/keys/%u":        "/etc/ssh/keys/alice",
		"/etc/%x%":                "/etc/%x%",
		".ssh/authorized_keys":    "/home/alice/.ssh/authorized_keys",
		"%h/../%u/authorized_key": "/home/alice/../alice/authorized_key",
	} {
		if got := ExpandPath(pattern, u); got != want {
			t.Errorf("%q: %q, want %q", pattern, got, want)
		}
	}
}

// ReadFile reads what sshd reads and refuses the rest, naming the file.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	home := *me
	home.HomeDir = dir // StrictModes' checks stop here, below /tmp
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("# 10 bytes"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o644)
	writable := filepath.Join(dir, "writable")
	os.WriteFile(writable, nil, 0o666)
	os.Chmod(writable, 0o666)
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	os.WriteFile(filepath.Join(open, "keys"), nil, 0o644)
	ssh := filepath.Join(dir, "ssh")
	os.Symlink(open, ssh) // a safe-looking name for an unsafe directory
	for _, c := range []struct {
		name, path string
		opts       Options
		want       string // "" for success
	}{
		{"regular file", good, Options{}, ""},
		{"largest accepted", good, Options{MaxSize: 10}, ""},
		{"one byte over", good, Options{MaxSize: 9}, good + " is 10 bytes, over the limit of 9"},
		{"FIFO", fifo, Options{IgnoreModes: true}, fifo + " is not a regular file"},
		{"directory", dir, Options{IgnoreModes: true}, dir + " is not a regular file"},
		{"writable by others", writable, Options{}, "bad ownership or modes for file " + writable},
		{"writable by others, modes ignored", writable, Options{IgnoreModes: true}, ""},
		{"symlink into a directory writable by all", filepath.Join(ssh, "keys"), Options{}, "bad ownership or modes for directory " + open},
	} {
		_, err := ReadFile(c.path, &home, c.opts)
		if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != "pkbf: "+c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), &home, Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}

// A file the user could not read is refused even when pkbf (root) can:
// read permission on the file, search permission on its directories.
func TestReadFileUserRights(t *testing.T) {
	dir, home := nobodyIn(t)
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("x"), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(secret, link)
	closed := filepath.Join(dir, "closed")
	os.Mkdir(closed, 0o700)
	inside := filepath.Join(closed, "keys")
	os.WriteFile(inside, []byte("x"), 0o644)
	readable := filepath.Join(dir, "readable")
	os.WriteFile(readable, []byte("x"), 0o644)
	// A root process's memory map: mode 0444, but the kernel lets only
	// its owner (ptrace's check) read it.
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleep.Wait()
	defer sleep.Process.Kill()
	maps := filepath.Join(dir, "maps")
	os.Symlink(fmt.Sprintf("/proc/%d/maps", sleep.Process.Pid), maps)
	for path, denied := range map[string]bool{
		link:     true,
		inside:   true,
		maps:     true,
		readable: false,
	} {
		_, err := ReadFile(path, home, Options{IgnoreModes: true})
		if denied && (err == nil || !strings.Contains(err.Error(), "user nobody may not read ")) || !denied && err != nil {
			t.Errorf("%s: %v, want denied %v", path, err, denied)
		}
	}
}

// nobodyIn returns a new directory that all may search and the user
// nobody with it as home directory; it skips the test unless run as root,
// where pkbf reads files a user could not.
func nobodyIn(t *testing.T) (dir string, home *user.User) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root can read what the user cannot (CI runs as root)")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip(err)
	}
	dir = t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	u := *nobody
	u.HomeDir = dir
	return dir, &u
}

// Reads given up on still hold their goroutines until the file system
// answers; past a bound, ReadFile refuses at once instead of piling more
// up (found on review: a long-running server could reach Go's thread
// limit).
func TestReadFileBoundsReadsUnderWay(t *testing.T) {
	for range cap(reads) {
		reads <- struct{}{}
	}
	defer func() {
		for range cap(reads) {
			<-reads
		}
	}()
	home, _ := user.Current()
	_, err := ReadFile(filepath.Join(t.TempDir(), "authorized_keys"), home, Options{})
	if err == nil || !strings.Contains(err.Error(), "reads are still under way") {
		t.Fatalf("with %d reads under way: %v, want a refusal", cap(reads), err)
	}
}
