package update

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
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

// makeFilter returns a filter file with hash length l, holding keys, with
// the given revision and update time.
func makeFilter(t testing.TB, rev uint32, updated int64, l int, keys ...string) []byte {
	t.Helper()
	return makeFilterK(t, 3, rev, updated, l, keys...)
}

// makeFilterK is makeFilter with k hashes.
func makeFilterK(t testing.TB, k int, rev uint32, updated int64, l int, keys ...string) []byte {
	t.Helper()
	f, err := pkbf.New(k, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		f.Add([]byte(k))
	}
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	h := f.Header()
	h.Revision, h.Updated = rev, time.Unix(updated, 0).UTC()
	out := b.Bytes()
	if _, err := h.AppendBinary(out[:0]); err != nil {
		t.Fatal(err)
	}
	return out
}

// server is a publisher: it serves one filter file with http.ServeContent
// (ETag, If-None-Match, If-Modified-Since, Range, If-Range), and can be
// made to misbehave.
type server struct {
	t        testing.TB
	mu       sync.Mutex
	body     []byte
	etag     string
	modified time.Time
	requests []http.Header
	// Misbehaviour: answer the next len(statuses) requests with these
	// statuses (and retryAfter); cut the next cuts bodies after cutAt
	// bytes; stall after stallAt bytes once; send this handler instead.
	statuses   []int
	retryAfter string
	cuts       int
	cutAt      int
	stallAt    int
	stall      chan struct{}
	handler    http.HandlerFunc
	hits       atomic.Int64
}

func newServer(t testing.TB, body []byte) (*server, *httptest.Server) {
	s := &server{t: t}
	s.set(body)
	ts := httptest.NewTLSServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

// set publishes a new file.
func (s *server) set(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body = body
	s.etag = fmt.Sprintf(`"v%d-%x"`, s.hits.Load(), len(body)^int(body[9]))
	s.modified = time.Now().Add(-time.Hour).Add(time.Duration(s.hits.Load()) * time.Second).Truncate(time.Second)
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	s.mu.Lock()
	s.requests = append(s.requests, r.Header.Clone())
	body, etag, modified := s.body, s.etag, s.modified
	var status int
	if len(s.statuses) > 0 {
		status, s.statuses = s.statuses[0], s.statuses[1:]
	}
	cut, stallAt, handler := 0, s.stallAt, s.handler
	if s.cuts > 0 {
		s.cuts--
		cut = s.cutAt
	}
	s.stallAt = 0
	s.mu.Unlock()
	if handler != nil {
		handler(w, r)
		return
	}
	if status != 0 {
		if s.retryAfter != "" {
			w.Header().Set("Retry-After", s.retryAfter)
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	w.Header().Set("ETag", etag)
	if cut > 0 || stallAt > 0 {
		w = &brokenWriter{ResponseWriter: w, left: max(cut, stallAt), stall: stallAt > 0, unblock: s.stall}
	}
	http.ServeContent(w, r, "filter.pkbf", modified, bytes.NewReader(body))
}

// brokenWriter passes on left bytes of the body, then aborts the
// connection or, to stall, waits for unblock.
type brokenWriter struct {
	http.ResponseWriter
	left    int
	stall   bool
	unblock chan struct{}
}

func (w *brokenWriter) Write(p []byte) (int, error) {
	if len(p) <= w.left {
		w.left -= len(p)
		return w.ResponseWriter.Write(p)
	}
	w.ResponseWriter.Write(p[:w.left])
	w.left = 0
	w.ResponseWriter.(http.Flusher).Flush()
	if w.stall {
		<-w.unblock
	}
	panic(http.ErrAbortHandler) // the connection is cut
}

func (s *server) lastRequest() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[len(s.requests)-1]
}

// fastOpts retries without waiting, recording the waits asked for.
func fastOpts(waits *[]time.Duration) Options {
	var mu sync.Mutex
	return Options{Client: testClient(), sleep: func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		if waits != nil {
			*waits = append(*waits, d)
		}
		return ctx.Err()
	}}
}

// testClient trusts the certificate of httptest's TLS servers and dials
// every host under example.com (which the certificate names) at
// 127.0.0.1, so that a test can redirect to another host over https.
var testClient = sync.OnceValue(func() *http.Client {
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	ts.Close()
	dial := (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, port, err := net.SplitHostPort(addr); err == nil && strings.HasSuffix(host, ".example.com") {
				addr = net.JoinHostPort("127.0.0.1", port)
			}
			return dial(ctx, network, addr)
		},
	}}
})

