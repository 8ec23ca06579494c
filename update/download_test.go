package update

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

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
		path := filepath.Join(t.TempDir(), "filter.pkbf") // none installed: a request for the whole file
		_, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: %v, want %q", c.status, err, c.want)
		}
		if h := s.lastRequest(); h.Get("Range") != "" || h.Get("If-None-Match") != "" || h.Get("If-Modified-Since") != "" {
			t.Errorf("%d: the request was for a part, or conditional: %v", c.status, h)
		}
	}
}

// Issue 48, item 6: a server whose header claims 2^35 bits, with a
// matching Content-Length, had gigabytes written beside the filter (the
// default limit was 64 GiB). The default limit fits real filters now,
// and a claim over it is refused before anything is written.
func TestHugeClaimRefusedBeforeWriting(t *testing.T) {
	h := pkbf.Header{Revision: 1, Updated: time.Now().Add(-time.Hour).UTC().Truncate(time.Second), HashCount: 7, HashLength: 35}
	hdr, err := h.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	s, ts := newServer(t, hdr)
	s.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(h.FileSize()))
		w.Header().Set("ETag", `"huge"`)
		w.Write(hdr)
		w.Write(make([]byte, 1<<20))
	}
	dir := t.TempDir()
	opts := fastOpts(nil)
	opts.Retries = -1
	_, err = Update(context.Background(), ts.URL+"/filter.pkbf", filepath.Join(dir, "filter.pkbf"), opts)
	if err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("%v, want the size refused", err)
	}
	checkFiles(t, dir, false)
}

// Issue 48, item 6, the partial download: one larger than MaxSize, or
// whose header declares more than MaxSize (left by a run with a larger
// limit), is not resumed but removed; a server whose answer to a
// request for the rest is a part of another file (its validators
// changed, If-Range ignored) has the download start again; a
// Content-Length over MaxSize is refused before anything is written.
func TestPartialDownloadsBounded(t *testing.T) {
	body := makeFilter(t, 3, ago(time.Hour), 20, "k") // 128 KiB
	// partial leaves cutAt bytes of body downloaded beside a new filter.
	partial := func(t *testing.T, cutAt int) (s *server, url, dir, path string) {
		s, ts := newServer(t, body)
		dir = t.TempDir()
		path = filepath.Join(dir, "filter.pkbf")
		s.cuts, s.cutAt = 1, cutAt
		opts := fastOpts(nil)
		opts.Retries, opts.MaxSize = -1, 1<<20
		if _, err := Update(context.Background(), ts.URL, path, opts); err == nil {
			t.Fatal("a cut body installed")
		}
		checkFiles(t, dir, true)
		return s, ts.URL, dir, path
	}
	t.Run("over the limit", func(t *testing.T) {
		s, url, dir, path := partial(t, 100<<10)
		opts := fastOpts(nil)
		opts.Retries, opts.MaxSize = -1, 64<<10 // below the part kept, and the whole file
		before := s.hits.Load()
		_, err := Update(context.Background(), url, path, opts)
		if err == nil || !strings.Contains(err.Error(), "over the limit of 65536") {
			t.Fatalf("%v, want the size refused", err)
		}
		if r := s.lastRequest().Get("Range"); r != "" || s.hits.Load() != before+1 {
			t.Errorf("the part over the limit was resumed (Range %q)", r)
		}
		checkFiles(t, dir, false)
	})
	t.Run("header over the limit", func(t *testing.T) {
		s, url, dir, path := partial(t, 10<<10)
		opts := fastOpts(nil)
		opts.Retries, opts.MaxSize = -1, 64<<10 // above the part kept, below the size its header says
		Update(context.Background(), url, path, opts)
		if r := s.lastRequest().Get("Range"); r != "" {
			t.Errorf("a part of a file over the limit was resumed (Range %q)", r)
		}
		checkFiles(t, dir, false)
	})
	t.Run("another file's part", func(t *testing.T) {
		s, url, _, path := partial(t, 10<<10)
		other := makeFilter(t, 4, ago(time.Hour), 20, "k", "l")
		s.mu.Lock()
		s.handler = func(w http.ResponseWriter, r *http.Request) {
			// If-Range ignored: the rest of another file.
			w.Header().Set("ETag", `"other"`)
			r.Header.Del("If-Range")
			http.ServeContent(w, r, "", time.Now().Add(-time.Minute), bytes.NewReader(other))
		}
		s.mu.Unlock()
		opts := fastOpts(nil)
		opts.Retries = 1
		res, err := Update(context.Background(), url, path, opts)
		if err != nil || res.Resumed || !bytes.Equal(testkit.ReadFile(t, path), other) {
			t.Fatalf("%+v, %v; want the other file downloaded whole", res, err)
		}
	})
	t.Run("Content-Length over the limit", func(t *testing.T) {
		written := make(chan struct{})
		ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-written // nothing of the body until the client gave up
		}))
		defer ts.Close()
		defer close(written)
		dir := t.TempDir()
		opts := fastOpts(nil)
		opts.MaxSize = 64 << 10
		_, err := Update(context.Background(), ts.URL, filepath.Join(dir, "filter.pkbf"), opts)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the server says the file is %d bytes, over the limit of 65536; nothing written", len(body))) {
			t.Fatalf("%v, want the size refused", err)
		}
		checkFiles(t, dir, false)
	})
}

