//go:build unix

package update

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pkbf/pkbf/internal/testkit"
)

// Red-team finding 3: the files kept beside the filter were opened
// through symbolic links, so whoever could write the filter's directory
// made the update truncate, rewrite or create files where they could not
// (root's, say). Links planted as those files are not followed now (the
// lock's is refused; the download's and the state's are replaced), and a
// directory others can write, or one another user owns, is refused
// before any request, as is a filter linked into one.
func TestSideFileLinksNotFollowed(t *testing.T) {
	v1 := makeFilter(t, 1, 1e9, 12, "a")
	v2 := makeFilter(t, 2, 1e9, 12, "a", "b")
	for _, c := range []struct {
		name   string
		side   string
		exists bool   // the link leads to an existing file
		want   string // "" when the update installs
	}{
		{"state to a file", ".filter.pkbf.update.json", true, ""},
		{"state to a new file", ".filter.pkbf.update.json", false, ""},
		{"download to a file", ".filter.pkbf.download", true, ""},
		{"download to a new file", ".filter.pkbf.download", false, ""},
		{"lock to a file", ".filter.pkbf.update.lock", true, "the lock beside"},
		{"lock to a new file", ".filter.pkbf.update.lock", false, "the lock beside"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ts := newServer(t, v2)
			dir, victimDir := t.TempDir(), t.TempDir()
			victim := filepath.Join(victimDir, "victim")
			if c.exists {
				os.WriteFile(victim, []byte("root's own\n"), 0o600)
			}
			path := filepath.Join(dir, "filter.pkbf")
			os.WriteFile(path, v1, 0o644)
			if err := os.Symlink(victim, filepath.Join(dir, c.side)); err != nil {
				t.Fatal(err)
			}
			res, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
			switch {
			case c.want == "" && (err != nil || !res.Updated):
				t.Fatalf("%+v, %v", res, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("%v, want an error with %q", err, c.want)
			}
			entries, _ := os.ReadDir(victimDir)
			switch {
			case c.exists && (len(entries) != 1 || !bytes.Equal(testkit.ReadFile(t, victim), []byte("root's own\n"))):
				t.Errorf("the file the link leads to changed: %v", entries)
			case !c.exists && len(entries) != 0:
				t.Errorf("a file was created where the link leads: %v", entries)
			}
			if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("the filter is no longer a regular file: %v, %v", fi, err)
			}
		})
	}
	unsafe := func(t *testing.T, setup func(dir string) (path string)) {
		s, ts := newServer(t, v2)
		path := setup(t.TempDir())
		before := s.hits.Load()
		_, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
		if err == nil || !strings.Contains(err.Error(), "could make this update write elsewhere through links") {
			t.Fatalf("%v, want the directory refused", err)
		}
		if s.hits.Load() != before {
			t.Error("a request was made")
		}
	}
	t.Run("a directory others can write", func(t *testing.T) {
		unsafe(t, func(dir string) string {
			os.Chmod(dir, 0o1777)
			os.WriteFile(filepath.Join(dir, "filter.pkbf"), v1, 0o644)
			return filepath.Join(dir, "filter.pkbf")
		})
	})
	t.Run("a filter linked into a directory others can write", func(t *testing.T) {
		unsafe(t, func(dir string) string {
			open := filepath.Join(dir, "open")
			os.Mkdir(open, 0o777)
			os.Chmod(open, 0o777)
			os.WriteFile(filepath.Join(open, "filter.pkbf"), v1, 0o644)
			os.Symlink(filepath.Join(open, "filter.pkbf"), filepath.Join(dir, "filter.pkbf"))
			return filepath.Join(dir, "filter.pkbf")
		})
	})
	t.Run("a directory another user owns", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give a directory away")
		}
		unsafe(t, func(dir string) string {
			os.WriteFile(filepath.Join(dir, "filter.pkbf"), v1, 0o644)
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "filter.pkbf")
		})
	})
}

// Red-team finding 4: the lock was 0644, so any local user could take a
// shared lock on it and hold every update off. It is 0600 now, and an
// older lock is made so.
func TestLockFilePrivate(t *testing.T) {
	_, ts := newServer(t, makeFilter(t, 1, 1e9, 12, "a"))
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.pkbf")
	lock := filepath.Join(dir, ".filter.pkbf.update.lock")
	os.WriteFile(lock, nil, 0o644)
	os.Chmod(lock, 0o644)
	if _, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(lock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the lock: %v, %v; want mode 0600", fi, err)
	}
}