// checkFiles fails if dir holds files other than the filter and the
// documented ones beside it (.download only if allowed).
func checkFiles(t *testing.T, dir string, downloadAllowed bool) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		switch name := e.Name(); name {
		case "filter.pkbf", ".filter.pkbf.update.json", ".filter.pkbf.update.lock":
		case ".filter.pkbf.download":
			if !downloadAllowed {
				t.Errorf("%s left behind", name)
			}
		default:
			t.Errorf("stray file %s", name)
		}
	}
}

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

	res, err = Update(context.Background(), ts.URL+"/filter.pkbf", path, fastOpts(nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Updated || res.New.Revision != 1 || res.Received != 0 {
		t.Errorf("second update: %+v", res)
	}
	if h := s.lastRequest(); h.Get("If-None-Match") != s.etag || h.Get("If-Modified-Since") == "" {
		t.Errorf("second request not conditional: If-None-Match %q, If-Modified-Since %q", h.Get("If-None-Match"), h.Get("If-Modified-Since"))
	}
	fi2, _ := os.Stat(path)
	if !os.SameFile(fi1, fi2) || !fi2.ModTime().Equal(fi1.ModTime()) {
		t.Error("an up-to-date update replaced or touched the file")
	}
	if !fi1.ModTime().Equal(s.modified) {
		t.Errorf("installed file's time %v, want the server's Last-Modified %v", fi1.ModTime(), s.modified)
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

// A server without validators gets If-Modified-Since only; one that
// ignores it and sends the same filter leaves the file alone.
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

func TestOlderRefused(t *testing.T) {
	installed := makeFilter(t, 5, 1e9, 12, "x")
	for _, c := range []struct {
		name string
		body []byte
	}{
		{"lower revision", makeFilter(t, 4, 2e9, 12, "y")},
		{"same revision, earlier time", makeFilter(t, 5, 1e9-1, 12, "y")},
	} {
		_, ts := newServer(t, c.body)
		dir := t.TempDir()
		path := filepath.Join(dir, "filter.pkbf")
		os.WriteFile(path, installed, 0o640)
		_, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
		if !errors.Is(err, ErrOlder) || !strings.Contains(err.Error(), "installed revision 5") {
			t.Errorf("%s: %v, want ErrOlder naming the revisions", c.name, err)
		}
		if !bytes.Equal(testkit.ReadFile(t, path), installed) {
			t.Errorf("%s: the installed filter changed", c.name)
		}
		checkFiles(t, dir, false)
		opts := fastOpts(nil)
		opts.Force = true
		if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated {
			t.Errorf("%s with Force: %+v, %v", c.name, res, err)
		}
		if fi, _ := os.Stat(path); !bytes.Equal(testkit.ReadFile(t, path), c.body) || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s with Force: not installed, or mode %v instead of the old file's 0640", c.name, fi.Mode())
		}
	}
}

// A body cut short is resumed with a Range request, by the retry and by
// the next run; a file changed on the server meanwhile starts again.
func TestResume(t *testing.T) {
	body := makeFilter(t, 3, 1e9, 25, "k") // 4 MiB
	s, ts := newServer(t, body)
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.pkbf")
	s.cuts, s.cutAt = 1, 1<<20
	res, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
	if err != nil {
		t.Fatal(err)
	}
	// Received counts both attempts' bytes: each byte once.
	if !res.Resumed || res.Received != res.Size || !bytes.Equal(testkit.ReadFile(t, path), body) {
		t.Fatalf("resumed by the retry: %+v", res)
	}
	if r := s.lastRequest().Get("Range"); !strings.HasPrefix(r, "bytes=") || r == "bytes=0-" {
		t.Errorf("retry asked for %q", r)
	}

	// Across runs: no retries, so the first run fails and keeps its part.
	body2 := makeFilter(t, 4, 1e9, 25, "k", "l")
	s.set(body2)
	s.cuts, s.cutAt = 1, 3<<20
	opts := fastOpts(nil)
	opts.Retries = -1
	if _, err := Update(context.Background(), ts.URL, path, opts); err == nil || !strings.Contains(err.Error(), "broke off") {
		t.Fatalf("cut body without retries: %v", err)
	}
	if !bytes.Equal(testkit.ReadFile(t, path), body) {
		t.Fatal("a failed update changed the installed filter")
	}
	checkFiles(t, dir, true)
	res, err = Update(context.Background(), ts.URL, path, opts)
	if err != nil || !res.Resumed || res.Received != int64(len(body2))-3<<20 || !bytes.Equal(testkit.ReadFile(t, path), body2) {
		t.Fatalf("resumed by the next run: %+v, %v", res, err)
	}

	// The server's file changes between the runs: If-Range fails, the
	// server sends the whole new file, which is installed.
	body3 := makeFilter(t, 5, 1e9, 25, "k", "l", "m")
	body4 := makeFilter(t, 6, 1e9, 25, "k", "l", "m", "n")
	s.set(body3)
	s.cuts, s.cutAt = 1, 2<<20
	Update(context.Background(), ts.URL, path, opts)
	s.set(body4)
	res, err = Update(context.Background(), ts.URL, path, opts)
	if err != nil || res.Resumed || !bytes.Equal(testkit.ReadFile(t, path), body4) {
		t.Fatalf("after the server's file changed: %+v, %v", res, err)
	}
	checkFiles(t, dir, false)
}

// Bad answers are errors that leave the installed filter as it was, and
// are retried only when a retry could help.
func TestBadResponses(t *testing.T) {
	good := makeFilter(t, 9, 1e9, 16, "old", "ok")
	installed := makeFilter(t, 8, 1e9, 16, "old")
	for _, c := range []struct {
		name     string
		handler  http.HandlerFunc
		statuses []int
		maxSize  int64
		want     string
		requests int64 // with 2 retries
		ok       bool
	}{
		{name: "wrong magic", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write(append([]byte("PKBFv1"), good[6:]...))
		}, want: "not a pkbfv1 filter", requests: 1},
		{name: "an HTML page", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("<!DOCTYPE html><html><body>Log in</body></html>"))
		}, want: "not a pkbfv1 filter", requests: 1},
		{name: "Content-Length larger than the header says", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(len(good)+10))
			w.Write(good)
			w.Write(make([]byte, 10))
		}, want: fmt.Sprintf("the server says the file is %d bytes, the filter's header says %d", len(good)+10, len(good)), requests: 1},
		{name: "more bytes than the header says, no length", handler: func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush() // chunked: no Content-Length
			w.Write(good)
			w.Write([]byte("trailing"))
		}, want: "more than the", requests: 1},
		{name: "Content-Length lies short", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			w.Write(good[:100])
		}, want: "the server says the file is 100 bytes", requests: 1},
		{name: "truncated body", handler: func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush()
			w.Write(good[:len(good)/2])
		}, want: "the body ended after", requests: 3},
		{name: "too large", handler: func(w http.ResponseWriter, r *http.Request) { w.Write(good) },
			maxSize: 1000, want: "over the limit of 1000", requests: 1},
		{name: "gzip-encoded anyway", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(good)
		}, want: "gzip-encoded", requests: 1},
		{name: "401", statuses: []int{401}, want: "401 Unauthorized: the server refused the request; check the credentials", requests: 1},
		{name: "403", statuses: []int{403}, want: "403 Forbidden", requests: 1},
		{name: "404", statuses: []int{404}, want: "404 Not Found", requests: 1},
		{name: "500 three times", statuses: []int{500, 502, 503}, want: "503 Service Unavailable", requests: 3},
		{name: "429 then fine", statuses: []int{429}, requests: 2, ok: true},
		{name: "503 twice then fine", statuses: []int{503, 503}, requests: 3, ok: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, ts := newServer(t, good)
			s.handler, s.statuses, s.retryAfter = c.handler, c.statuses, "7"
			dir := t.TempDir()
			path := filepath.Join(dir, "filter.pkbf")
			os.WriteFile(path, installed, 0o644)
			var waits []time.Duration
			opts := fastOpts(&waits)
			opts.Retries, opts.MaxSize, opts.Header = 2, c.maxSize, http.Header{"Authorization": {"Bearer s3cret"}}
			res, err := Update(context.Background(), ts.URL+"/f?token=hunter2", path, opts)
			if got := s.hits.Load(); got != c.requests {
				t.Errorf("%d requests, want %d", got, c.requests)
			}
			if c.ok {
				if err != nil || !res.Updated || !bytes.Equal(testkit.ReadFile(t, path), good) {
					t.Fatalf("%+v, %v", res, err)
				}
				if c.statuses[0] == 429 && (len(waits) != 1 || waits[0] != 7*time.Second) {
					t.Errorf("waits %v, want the Retry-After of 7s", waits)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error shows a credential: %v", err)
			}
			if !bytes.Equal(testkit.ReadFile(t, path), installed) {
				t.Error("the installed filter changed")
			}
			checkFiles(t, dir, c.name == "truncated body")
		})
	}
}

