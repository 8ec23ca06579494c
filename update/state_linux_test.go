package update

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pkbf/pkbf/internal/testkit"
)

// Red team 2, finding E: the file system full when update saved its state
// after the rename (a 12 KiB tmpfs) left the previous filter's header
// recorded, and every later signed rebuild was refused as if keys had
// been added in place, naming none of it. A state that cannot be saved is
// removed now, and the warning says what that means: the next run
// cannot tell FILTER is the filter it installed, and a pinned filter
// without all its bits is refused, naming accept-rebuild, which installs
// it; the run after that has its record again. Needs a tmpfs (root).
func TestStateSaveFailsLoudly(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Skipf("cannot mount a small tmpfs here: %v", err)
	}
	defer unix.Unmount(dir, 0)
	f := newFeed(t)
	f.path = filepath.Join(dir, "filter.pkbf")
	s := newSigner(t, t.TempDir(), "ed25519")
	f.sig = &s
	keys := manyKeys("k", 200)
	f.publish(makeFilter(t, 1, ago(3*time.Hour), 12, keys...), time.Now().Add(-3*time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated {
		t.Fatalf("revision 1: %+v, %v", res, err)
	}
	statePath := filepath.Join(dir, ".filter.pkbf.update.json")
	before := testkit.ReadFile(t, statePath)

	// Revision 2, the file system filled once the download is whole: the
	// rename needs no room, the state's save does.
	f.publish(makeFilter(t, 2, ago(2*time.Hour), 12, append(keys, "two")...), time.Now().Add(-2*time.Hour))
	filler := filepath.Join(dir, "filler")
	var mu sync.Mutex
	var logged []string
	opts := f.opts()
	opts.Logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	}
	opts.Progress = func(done, total int64) {
		if total > 0 && done == total {
			fill(t, filler)
		}
	}
	if res, err := f.update(opts); err != nil || !res.Updated || f.installed().Revision != 2 {
		t.Fatalf("revision 2 on a full file system: %+v, %v", res, err)
	}
	mu.Lock()
	warning := strings.Join(logged, "\n")
	mu.Unlock()
	if !strings.Contains(warning, "could not save") || !strings.Contains(warning, "no space left") {
		t.Fatalf("logged %q, want the failed save", warning)
	}
	if b, err := os.ReadFile(statePath); err == nil {
		t.Fatalf("the state file is still there (unchanged: %v):\n%s", bytes.Equal(b, before), b)
	}
	for _, want := range []string{"removed it", "cannot tell", "accept-rebuild"} {
		if !strings.Contains(warning, want) {
			t.Errorf("the warning %q does not say %q", warning, want)
		}
	}
	os.Remove(filler)

	// The publisher rebuilds without one key, signed: refused, naming the
	// way past, which installs it; the next run finds it current.
	rebuild := makeFilter(t, 1, ago(time.Hour), 12, append(keys[1:], "two", "three")...)
	f.publish(rebuild, time.Now().Add(-time.Hour))
	_, err := f.update(f.opts())
	if !errors.Is(err, ErrDropsBits) || !strings.Contains(err.Error(), "no record of installing it") || !strings.Contains(err.Error(), "accept-rebuild installs it") {
		t.Fatalf("a signed rebuild after the lost state: %v; want ErrDropsBits saying why, naming accept-rebuild", err)
	}
	accept := f.opts()
	accept.AcceptRebuild = true
	if res, err := f.update(accept); err != nil || !res.Updated || !bytes.Equal(testkit.ReadFile(t, f.path), rebuild) {
		t.Fatalf("with AcceptRebuild: %+v, %v", res, err)
	}
	if res, err := f.update(f.opts()); err != nil || res.Updated {
		t.Fatalf("the next run: %+v, %v; want it current", res, err)
	}
}

// fill writes the file at path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return
		}
		t.Fatal(err)
	}
	defer w.Close()
	block := make([]byte, 4096)
	for {
		if _, err := w.Write(block); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	for { // the last bytes of a partly used block
		if _, err := w.Write(block[:1]); err != nil {
			return
		}
	}
}
