package pkbf

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The largest filter, L 40, is a 128 GiB file with its space reserved:
// made where the file system has the room, and otherwise refused for want
// of space, leaving nothing behind. The refusal is tested on a private
// 1 MiB tmpfs: on the test's own file system, a reservation that fails
// part way fills it for a moment, and other tests writing there at the
// same time (go test runs packages in parallel) failed with "no space
// left on device". It is made on the test's file system only where that
// has twice the room.
func TestCreateLargest(t *testing.T) {
	if uint64(math.MaxInt) < 1<<37 { // a 32-bit platform: L 40 is refused up front
		err := Create(filepath.Join(t.TempDir(), "big.pkbf"), 1, 40)
		if err == nil || !strings.Contains(err.Error(), "hash length 40 needs more memory than this platform can address") {
			t.Errorf("Create(k 1, L 40) on a 32-bit platform: %v", err)
		}
		return
	}
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	roomy := st.Bavail*uint64(st.Bsize) >= 2<<37
	if !roomy {
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
			t.Skipf("no room for 128 GiB here and no private tmpfs (%v)", err)
		}
		defer unix.Unmount(dir, 0)
	}
	big := filepath.Join(dir, "big.pkbf")
	switch err := Create(big, 1, 40); {
	case roomy && err == nil:
		if fi, _ := os.Stat(big); fi.Size() != 1<<37+HeaderSize {
			t.Errorf("L 40 file is %d bytes", fi.Size())
		}
		os.Remove(big)
	case !roomy && errors.Is(err, syscall.ENOSPC):
		if _, serr := os.Stat(big); !errors.Is(serr, fs.ErrNotExist) {
			t.Errorf("Create refused for want of space (%v), and %s: %v", err, big, serr)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, ".big.pkbf.tmp-*")); len(left) != 0 {
			t.Errorf("Create refused for want of space left %v", left)
		}
	default:
		t.Errorf("Create(k 1, L 40) with room %v: %v", roomy, err)
	}
}
