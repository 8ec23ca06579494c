package update

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/testkit"
)

// during returns Options whose Progress calls do once, when the download
// is under way.
func during(do func()) Options {
	opts := fastOpts(nil)
	var once sync.Once
	opts.Progress = func(done, total int64) {
		if total > 0 && done < total {
			once.Do(do)
		}
	}
	return opts
}

// A key added in place (pkbf.Edit, the lock protocol pkbf add follows)
// while the update downloads is in the filter the update judges at the
// end, under the filter's lock: a new filter without it is refused, pinned
// or not, and the key stays.
func TestKeysAddedDuringUpdate(t *testing.T) {
	keys := manyKeys("k", 100)
	for _, pinned := range []bool{false, true} {
		body := makeFilter(t, 2, ago(time.Hour), 20, append(keys, "new")...)
		_, ts := newServer(t, body)
		path := filepath.Join(t.TempDir(), "filter.pkbf")
		os.WriteFile(path, makeFilter(t, 1, ago(2*time.Hour), 20, keys...), 0o644)
		var addErr error
		opts := during(func() {
			w, err := pkbf.Edit(path)
			if err == nil {
				_, err = w.Add([]byte("local"))
				if cerr := w.Close(); err == nil {
					err = cerr
				}
			}
			addErr = err
		})
		if pinned {
			sum := sha256.Sum256(body)
			opts.SHA256 = hex.EncodeToString(sum[:])
		}
		_, err := Update(context.Background(), ts.URL, path, opts)
		if addErr != nil {
			t.Fatal(addErr)
		}
		// The key made the installed filter newer, and the new one lacks it.
		if !errors.Is(err, ErrOlder) && !errors.Is(err, ErrDropsBits) {
			t.Errorf("pinned %v: %v, want the new filter refused", pinned, err)
		}
		f, err := pkbf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if !f.Probably([]byte("local")) {
			t.Errorf("pinned %v: the key added during the update is gone", pinned)
		}
		f.Close()
	}
}

// A file renamed over the filter while the update downloads, or one put
// where there was none, is not replaced: the update says so and installs
// nothing.
func TestFileChangedDuringUpdate(t *testing.T) {
	body := makeFilter(t, 2, ago(time.Hour), 20, "a", "b")
	other := makeFilter(t, 7, ago(time.Hour), 12, "other")
	for _, c := range []struct {
		name, want string
		before     []byte
	}{
		{"replaced", "was replaced by another file while this update ran", makeFilter(t, 1, ago(2*time.Hour), 20, "a")},
		{"appeared", "appeared while this update ran", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ts := newServer(t, body)
			dir := t.TempDir()
			path := filepath.Join(dir, "filter.pkbf")
			if c.before != nil {
				os.WriteFile(path, c.before, 0o644)
			}
			opts := during(func() {
				tmp := filepath.Join(dir, "other")
				os.WriteFile(tmp, other, 0o644)
				os.Rename(tmp, path)
			})
			_, err := Update(context.Background(), ts.URL, path, opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
			if !bytes.Equal(testkit.ReadFile(t, path), other) {
				t.Error("the file put there was replaced")
			}
		})
	}
}

// A lock on the filter that is never let go (anyone who can open the
// filter can take one) stops the update after a bounded wait, saying so,
// with nothing installed.
func TestFilterLockHeld(t *testing.T) {
	defer func(d time.Duration) { filterLockWait = d }(filterLockWait)
	filterLockWait = 300 * time.Millisecond
	installed := makeFilter(t, 1, ago(2*time.Hour), 12, "a")
	_, ts := newServer(t, makeFilter(t, 2, ago(time.Hour), 12, "a", "b"))
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.pkbf")
	os.WriteFile(path, installed, 0o644)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := mapfile.LockFile(f, false); err != nil {
		t.Fatal(err)
	}
	var logged []string
	opts := fastOpts(nil)
	opts.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	_, err = Update(context.Background(), ts.URL, path, opts)
	if err == nil || !strings.Contains(err.Error(), "waited 300ms for the lock on "+path+", and another process still holds it") {
		t.Fatalf("%v, want the held lock named", err)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "waiting for the lock on") {
		t.Errorf("logged %q", logged)
	}
	if !bytes.Equal(testkit.ReadFile(t, path), installed) {
		t.Error("the filter was replaced")
	}
	checkFiles(t, dir, false)
}
