//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// merge --force replaces a regular file, and follows a symbolic link to
// replace its target; a directory, FIFO or device is never replaced.
func TestMergeForceTargets(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if r := runWith(t, nil, "create", "-k", "3", "-l", "12", a); r.code != 0 {
		t.Fatal(r)
	}
	runWith(t, nil, "add", a, key("p256.pub"))
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("notes\n"), 0o644)
	if r := runWith(t, nil, "merge", notes, a); r.code != 2 || !strings.Contains(r.stderr, notes+" exists and is not a readable filter") {
		t.Errorf("merge into a text file: %+v", r)
	}
	target := filepath.Join(dir, "target.pkbf")
	runWith(t, nil, "create", "-k", "3", "-l", "12", target)
	link := filepath.Join(dir, "link.pkbf")
	if err := os.Symlink("target.pkbf", link); err != nil {
		t.Skip("no symbolic links:", err)
	}
	if r := runWith(t, nil, "merge", "--force", link, a); r.code != 0 {
		t.Fatalf("merge --force into a link: %+v", r)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file: %v, %v", fi, err)
	}
	if r := runWith(t, nil, "check", target, key("p256.pub")); r.code != 1 {
		t.Errorf("the link's target was not replaced by the merge: %+v", r)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs:", err)
	}
	outs := []string{fifo, dir}
	device := filepath.Join(dir, "null")
	if err := syscall.Mknod(device, syscall.S_IFCHR|0o666, 1<<8|3); err == nil { // as /dev/null, where allowed (root)
		outs = append(outs, device)
	}
	for _, out := range outs {
		r := runWith(t, nil, "merge", "--force", out, a)
		if r.code != 2 || !strings.Contains(r.stderr, "not a regular file: it is never replaced") {
			t.Errorf("merge --force %s: %+v", out, r)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v, %v", fi, err)
	}
}
