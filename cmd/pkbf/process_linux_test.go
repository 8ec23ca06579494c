package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"golang.org/x/sys/unix"
)

// A file system too small for the filter: create fails at once, saying
// so, and leaves nothing; a sparse filter made there by other means gives
// check and add an error, not a SIGBUS. Needs a tmpfs of 1 MiB (root).
func TestFullFileSystem(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a small tmpfs here: %v", err)
	}
	defer unix.Unmount(dir, 0)
	p := filepath.Join(dir, "f.pkbf")
	r := runWith(t, nil, "create", "-hashes", "4", "-length", "30", p)
	if r.code != exitTrouble || !strings.Contains(r.stderr, "no space left") {
		t.Errorf("create of 128 MiB on a 1 MiB file system: %+v", r)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("create left %v behind", entries)
	}
	// A sparse file as an older create made it.
	hdr, _ := (pkbf.Header{HashCount: 4, HashLength: 30}).MarshalBinary()
	if err := os.WriteFile(p, hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, int64(len(hdr))+1<<27); err != nil {
		t.Fatal(err)
	}
	r = runWith(t, nil, "add", p, key("p256.pub"))
	if r.code != exitTrouble || !strings.Contains(r.stderr, "no space left") {
		t.Errorf("add to a sparse filter on a full file system: %+v", r)
	}
	keys := bytes.Repeat(mustRead(t, key("rsa2048.pub")), 200)
	cmd := pkbfProcess("check", p)
	cmd.Stdin = bytes.NewReader(keys)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd); code != exitOK && code != exitTrouble {
		t.Errorf("check on a sparse filter on a full file system: exit %d\n%s", code, stderr.String())
	} else {
		t.Logf("check on a sparse filter on a full tmpfs: exit %d %s", code, stderr.String())
	}
}
