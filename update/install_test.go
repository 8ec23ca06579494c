package update

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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

// Red team 4, finding A1: one interception of an unpinned update (the
// publisher's new header, public in its first 24 bytes, over the
// installed filter's bits: newer, a superset, a count within the fill
// tolerance) installed, and update recorded that header: every later run
// against the genuine server got it back for bytes 0-23 and said "up to
// date" while the new revision's keys answered "no". The header alone now
// says "current" only for an installed filter whose bytes are confirmed:
// a pin vouches for them, or a later run's whole download matched them.
// The run after the interception downloads the genuine filter whole and
// refuses it loudly (same header, other bits), naming the path as a
// possible cause; accept-rebuild installs it, the next run confirms it
// with a whole download, and the runs after read the header alone.
func TestInterceptedNextHeaderNotCurrent(t *testing.T) {
	keys := manyKeys("k", 30)
	r1 := makeFilterK(t, 7, 1, ago(2*time.Hour), 12, keys...)
	r2 := makeFilterK(t, 7, 2, ago(time.Hour), 12, append(slices.Clone(keys), manyKeys("new", 5)...)...)
	forged := append(slices.Clone(r2[:pkbf.HeaderSize]), r1[pkbf.HeaderSize:]...)
	f := newFeed(t)
	f.publish(r1, time.Now().Add(-2*time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated {
		t.Fatalf("the install of revision 1: %+v, %v", res, err)
	}
	f.publish(r2, time.Now().Add(-time.Hour))
	f.relay.Rewrite("filter.pkbf", func(http.Header, []byte) []byte { return forged })
	if res, err := f.update(f.opts()); err != nil || !res.Updated || f.relay.Rewritten() != 1 {
		t.Fatalf("the intercepted run: %+v, %v; want the forgery installed (what one interception can do)", res, err)
	}
	if !bytes.Equal(testkit.ReadFile(t, f.path), forged) {
		t.Fatal("the forgery is not what was installed")
	}
	for run := range 2 { // every run, until the publisher's next filter
		before := len(f.pub.Requests())
		res, err := f.update(f.opts())
		if !errors.Is(err, ErrSameHeader) || !strings.Contains(err.Error(), "someone on the path") || res.Updated {
			t.Fatalf("run %d against the genuine server: %+v, %v; want ErrSameHeader naming the path", run+1, res, err)
		}
		if reqs := f.pub.Requests()[before:]; len(reqs) != 1 || reqs[0].Get("Range") != "" {
			t.Errorf("run %d asked %v, want the whole file once", run+1, reqs)
		}
		if !bytes.Equal(testkit.ReadFile(t, f.path), forged) {
			t.Fatal("a refused run changed the installed filter")
		}
	}
	opts := f.opts()
	opts.AcceptRebuild = true
	if res, err := f.update(opts); err != nil || !res.Updated || !bytes.Equal(testkit.ReadFile(t, f.path), r2) {
		t.Fatalf("with AcceptRebuild: %+v, %v; want revision 2 installed", res, err)
	}
	for run, wantWhole := range []bool{true, false, false} {
		before := len(f.pub.Requests())
		if res, err := f.update(f.opts()); err != nil || res.Updated {
			t.Fatalf("run %d after revision 2 installed: %+v, %v; want it current", run+1, res, err)
		}
		reqs := f.pub.Requests()[before:]
		if len(reqs) != 1 || askedForHeader(reqs[0]) == wantWhole {
			t.Errorf("run %d after revision 2 installed asked %v; want the whole file: %v", run+1, reqs, wantWhole)
		}
	}
}

// The rule of A1 where keys were added in place after an unpinned
// install: the next run's whole download, under the header update
// recorded, confirms the installed filter when every bit of it is set
// there (the runs after read the header alone), and is refused when the
// installed filter lacks bits of it (the interception's forgery, with a
// key added in place since).
func TestUnconfirmedAddedInPlace(t *testing.T) {
	keys := manyKeys("k", 30)
	r1 := makeFilterK(t, 7, 1, ago(2*time.Hour), 12, keys...)
	r2 := makeFilterK(t, 7, 2, ago(time.Hour), 12, append(slices.Clone(keys), manyKeys("new", 5)...)...)
	forged := append(slices.Clone(r2[:pkbf.HeaderSize]), r1[pkbf.HeaderSize:]...)
	for _, c := range []struct {
		name      string
		installed []byte // what the relay serves for the install of revision 2
		want      error
	}{
		{"the genuine revision", r2, nil},
		{"the forgery", forged, ErrSameHeader},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFeed(t)
			f.publish(r1, time.Now().Add(-2*time.Hour))
			if res, err := f.update(f.opts()); err != nil || !res.Updated {
				t.Fatalf("the install of revision 1: %+v, %v", res, err)
			}
			f.publish(r2, time.Now().Add(-time.Hour))
			f.relay.Rewrite("filter.pkbf", func(http.Header, []byte) []byte { return c.installed })
			if res, err := f.update(f.opts()); err != nil || !res.Updated {
				t.Fatalf("the install of revision 2: %+v, %v", res, err)
			}
			addInPlace(t, f.path, "local")
			edited := testkit.ReadFile(t, f.path)
			res, err := f.update(f.opts())
			if c.want != nil {
				if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "bits the installed filter lacks (keys were added to it in place since)") {
					t.Fatalf("%+v, %v; want %v", res, err, c.want)
				}
				if !bytes.Equal(testkit.ReadFile(t, f.path), edited) {
					t.Fatal("a refused run changed the installed filter")
				}
				return
			}
			if err != nil || res.Updated || res.Received != int64(len(r2)) {
				t.Fatalf("%+v, %v; want the installed filter confirmed by a whole download", res, err)
			}
			before := len(f.pub.Requests())
			if res, err := f.update(f.opts()); err != nil || res.Updated {
				t.Fatalf("the run after: %+v, %v", res, err)
			}
			if reqs := f.pub.Requests()[before:]; len(reqs) != 1 || !askedForHeader(reqs[0]) {
				t.Errorf("the run after the confirmation asked %v, want the header alone", reqs)
			}
			if !bytes.Equal(testkit.ReadFile(t, f.path), edited) {
				t.Fatal("the installed filter changed")
			}
		})
	}
}

