package update

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pkbf/pkbf/internal/testkit"
)

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

// The temporary state file of an update killed while saving its state is
// swept by the next update (TestUpdateKilled in cmd/pkbf left one behind
// now and then).
func TestStaleStateTempSwept(t *testing.T) {
	_, ts := newServer(t, makeFilter(t, 2, 1.5e9, 12, "a"))
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	os.WriteFile(path, makeFilter(t, 1, 1e9, 12, "a"), 0o644)
	stale := filepath.Join(dir, "..f.pkbf.update.json.tmp-2980331846")
	os.WriteFile(stale, []byte("{"), 0o600)
	if res, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err != nil || !res.Updated {
		t.Fatalf("%+v, %v", res, err)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale temporary state file is still there: %v", err)
	}
}

// Issue 48, item 1: a relayed Last-Modified in the future froze updates:
// update set the file's time to it and sent it as If-Modified-Since, and
// the publisher (one without ETags, as Go's http.FileServer) answered 304
// to every later run, signed filter or not. A Last-Modified past now is
// not kept now, and the next revision installs.
func TestFutureLastModifiedDoesNotFreeze(t *testing.T) {
	f := newFeed(t)
	f.pub.NoETag = true
	s := newSigner(t, t.TempDir(), "ed25519")
	f.sig = &s
	keys := manyKeys("k", 50)
	f.publish(makeFilter(t, 1, ago(3*time.Hour), 14, keys...), time.Now().Add(-3*time.Hour))
	f.relay.Rewrite("filter.pkbf", func(h http.Header, body []byte) []byte {
		h.Set("Last-Modified", "Fri, 01 Jan 2100 00:00:00 GMT")
		return body
	})
	if res, err := f.update(f.opts()); err != nil || !res.Updated {
		t.Fatalf("the first revision: %+v, %v", res, err)
	}
	if fi, _ := os.Stat(f.path); fi.ModTime().After(time.Now().Add(time.Minute)) {
		t.Errorf("the filter's time is %v, from the server", fi.ModTime())
	}
	f.publish(makeFilter(t, 2, ago(time.Hour), 14, append(keys, "new")...), time.Now().Add(-time.Hour))
	res, err := f.update(f.opts())
	if err != nil || !res.Updated || f.installed().Revision != 2 {
		t.Fatalf("the next revision: %+v, %v; want it installed", res, err)
	}
}

// Issue 48, item 2: a relayed 20 KB ETag was kept and sent back as
// If-None-Match, and the publisher, refusing request headers over 8 KiB,
// refused every later update. Such an ETag is not kept now.
func TestHugeETagNotKept(t *testing.T) {
	f := newFeed(t)
	keys := manyKeys("k", 50)
	f.publish(makeFilter(t, 1, ago(3*time.Hour), 14, keys...), time.Now().Add(-3*time.Hour))
	f.relay.Rewrite("filter.pkbf", func(h http.Header, body []byte) []byte {
		h.Set("ETag", `"`+strings.Repeat("e", 20000)+`"`)
		return body
	})
	if res, err := f.update(f.opts()); err != nil || !res.Updated {
		t.Fatalf("the first revision: %+v, %v", res, err)
	}
	f.publish(makeFilter(t, 2, ago(time.Hour), 14, append(keys, "new")...), time.Now().Add(-time.Hour))
	res, err := f.update(f.opts())
	if err != nil || !res.Updated || f.installed().Revision != 2 {
		t.Fatalf("the next revision: %+v, %v; want it installed", res, err)
	}
	for _, h := range f.pub.Requests() {
		if n := testkit.RequestHeaderSize(h); n > testkit.MaxRequestHeader {
			t.Errorf("a request of %d header bytes was sent", n)
		}
	}
}

// Validators are kept only when well-formed and bounded: both sides of
// each limit.
func TestValidators(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct{ etag, want string }{
		{`"abc"`, `"abc"`},
		{`W/"abc"`, `W/"abc"`},
		{`""`, `""`},
		{`"` + strings.Repeat("e", maxETag-2) + `"`, `"` + strings.Repeat("e", maxETag-2) + `"`},
		{`"` + strings.Repeat("e", maxETag-1) + `"`, ""},
		{`W/"` + strings.Repeat("e", maxETag-4) + `"`, `W/"` + strings.Repeat("e", maxETag-4) + `"`},
		{`W/"` + strings.Repeat("e", maxETag-3) + `"`, ""},
		{`abc`, ""},
		{`"abc`, ""},
		{`"a"b"`, ""},
		{`"a b"`, ""},
		{"\"a\tb\"", ""},
		{"\"a\x7fb\"", ""},
		{"\"a\x80b\"", "\"a\x80b\""}, // obs-text
		{`w/"abc"`, ""},
		{`*`, ""}, // If-None-Match: * would match every later file
		{``, ""},
		{`"`, ""},
	} {
		if got := validETag(c.etag); got != c.want {
			t.Errorf("validETag(%q) = %q, want %q", c.etag, got, c.want)
		}
	}
	for _, c := range []struct{ lm, want string }{
		{"Sat, 28 Nov 2026 12:00:00 GMT", "Sat, 28 Nov 2026 12:00:00 GMT"},
		{"Sat, 28 Nov 2026 12:00:01 GMT", ""},
		{"Fri, 01 Jan 2100 00:00:00 GMT", ""},
		{"Saturday, 28-Nov-26 11:00:00 GMT", "Sat, 28 Nov 2026 11:00:00 GMT"}, // RFC 850, written as HTTP writes dates
		{"yesterday", ""},
		{strings.Repeat("x", 20000), ""},
	} {
		if got := validLastModified(c.lm, now); got != c.want {
			t.Errorf("validLastModified(%.40q) = %q, want %q", c.lm, got, c.want)
		}
	}
}