// Both sides of DefaultMaxSize: a filter of hash length 30 (128 MiB and
// a header) is taken (here the server then breaks off), one of hash
// length 31 (256 MiB and a header) is refused on its header.
func TestDefaultMaxSize(t *testing.T) {
	for _, c := range []struct {
		l    uint8
		want string
	}{{30, "the body broke off after 24 bytes"}, {31, "268435480 bytes, over the limit of 268435456; nothing written"}} {
		h := pkbf.Header{Revision: 1, Updated: time.Now().Add(-time.Hour).UTC().Truncate(time.Second), HashCount: 7, HashLength: c.l}
		hdr, _ := h.AppendBinary(nil)
		ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(h.FileSize()))
			w.Write(hdr)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}))
		defer ts.Close()
		opts := fastOpts(nil)
		opts.Retries = -1
		dir := t.TempDir()
		if _, err := Update(context.Background(), ts.URL, filepath.Join(dir, "filter.pkbf"), opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("hash length %d: %v, want %q", c.l, err, c.want)
		}
		checkFiles(t, dir, c.l == 30)
	}
}

// A run asks for the server's header alone; the answers to that request
// that do not fit it are errors, and one with the whole file (a server
// that ignores ranges) is read no further than the header when the
// installed filter is current, and is the download when it is not.
func TestHeaderRequestAnswers(t *testing.T) {
	installed := makeFilter(t, 1, 1e9, 12, "i")
	newer := makeFilter(t, 2, 1e9+1, 12, "i", "j")
	for _, c := range []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request)
		want    string // "" for current, "installed" for newer installed
	}{
		{"another range", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 5-28/%d", len(installed)))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(installed[5:29])
		}, "sent \"bytes 5-28/"},
		{"a file shorter than a header", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Range", "bytes 0-9/10")
			w.WriteHeader(http.StatusPartialContent)
			w.Write(installed[:10])
		}, "the server's file is 10 bytes, shorter than a header"},
		{"an empty file", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Range", "bytes */0") // as nginx answers
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		}, "416 Requested Range Not Satisfiable to a request for the filter's first 24 bytes: the server's file is empty"},
		// Red team 4: every 416 said "the server's file is empty".
		{"416 of a file that is not empty", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(installed)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		}, fmt.Sprintf("the server says its file is %d bytes, yet refused its first 24: it mishandles ranges", len(installed))},
		{"416 of a file shorter than a header", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Range", "bytes */10")
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		}, "not a pkbfv1 filter: the server says its file is 10 bytes, shorter than a header"},
		{"416 without a size", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "", http.StatusRequestedRangeNotSatisfiable)
		}, "the server did not say its file's size (Content-Range); the file is empty, or the server mishandles ranges"},
		{"not a filter", func(w http.ResponseWriter, r *http.Request) {
			http.ServeContent(w, r, "", time.Time{}, strings.NewReader("<html>"+strings.Repeat("x", 100)))
		}, "not a pkbfv1 filter"},
		{"the whole file, the installed one", func(w http.ResponseWriter, r *http.Request) { w.Write(installed) }, ""},
		{"the whole file, a newer one", func(w http.ResponseWriter, r *http.Request) { w.Write(newer) }, "installed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, ts := newServer(t, installed)
			path := filepath.Join(t.TempDir(), "filter.pkbf")
			if _, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err != nil {
				t.Fatal(err)
			}
			confirm(t, ts.URL, path)
			before := len(s.allRequests())
			s.mu.Lock()
			s.handler = c.handler
			s.mu.Unlock()
			opts := fastOpts(nil)
			opts.Retries = -1
			res, err := Update(context.Background(), ts.URL, path, opts)
			reqs := s.allRequests()[before:]
			if !askedForHeader(reqs[0]) {
				t.Errorf("the first request of the run: %v, want one for the header", reqs[0])
			}
			switch c.want {
			case "":
				if err != nil || res.Updated || len(reqs) != 1 {
					t.Fatalf("%+v, %v after %d requests; want it current after one", res, err, len(reqs))
				}
			case "installed":
				if err != nil || !res.Updated || !bytes.Equal(testkit.ReadFile(t, path), newer) || len(reqs) != 1 {
					t.Fatalf("%+v, %v after %d requests; want the newer filter installed from the one answer", res, err, len(reqs))
				}
			default:
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("%v, want an error with %q", err, c.want)
				}
				if !bytes.Equal(testkit.ReadFile(t, path), installed) {
					t.Fatal("the installed filter changed")
				}
			}
		})
	}
}