// Which installs are confirmed at once: a signed one (the signature
// vouches for the bytes: the next run reads the header alone), and not
// one pinned only by a digest file beside the filter, which whoever
// answers for the filter answers for too (the next run downloads it
// whole).
func TestPinnedInstallConfirmed(t *testing.T) {
	r1 := makeFilterK(t, 7, 1, ago(time.Hour), 12, manyKeys("k", 30)...)
	for _, c := range []struct {
		name      string
		setup     func(f *feed) Options
		wantWhole bool
	}{
		{"signed", func(f *feed) Options {
			s := newSigner(t, t.TempDir(), "ed25519")
			f.sig = &s
			return f.opts()
		}, false},
		{"a digest file beside it", func(f *feed) Options {
			sum := sha256.Sum256(r1)
			f.pub.Publish("filter.pkbf.sha256", []byte(hex.EncodeToString(sum[:])+"  filter.pkbf\n"), time.Now())
			o := f.opts()
			o.SHA256URL = f.relay.URL + "/filter.pkbf.sha256"
			return o
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFeed(t)
			opts := c.setup(f)
			f.publish(r1, time.Now().Add(-time.Hour))
			if res, err := f.update(opts); err != nil || !res.Updated {
				t.Fatalf("the install: %+v, %v", res, err)
			}
			before := len(f.pub.Requests())
			if res, err := f.update(opts); err != nil || res.Updated {
				t.Fatalf("the next run: %+v, %v", res, err)
			}
			var whole bool
			for _, h := range f.pub.Requests()[before:] {
				whole = whole || h.Get("Range") == ""
			}
			if whole != c.wantWhole {
				t.Errorf("the next run downloaded the filter whole: %v, want %v", whole, c.wantWhole)
			}
		})
	}
}
