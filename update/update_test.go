package update

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/internal/testkit"
)

func TestInstallThenUpToDate(t *testing.T) {
	v1 := makeFilter(t, 1, 1e9, 16, "a", "b")
	s, ts := newServer(t, v1)
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.pkbf")
	res, err := Update(context.Background(), ts.URL+"/filter.pkbf", path, fastOpts(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Updated || res.Old != nil || res.New.Revision != 1 || res.Size != int64(len(v1)) || res.Received != res.Size || res.Resumed {
		t.Errorf("first update: %+v", res)
	}
	if !bytes.Equal(testkit.ReadFile(t, path), v1) {
		t.Fatal("installed file differs from the server's")
	}
	fi1, _ := os.Stat(path)

	// Unpinned, the next run downloads the filter whole to confirm it;
	// the run after asks for the header alone.
	confirm(t, ts.URL+"/filter.pkbf", path)
	if h := s.lastRequest(); h.Get("Range") != "" {
		t.Errorf("the confirming run asked for %q, want the whole file", h.Get("Range"))
	}
	res, err = Update(context.Background(), ts.URL+"/filter.pkbf", path, fastOpts(nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Updated || res.New.Revision != 1 || res.Received != 0 {
		t.Errorf("second update: %+v", res)
	}
	if h := s.lastRequest(); !askedForHeader(h) {
		t.Errorf("the second request did not ask for the header alone: %v", h)
	}
	fi2, _ := os.Stat(path)
	if !os.SameFile(fi1, fi2) || !fi2.ModTime().Equal(fi1.ModTime()) {
		t.Error("an up-to-date update replaced or touched the file")
	}

	// A new revision replaces it.
	v2 := makeFilter(t, 2, 1e9+10, 16, "a", "b", "c")
	s.set(v2)
	res, err = Update(context.Background(), ts.URL+"/filter.pkbf", path, fastOpts(nil))
	if err != nil || !res.Updated || res.Old == nil || res.Old.Revision != 1 || res.New.Revision != 2 {
		t.Fatalf("update to revision 2: %+v, %v", res, err)
	}
	if !bytes.Equal(testkit.ReadFile(t, path), v2) {
		t.Fatal("revision 2 not installed")
	}
	checkFiles(t, dir, false)
}

// A server that ignores ranges and sends the same filter leaves the file
// alone.
func TestSameFilterAgain(t *testing.T) {
	v1 := makeFilter(t, 7, 1e9, 12, "x")
	_, ts := newServer(t, v1)
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.pkbf")
	os.WriteFile(path, v1, 0o600)
	fi1, _ := os.Stat(path)
	s2 := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(v1) }))
	defer s2.Close()
	res, err := Update(context.Background(), s2.URL, path, fastOpts(nil))
	if err != nil || res.Updated {
		t.Fatalf("same filter: %+v, %v", res, err)
	}
	fi2, _ := os.Stat(path)
	if !os.SameFile(fi1, fi2) {
		t.Error("the same filter was installed again")
	}
	_ = ts
	checkFiles(t, dir, false)
}

// Two updates of one path at once: one downloads, the others wait; the
// first of them confirms it with a whole download, the rest find it
// current from its header.
func TestConcurrentUpdates(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 24, "c")
	s, ts := newServer(t, body)
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	var wg sync.WaitGroup
	var updated atomic.Int64
	for range 4 {
		wg.Go(func() {
			res, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
			if err != nil {
				t.Error(err)
			}
			if res.Updated {
				updated.Add(1)
			}
		})
	}
	wg.Wait()
	if updated.Load() != 1 {
		t.Errorf("%d updates installed the filter, want 1", updated.Load())
	}
	full := 0
	for _, h := range s.requests {
		if !askedForHeader(h) {
			full++
		}
	}
	if full != 2 { // the install and the next run's confirmation
		t.Errorf("%d requests for the whole filter, want 2", full)
	}
}

// Readers opening the filter while updates replace it always see a whole
// valid filter holding the keys every revision holds.
func TestReadersDuringUpdates(t *testing.T) {
	s, ts := newServer(t, makeFilter(t, 1, 1e9, 20, "always"))
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	if _, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var reads atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			f, err := pkbf.Open(path)
			if err != nil {
				t.Errorf("a reader got: %v", err)
				return
			}
			if !f.Probably([]byte("always")) || f.FileChanged() != nil {
				t.Error("a reader saw a filter without the key, or changing under it")
			}
			f.Close()
			reads.Add(1)
		}
	})
	keys := []string{"always"}
	for rev := uint32(2); rev < 30; rev++ {
		keys = append(keys, fmt.Sprint(rev)) // a genuine new revision keeps the old keys
		s.set(makeFilter(t, rev, 1e9, 20, keys...))
		if res, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err != nil || !res.Updated {
			t.Fatalf("revision %d: %+v, %v", rev, res, err)
		}
	}
	close(stop)
	wg.Wait()
	if reads.Load() == 0 {
		t.Error("the reader never ran")
	}
}

