package mapfile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// mountExt4 mounts a new ext4 file system of size bytes, or skips the
// test where that cannot be done (not root, no loop devices, no mkfs).
// ext4 is the file system that keeps what a failed fallocate allocated.
func mountExt4(t *testing.T, size int64) string {
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", img).CombinedOutput(); err != nil {
		t.Skipf("cannot make an ext4 file system here: %v %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount an ext4 image here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	return mnt
}

func freeBlocks(t *testing.T, dir string) uint64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Bfree
}

// An add to a sparse filter larger than the free space fails with "no
// space left", and ext4 keeps what the failed fallocate allocated, which
// would make every other writer on the file system fail too: the failed
// reservation gives the space back.
func TestFailedReservationReleased(t *testing.T) {
	mnt := mountExt4(t, 64<<20)
	path := filepath.Join(mnt, "sparse.pkbf")
	head := []byte("a header, then 64 MiB of holes")
	size := len(head) + 1<<26
	if err := os.WriteFile(path, head, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(size)); err != nil {
		t.Fatal(err)
	}
	before := freeBlocks(t, mnt)
	file, err := Open(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	m, err := Map(file, path, true, func() (int, error) { return size, nil }, errors.New("fault"))
	if err == nil {
		m.Close()
		t.Fatal("mapping a 64 MiB sparse file on a 64 MiB file system for writing: no error")
	}
	if !errors.Is(err, unix.ENOSPC) {
		t.Errorf("mapping a 64 MiB sparse file on a 64 MiB file system for writing: %v, want ENOSPC", err)
	}
	// A block or two of extent bookkeeping may stay.
	if after := freeBlocks(t, mnt); after+4 < before {
		t.Errorf("the failed reservation kept %d of %d free blocks", before-after, before)
	}
	// Another writer on the file system still has its space.
	if err := os.WriteFile(filepath.Join(mnt, "other"), make([]byte, 1<<20), 0o644); err != nil {
		t.Errorf("writing 1 MiB beside the file after the failed reservation: %v", err)
	}
	// And the file is as it was: its head, and nothing but zeros.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:len(head)]) != string(head) {
		t.Errorf("head changed: %q", b[:len(head)])
	}
	for i, c := range b[len(head):] {
		if c != 0 {
			t.Fatalf("byte %d after the head is %#x after the failed reservation", i, c)
		}
	}
}
