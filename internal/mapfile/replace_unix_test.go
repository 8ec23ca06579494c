//go:build unix

package mapfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Temporary files left by writers that died are removed by the next
// CreateTemp beside them; those of writers alive, or too new to tell, stay.
func TestSweepTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.pkbf")
	stale := TempPrefix(path) + "stale"
	os.WriteFile(stale, make([]byte, 1<<16), 0o644)
	other := filepath.Join(dir, ".other.pkbf.tmp-x") // another file's
	os.WriteFile(other, nil, 0o644)

	alive, err := CreateTemp(path) // a writer at work: locked
	if err != nil {
		t.Fatal(err)
	}
	defer alive.Close()

	next, err := CreateTemp(path)
	if err != nil {
		t.Fatal(err)
	}
	next.Close()
	os.Remove(next.Name())
	for name, want := range map[string]bool{stale: false, other: true, alive.Name(): true} {
		if _, err := os.Stat(name); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(name), err == nil, want)
		}
	}
	alive.Close()
	if n := SweepTemps(path); n != 1 {
		t.Errorf("after its writer closed it, %d swept, want 1", n)
	}
}

func TestReplaceTarget(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	os.Symlink("file", filepath.Join(dir, "link"))
	os.Symlink("link", filepath.Join(dir, "link2"))
	os.Symlink("missing", filepath.Join(dir, "dangling"))
	os.Symlink(dir, filepath.Join(dir, "dirlink"))
	os.Symlink("loop", filepath.Join(dir, "loop"))
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
	for _, c := range []struct {
		name, target, err string
		exists            bool
	}{
		{name: "file", target: "file", exists: true},
		{name: "link", target: "file", exists: true},
		{name: "link2", target: "file", exists: true},
		{name: "dangling", target: "missing"},
		{name: "new", target: "new"},
		{name: "dirlink", err: "dirlink (a link to " + dir + ") is a directory, not a regular file"},
		{name: "fifo", err: "fifo is a pipe or FIFO, not a regular file"},
		{name: "loop", err: "too many levels of symbolic links"},
		{name: ".", err: "is a directory"},
	} {
		target, fi, err := ReplaceTarget(filepath.Join(dir, c.name))
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %q, %v; want error %q", c.name, target, err, c.err)
			}
		case err != nil || target != filepath.Join(dir, c.target) || (fi != nil) != c.exists:
			t.Errorf("%s: %q, %v, %v; want %s", c.name, target, fi, err, c.target)
		}
	}
}