// A body that stalls is abandoned after Options.Stall and resumed.
func TestStall(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 22, "s")
	s, ts := newServer(t, body)
	s.stallAt, s.stall = 100000, make(chan struct{})
	defer close(s.stall)
	opts := fastOpts(nil)
	opts.Stall = 200 * time.Millisecond
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	res, err := Update(context.Background(), ts.URL, path, opts)
	if err != nil || !res.Resumed || !bytes.Equal(testkit.ReadFile(t, path), body) {
		t.Fatalf("after a stall: %+v, %v", res, err)
	}
}

// Credentials go to the publisher, not to another host it redirects to.
func TestCredentialsAndRedirects(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 12, "c")
	var mirrorSaw atomic.Value
	mirror := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mirrorSaw.Store(r.Header.Get("X-Api-Key") + r.Header.Get("Authorization"))
		w.Write(body)
	}))
	defer mirror.Close()
	var sawKey atomic.Value
	origin := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawKey.Store(r.Header.Get("X-Api-Key"))
		http.Redirect(w, r, strings.Replace(mirror.URL, "127.0.0.1", "mirror.example.com", 1)+"/f", http.StatusFound)
	}))
	defer origin.Close()
	opts := fastOpts(nil)
	opts.Header = http.Header{"X-Api-Key": {"k3y"}}
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	if _, err := Update(context.Background(), origin.URL, path, opts); err != nil {
		t.Fatal(err)
	}
	if sawKey.Load() != "k3y" {
		t.Errorf("the publisher got X-Api-Key %q", sawKey.Load())
	}
	if got := mirrorSaw.Load(); got != "" {
		t.Errorf("the other host got the credentials: %q", got)
	}
}