// A state file that an older version wrote with validators this one
// would not keep (a 20 KB ETag, a Last-Modified in 2100) is read without
// them: the next request carries neither, and the publisher answers it.
func TestOldStateValidatorsDropped(t *testing.T) {
	f := newFeed(t)
	f.publish(makeFilter(t, 1, ago(3*time.Hour), 14, "a"), time.Now().Add(-3*time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated {
		t.Fatalf("%+v, %v", res, err)
	}
	statePath := filepath.Join(filepath.Dir(f.path), ".filter.pkbf.update.json")
	var st state
	if err := json.Unmarshal(testkit.ReadFile(t, statePath), &st); err != nil {
		t.Fatal(err)
	}
	st.ETag, st.LastModified = `"`+strings.Repeat("e", 20000)+`"`, "Fri, 01 Jan 2100 00:00:00 GMT"
	b, _ := json.Marshal(st)
	os.WriteFile(statePath, b, 0o600)
	f.publish(makeFilter(t, 2, ago(time.Hour), 14, "a", "b"), time.Now().Add(-time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated || f.installed().Revision != 2 {
		t.Fatalf("%+v, %v", res, err)
	}
	reqs := f.pub.Requests()
	if h := reqs[len(reqs)-1]; h.Get("If-None-Match") != "" || h.Get("If-Modified-Since") != "" {
		t.Errorf("the request carried the old state's validators: %.20q, %q", h.Get("If-None-Match"), h.Get("If-Modified-Since"))
	}
}

// A server that refuses a request for its validators (400, 414, 431: a
// header it cannot take) is asked once more without them, and they are
// dropped: the refusal does not repeat at every run. A server that
// refuses the request without them too is an error, asked once more only.
func TestRefusedForValidatorsAskedWithout(t *testing.T) {
	for _, code := range []int{http.StatusBadRequest, http.StatusRequestURITooLong, http.StatusRequestHeaderFieldsTooLarge} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			s, ts := newServer(t, makeFilter(t, 1, ago(3*time.Hour), 12, "a"))
			path := filepath.Join(t.TempDir(), "filter.pkbf")
			if _, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			s.handler = func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("If-None-Match") != "" {
					http.Error(w, "no", code)
					return
				}
				s.mu.Lock()
				s.handler = nil
				s.mu.Unlock()
				s.ServeHTTP(w, r)
			}
			s.mu.Unlock()
			s.set(makeFilter(t, 2, ago(time.Hour), 12, "a", "b"))
			var logged []string
			opts := fastOpts(nil)
			opts.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
			if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated {
				t.Fatalf("%+v, %v", res, err)
			}
			if len(logged) != 1 || !strings.Contains(logged[0], "asking again without them") {
				t.Errorf("logged %q", logged)
			}
			// Refused with and without validators: an error, after two requests.
			s.mu.Lock()
			s.handler = func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", code) }
			s.mu.Unlock()
			before := s.hits.Load()
			if _, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err == nil || !strings.Contains(err.Error(), fmt.Sprint(code)) {
				t.Fatalf("%v, want the status", err)
			}
			if n := s.hits.Load() - before; n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
		})
	}
}

// Validators from a server: what is kept is kept as it came (an ETag) or
// as HTTP writes dates (a Last-Modified), is kept again when read back,
// and is within the bounds.
func FuzzValidators(f *testing.F) {
	for _, s := range []string{`"abc"`, `W/"abc"`, `*`, "Sat, 28 Nov 2026 12:00:00 GMT", "Saturday, 28-Nov-26 11:00:00 GMT", "Sat Nov 28 12:00:00 2026", `"a"b"`} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if e := validETag(s); e != "" {
			inner := strings.TrimPrefix(e, "W/")
			if e != s || len(e) > maxETag || len(inner) < 2 || inner[0] != '"' || inner[len(inner)-1] != '"' || strings.ContainsAny(inner[1:len(inner)-1], "\" \t\r\n") {
				t.Errorf("validETag(%q) = %q", s, e)
			}
		}
		if lm := validLastModified(s, now); lm != "" {
			if tm, err := http.ParseTime(lm); err != nil || tm.After(now) || validLastModified(lm, now) != lm {
				t.Errorf("validLastModified(%q) = %q: %v", s, lm, err)
			}
		}
	})
}