func TestBadArguments(t *testing.T) {
	for _, u := range []string{"ftp://x/f", "not a url", "/local/path", "http://"} {
		if _, err := Update(context.Background(), u, filepath.Join(t.TempDir(), "f"), Options{}); err == nil || !strings.Contains(err.Error(), "not an http or https URL") {
			t.Errorf("Update(%q): %v", u, err)
		}
	}
	for _, r := range []float64{-0.1, 1, math.NaN()} {
		if _, err := Update(context.Background(), "https://example.com/f", filepath.Join(t.TempDir(), "f"), Options{MaxFPRate: r}); err == nil || !strings.Contains(err.Error(), "is not a rate below 1") {
			t.Errorf("MaxFPRate %v: %v", r, err)
		}
	}
	if _, _, ok := contentRange("bytes 5-9/10"); !ok {
		t.Error("contentRange refuses bytes 5-9/10")
	}
	for _, v := range []string{"", "bytes", "bytes x-9/10", "items 1-2/3", "bytes 1-2"} {
		if _, _, ok := contentRange(v); ok {
			t.Errorf("contentRange(%q) accepted", v)
		}
	}
}

// A file at the path that is not a filter is never replaced, and no
// request is made for it; a directory, FIFO or socket is refused whatever
// the options say; a symbolic link is followed, and its target replaced.
func TestRefusesWhatItDidNotMake(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 12, "k")
	s, ts := newServer(t, body)

	t.Run("text file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "notes.txt")
		os.WriteFile(path, []byte("notes\n"), 0o644)
		before := s.hits.Load()
		_, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
		if !errors.Is(err, ErrNotFilter) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "nothing was downloaded") {
			t.Fatalf("%v, want ErrNotFilter naming %s", err, path)
		}
		if s.hits.Load() != before {
			t.Error("a request was made for a path that cannot be replaced")
		}
		if got := string(testkit.ReadFile(t, path)); got != "notes\n" {
			t.Errorf("the text became %q", got)
		}
		opts := fastOpts(nil)
		opts.ReplaceInvalid = true
		if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated || !bytes.Equal(testkit.ReadFile(t, path), body) {
			t.Errorf("with ReplaceInvalid: %+v, %v", res, err)
		}
	})

	t.Run("directory", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "filter.pkbf")
		os.Mkdir(path, 0o755)
		before := s.hits.Load()
		opts := fastOpts(nil)
		opts.ReplaceInvalid, opts.Force = true, true
		_, err := Update(context.Background(), ts.URL, path, opts)
		if err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Fatalf("%v, want a refusal naming a directory", err)
		}
		if s.hits.Load() != before {
			t.Error("a request was made")
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("files left beside it: %v", entries)
		}
	})

	t.Run("socket", func(t *testing.T) {
		dir, err := os.MkdirTemp("", "s") // short: a socket path has a small limit
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "f")
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Skip("no unix sockets here:", err)
		}
		defer ln.Close()
		opts := fastOpts(nil)
		opts.ReplaceInvalid = true
		if _, err := Update(context.Background(), ts.URL, path, opts); err == nil || !strings.Contains(err.Error(), "is a socket") {
			t.Fatalf("%v, want a refusal naming a socket", err)
		}
	})

	t.Run("symbolic link", func(t *testing.T) {
		dir := t.TempDir()
		realDir := filepath.Join(dir, "real")
		os.Mkdir(realDir, 0o755)
		target := filepath.Join(realDir, "filter.pkbf")
		os.WriteFile(target, makeFilter(t, 0, 1, 12), 0o640)
		link := filepath.Join(dir, "filter.pkbf")
		if err := os.Symlink("real/filter.pkbf", link); err != nil {
			t.Skip("no symbolic links here:", err)
		}
		if res, err := Update(context.Background(), ts.URL, link, fastOpts(nil)); err != nil || !res.Updated {
			t.Fatalf("%+v, %v", res, err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the link was replaced: %v, %v", fi, err)
		}
		if fi, _ := os.Stat(target); !bytes.Equal(testkit.ReadFile(t, target), body) || fi.Mode().Perm() != 0o640 {
			t.Errorf("the link's target was not replaced in place of the old one (mode %v)", fi.Mode())
		}
		if _, err := os.Stat(filepath.Join(realDir, ".filter.pkbf.update.json")); err != nil {
			t.Errorf("the state is not beside the target: %v", err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 2 {
			t.Errorf("files beside the link: %v", entries)
		}
	})
}

// Red-team finding 11, the messages: a retry's warning and a deadline's
// error carry the prefix once (as the command prints them, through
// perr.Errorf); the deadline says a download is kept only when there is
// one; a redirect to file:// is called what it is and, like too many
// redirects, not retried; and a download refused for good leaves no
// partial URL in the state.
func TestUpdateMessages(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 12, "a")
	t.Run("retry warning", func(t *testing.T) {
		s, ts := newServer(t, body)
		s.statuses = []int{http.StatusServiceUnavailable}
		opts := fastOpts(nil)
		var logged []string
		opts.Logf = func(format string, args ...any) { logged = append(logged, perr.Errorf(format, args...).Error()) }
		if _, err := Update(context.Background(), ts.URL, filepath.Join(t.TempDir(), "filter.pkbf"), opts); err != nil {
			t.Fatal(err)
		}
		if len(logged) != 1 || strings.Count(logged[0], "pkbf:") != 1 || !strings.Contains(logged[0], "503 Service Unavailable; retrying in") {
			t.Errorf("warnings %q, want one with the prefix once", logged)
		}
	})
	t.Run("deadline before any byte", func(t *testing.T) {
		ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
		defer ts.Close()
		opts := fastOpts(nil)
		opts.MaxTime = 200 * time.Millisecond
		_, err := Update(context.Background(), ts.URL, filepath.Join(t.TempDir(), "filter.pkbf"), opts)
		if err == nil || !strings.Contains(err.Error(), "gave up after 200ms") || strings.Count(err.Error(), "pkbf:") != 1 || strings.Contains(err.Error(), "kept") {
			t.Errorf("%v, want the deadline, one prefix, and no download said kept", err)
		}
	})
	for _, c := range []struct{ name, want string }{
		{"redirect to file", "not an http or https URL: refused"},
		{"redirect loop", "stopped after 10 redirects"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var hits atomic.Int64
			var ts *httptest.Server
			ts = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				if c.name == "redirect to file" {
					http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
					return
				}
				http.Redirect(w, r, ts.URL+"/again", http.StatusFound)
			}))
			defer ts.Close()
			_, err := Update(context.Background(), ts.URL, filepath.Join(t.TempDir(), "filter.pkbf"), fastOpts(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrPlainHTTP) || strings.Count(err.Error(), "pkbf:") != 1 {
				t.Errorf("%v, want %q", err, c.want)
			}
			if want := map[string]int64{"redirect to file": 1, "redirect loop": 10}[c.name]; hits.Load() != want {
				t.Errorf("%d requests, want %d (no retries)", hits.Load(), want)
			}
		})
	}
	t.Run("refused download leaves no partial URL", func(t *testing.T) {
		long := append(bytes.Clone(body), 0)
		ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `"x"`)
			w.(http.Flusher).Flush() // no Content-Length: the header's size is checked as the body comes
			w.Write(long)
		}))
		defer ts.Close()
		dir := t.TempDir()
		_, err := Update(context.Background(), ts.URL, filepath.Join(dir, "filter.pkbf"), fastOpts(nil))
		if err == nil || !strings.Contains(err.Error(), "sends more than the") {
			t.Fatalf("%v, want the long body refused", err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, ".filter.pkbf.update.json")); bytes.Contains(b, []byte("partial")) {
			t.Errorf("the state keeps the refused download's URL:\n%s", b)
		}
		checkFiles(t, dir, false)
	})
}

// Refused tells the rule's refusals from failures to fetch or install.
func TestRefused(t *testing.T) {
	for _, kind := range []error{ErrOlder, ErrSameHeader, ErrLockIn, ErrStale, ErrNotAuthentic,
		ErrDropsBits, ErrWeaker, ErrUnverifiable, ErrSaturated, ErrImplausibleFill} {
		if err := fmt.Errorf("wrapped: %w", kind); !Refused(err) {
			t.Errorf("Refused(%v) = false", err)
		}
	}
	for _, err := range []error{nil, ErrNotFilter, ErrPlainHTTP, context.Canceled, io.ErrUnexpectedEOF} {
		if Refused(err) {
			t.Errorf("Refused(%v) = true", err)
		}
	}
}