// Red team 4, finding D2: a server that keeps its validators across
// revisions of one size (nginx serving from the Nix store: Last-Modified
// 1970-01-01 00:00:01, ETag "1-<size>") answered the resumption of
// revision A's download with revision B's rest, If-Range or not, and
// update installed A's first part with B's rest (unpinned), or refused
// B's digest as not matching (pinned). A download is resumed only when
// the server's header is the one it begins with, before the rest is asked
// for and after it arrived; else it starts again.
func TestResumeSameValidatorsOtherRevision(t *testing.T) {
	keys := manyKeys("k", 5000)
	a := makeFilterK(t, 7, 2, ago(2*time.Hour), 20, keys...) // 128 KiB
	b := makeFilterK(t, 7, 3, ago(time.Hour), 20, append(slices.Clone(keys), manyKeys("b", 20)...)...)
	sumB := sha256.Sum256(b)
	for _, c := range []struct {
		name        string
		published   string // when B is published: "" (never), "between the runs", "after the header"
		pin         string
		wantResumed bool
	}{
		{name: "not published: resumed", wantResumed: true},
		{name: "published between the runs", published: "between the runs"},
		{name: "published between the runs, pinned", published: "between the runs", pin: hex.EncodeToString(sumB[:])},
		{name: "published once the header was sent", published: "after the header"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			cur, cut := a, 64<<10
			var next []byte
			var ranges []string
			ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				body, left := cur, cut
				cut = 0
				if next != nil && r.Header.Get("Range") == "bytes=0-23" {
					cur, next = next, nil
				}
				ranges = append(ranges, r.Header.Get("Range"))
				mu.Unlock()
				w.Header().Set("ETag", fmt.Sprintf(`"1-%x"`, len(body)))
				if left > 0 {
					w = &brokenWriter{ResponseWriter: w, left: left}
				}
				http.ServeContent(w, r, "", time.Unix(1, 0), bytes.NewReader(body))
			}))
			t.Cleanup(ts.Close)
			dir := t.TempDir()
			path := filepath.Join(dir, "filter.pkbf")
			opts := fastOpts(nil)
			opts.Retries = -1
			if _, err := Update(context.Background(), ts.URL, path, opts); err == nil || !strings.Contains(err.Error(), "broke off") {
				t.Fatalf("the run cut short: %v", err)
			}
			checkFiles(t, dir, true)
			want, wantName := a, "A"
			mu.Lock()
			switch c.published {
			case "between the runs":
				cur, want, wantName = b, b, "B"
			case "after the header":
				next, want, wantName = b, b, "B"
			}
			ranges = nil
			mu.Unlock()
			opts = fastOpts(nil)
			opts.SHA256 = c.pin
			res, err := Update(context.Background(), ts.URL, path, opts)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || !res.Updated || res.Resumed != c.wantResumed || !bytes.Equal(testkit.ReadFile(t, path), want) {
				t.Fatalf("%+v, %v (requests for %q); want revision %s installed, resumed: %v", res, err, ranges, wantName, c.wantResumed)
			}
			checkFiles(t, dir, false)
		})
	}
}