// Two updates of one path at once: one downloads, the other waits and
// finds the filter current.
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
		if h.Get("If-None-Match") == "" {
			full++
		}
	}
	if full != 1 {
		t.Errorf("%d unconditional requests, want 1", full)
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

// A body arriving below the minimum rate is abandoned after a window,
// and retried; MaxTime bounds the whole update, retries included.
func TestTrickleAndDeadline(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 16, "t")
	trickle := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		for _, b := range body {
			if _, err := w.Write([]byte{b}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(20 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	}
	s, ts := newServer(t, body)
	s.handler = trickle
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	opts := fastOpts(nil)
	opts.Retries, opts.MinRate, opts.RateWindow = -1, 1000, 300*time.Millisecond
	start := time.Now()
	_, err := Update(context.Background(), ts.URL, path, opts)
	if err == nil || !strings.Contains(err.Error(), "B/s for 300ms, below the minimum of 1000 B/s") {
		t.Fatalf("trickle: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("gave up after %v", took)
	}

	opts = Options{Client: testClient(), Retries: 100, MinRate: 1, RateWindow: time.Hour, MaxTime: 400 * time.Millisecond}
	_, err = Update(context.Background(), ts.URL, path, opts)
	if err == nil || !strings.Contains(err.Error(), "gave up after 400ms") {
		t.Fatalf("deadline: %v", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Error("running out of time reads as an interrupt")
	}

	for _, bad := range []Options{{MinRate: -1}, {RateWindow: -time.Second}, {MaxTime: -1}, {Stall: -time.Second}, {MaxSize: -1}} {
		if _, err := Update(context.Background(), ts.URL, path, bad); err == nil || !strings.Contains(err.Error(), "is negative") {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// A redirect to another host carries no Referer, so the query of the
// URL the user gave (a token, a signature) stays with the host named.
func TestNoQueryToAnotherHost(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 12, "r")
	var saw atomic.Value
	mirror := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		r.Header.Write(&b)
		saw.Store(r.URL.String() + "\n" + b.String())
		w.Write(body)
	}))
	defer mirror.Close()
	origin := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(mirror.URL, "127.0.0.1", "mirror.example.com", 1)+"/f", http.StatusFound)
	}))
	defer origin.Close()
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	if _, err := Update(context.Background(), origin.URL+"/feed?token=SECRET", path, fastOpts(nil)); err != nil {
		t.Fatal(err)
	}
	got, _ := saw.Load().(string)
	if got == "" {
		t.Fatal("the mirror was not asked")
	}
	if strings.Contains(got, "SECRET") || strings.Contains(got, "Referer") {
		t.Errorf("the other host got:\n%s", got)
	}
}