// Red-team finding 5: a URL's credentials (a user and password, a token
// in the query) were written into the state file, which was 0644 like
// the download. Both are 0600 now; the state names such a URL without
// them (and by its SHA-256), and still resumes; the installed filter is
// 0644.
func TestSideFilesKeepNoCredentials(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 22, "a")
	s, ts := newServer(t, body)
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.pkbf")
	url := strings.Replace(ts.URL, "https://", "https://u:p4ss@", 1) + "/f.pkbf?token=s3cret"
	statePath := filepath.Join(dir, ".filter.pkbf.update.json")
	private := func(name string) {
		t.Helper()
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want mode 0600", name, fi, err)
		}
	}
	noSecrets := func() {
		t.Helper()
		if b := testkit.ReadFile(t, statePath); bytes.Contains(b, []byte("p4ss")) || bytes.Contains(b, []byte("s3cret")) {
			t.Errorf("the state file keeps a credential:\n%s", b)
		}
	}
	s.cuts, s.cutAt = 1, 1<<18
	opts := fastOpts(nil)
	opts.Retries = -1
	if _, err := Update(context.Background(), url, path, opts); err == nil {
		t.Fatal("the cut body installed")
	}
	private(".filter.pkbf.download")
	private(".filter.pkbf.update.json")
	noSecrets()
	res, err := Update(context.Background(), url, path, opts)
	if err != nil || !res.Resumed || !res.Updated {
		t.Fatalf("resumed: %+v, %v", res, err)
	}
	private(".filter.pkbf.update.json")
	noSecrets()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the installed filter: %v, %v; want mode 0644", fi, err)
	}
	confirm(t, url, path)
	if res, err := Update(context.Background(), url, path, opts); err != nil || res.Updated || !askedForHeader(s.lastRequest()) {
		t.Fatalf("the next run: %+v, %v; want a request for the header and no update", res, err)
	}
}

// Red team 2, finding F: a FIFO at .FILTER.update.json hung the update:
// it was opened for reading, blocking until a writer came, outside any
// context, so neither MaxTime nor a signal ended it. The files beside the
// filter are opened without blocking and must be regular files: a FIFO
// as the state is ignored (and said so), as the download replaced, as
// the lock refused; each update returns, and a FIFO that it would block
// on is unblocked by the test only after it has failed.
func TestSideFileFIFONoHang(t *testing.T) {
	v1 := makeFilter(t, 1, 1e9, 12, "a")
	v2 := makeFilter(t, 2, 1e9+1, 12, "a", "b")
	for _, c := range []struct {
		name, side string
		want       string // "" when the update installs
		logged     string
	}{
		{"state", ".filter.pkbf.update.json", "", "not a regular file"},
		{"download", ".filter.pkbf.download", "", ""},
		{"lock", ".filter.pkbf.update.lock", "not a regular file", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ts := newServer(t, v2)
			dir := t.TempDir()
			path := filepath.Join(dir, "filter.pkbf")
			os.WriteFile(path, v1, 0o644)
			fifo := filepath.Join(dir, c.side)
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var logged []string
			opts := fastOpts(nil)
			opts.MaxTime = 10 * time.Second
			opts.Logf = func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				logged = append(logged, fmt.Sprintf(format, args...))
			}
			type result struct {
				res Result
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := Update(context.Background(), ts.URL, path, opts)
				done <- result{res, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(time.Minute): // far past MaxTime: blocked, not slow
				if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil { // a writer and a reader: it opens
					f.Close()
				}
				<-done
				t.Fatalf("the update did not return within a minute (MaxTime %s): it blocked on the FIFO", opts.MaxTime)
			}
			switch {
			case c.want == "" && (r.err != nil || !r.res.Updated):
				t.Fatalf("%+v, %v; want it installed", r.res, r.err)
			case c.want != "" && (r.err == nil || !strings.Contains(r.err.Error(), c.want)):
				t.Fatalf("%v, want an error with %q", r.err, c.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if c.logged != "" && !strings.Contains(strings.Join(logged, "\n"), c.logged) {
				t.Errorf("logged %q, want a warning with %q", logged, c.logged)
			}
		})
	}
}

// Red team 2, finding I: a filter with a second hard link (a gate reading
// it under another name) is replaced under one name only, and the other
// kept the old filter, unsaid. Update says so now.
func TestHardLinkedFilterWarned(t *testing.T) {
	_, ts := newServer(t, makeFilter(t, 2, 1e9+1, 12, "a", "b"))
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.pkbf")
	os.WriteFile(path, makeFilter(t, 1, 1e9, 12, "a"), 0o644)
	if err := os.Link(path, filepath.Join(dir, "gate.pkbf")); err != nil {
		t.Fatal(err)
	}
	var logged []string
	opts := fastOpts(nil)
	opts.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated {
		t.Fatalf("%+v, %v", res, err)
	}
	if w := strings.Join(logged, "\n"); !strings.Contains(w, "2 hard links") || !strings.Contains(w, "the old filter") {
		t.Errorf("logged %q, want a warning that another name keeps the old filter", w)
	}
}