// Answers that do not fit the request are errors: a 304 to a request
// that was not conditional, a 206 to one for the whole file.
func TestAnswersThatDoNotFit(t *testing.T) {
	installed := makeFilter(t, 3, 1e9, 12, "i")
	for _, c := range []struct {
		status int
		want   string
	}{
		{http.StatusNotModified, "304 Not Modified to a request that was not conditional"},
		{http.StatusPartialContent, "206 Partial Content to a request for the whole file"},
	} {
		s, ts := newServer(t, installed)
		s.handler = func(w http.ResponseWriter, r *http.Request) {
			if c.status == http.StatusPartialContent {
				w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-9/%d", len(installed)))
			}
			w.WriteHeader(c.status)
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "filter.pkbf")
		os.WriteFile(path, installed, 0o644) // put there by other means: no state
		_, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: %v, want %q", c.status, err, c.want)
		}
		if s.lastRequest().Get("If-None-Match") != "" || s.lastRequest().Get("If-Modified-Since") != "" {
			t.Errorf("%d: the request was conditional", c.status)
		}
	}
}

// A filter with the installed one's header but other bits is refused
// unless forced: the header alone does not say two files are the same.
func TestSameHeaderOtherBits(t *testing.T) {
	installed := makeFilter(t, 4, 1e9, 12, "a")
	other := makeFilter(t, 4, 1e9, 12, "b")
	if bytes.Equal(installed, other) || !bytes.Equal(installed[:pkbf.HeaderSize], other[:pkbf.HeaderSize]) {
		t.Fatal("the test needs two filters with one header and other bits")
	}
	_, ts := newServer(t, other)
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.pkbf")
	os.WriteFile(path, installed, 0o644)
	_, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
	if !errors.Is(err, ErrSameHeader) || !strings.Contains(err.Error(), "force installs it") {
		t.Fatalf("%v, want ErrSameHeader", err)
	}
	if !bytes.Equal(testkit.ReadFile(t, path), installed) {
		t.Fatal("replaced without Force")
	}
	checkFiles(t, dir, false)
	opts := fastOpts(nil)
	opts.Force = true
	if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated || !bytes.Equal(testkit.ReadFile(t, path), other) {
		t.Fatalf("with Force: %+v, %v", res, err)
	}
}

// An update from another URL that fails leaves the installed file's
// validators, so the next update from its URL is still conditional.
func TestFailedUpdateKeepsValidators(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 12, "v")
	s, ts := newServer(t, body)
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	if _, err := Update(context.Background(), ts.URL+"/a", path, fastOpts(nil)); err != nil {
		t.Fatal(err)
	}
	broken := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"other"`)
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Write(body[:100]) // cut short: the part is kept
	}))
	defer broken.Close()
	opts := fastOpts(nil)
	opts.Retries = -1
	if _, err := Update(context.Background(), broken.URL, path, opts); err == nil {
		t.Fatal("the broken server's update succeeded")
	}
	res, err := Update(context.Background(), ts.URL+"/a", path, fastOpts(nil))
	if err != nil || res.Updated {
		t.Fatalf("%+v, %v", res, err)
	}
	if h := s.lastRequest(); h.Get("If-None-Match") != s.etag {
		t.Errorf("the request after a failed one was not conditional: If-None-Match %q", h.Get("If-None-Match"))
	}
}

// Update times past 2^63 seconds order after the others, as the file's
// unsigned field does (time.Time's Before would put them before 1970).
func TestTimesPastSigned(t *testing.T) {
	installed := makeFilter(t, 2, 1e9, 12, "x")
	binary.BigEndian.PutUint64(installed[10:], 1<<63+5)
	_, ts := newServer(t, makeFilter(t, 2, 100, 12, "y"))
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	os.WriteFile(path, installed, 0o644)
	_, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
	if !errors.Is(err, ErrOlder) || !strings.Contains(err.Error(), "9223372036854775813 seconds after 1970") {
		t.Fatalf("%v, want ErrOlder with the installed time in seconds", err)
	}
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
