package update

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// An update from another URL that fails leaves the record of the
// installed file (verified under the pins in force), so the next update
// from its URL asks for the header alone and finds it current.
func TestFailedUpdateKeepsRecord(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 12, "v")
	other := makeFilter(t, 2, 1e9+1, 12, "v", "w")
	s, ts := newServer(t, body)
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	d := sha256.Sum256(body)
	opts := fastOpts(nil)
	opts.SHA256, opts.Retries = hex.EncodeToString(d[:]), -1
	if _, err := Update(context.Background(), ts.URL+"/a", path, opts); err != nil {
		t.Fatal(err)
	}
	broken := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"other"`)
		w.Header().Set("Content-Length", fmt.Sprint(len(other)))
		w.Write(other[:100]) // cut short: the part is kept
	}))
	defer broken.Close()
	if _, err := Update(context.Background(), broken.URL, path, opts); err == nil {
		t.Fatal("the broken server's update succeeded")
	}
	res, err := Update(context.Background(), ts.URL+"/a", path, opts)
	if err != nil || res.Updated {
		t.Fatalf("%+v, %v", res, err)
	}
	if h := s.lastRequest(); !askedForHeader(h) {
		t.Errorf("the request after a failed one did not ask for the header alone: %v", h)
	}
}

// The temporary state file of an update killed while saving its state is
// swept by the next update (TestUpdateKilled in cmd/pkbf left one behind
// now and then), one that finds the filter current too.
func TestStaleStateTempSwept(t *testing.T) {
	_, ts := newServer(t, makeFilter(t, 2, 1.5e9, 12, "a"))
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	os.WriteFile(path, makeFilter(t, 1, 1e9, 12, "a"), 0o644)
	stale := filepath.Join(dir, "..f.pkbf.update.json.tmp-2980331846")
	for _, want := range []bool{true, false} { // installed, then current
		os.WriteFile(stale, []byte("{"), 0o600)
		if res, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err != nil || res.Updated != want {
			t.Fatalf("%+v, %v; want updated %v", res, err, want)
		}
		if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the stale temporary state file is still there (updated %v): %v", want, err)
		}
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

// A state file that an older version wrote, with the installed file's
// validators (which this one does not keep) and a download's that it
// would not keep (a 20 KB ETag, a Last-Modified in 2100), is read
// without them: no request carries them, and the publisher answers.
func TestOldStateValidatorsDropped(t *testing.T) {
	f := newFeed(t)
	f.publish(makeFilter(t, 1, ago(3*time.Hour), 14, "a"), time.Now().Add(-3*time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated {
		t.Fatalf("%+v, %v", res, err)
	}
	statePath := filepath.Join(filepath.Dir(f.path), ".filter.pkbf.update.json")
	var st map[string]any
	if err := json.Unmarshal(testkit.ReadFile(t, statePath), &st); err != nil {
		t.Fatal(err)
	}
	huge, future := `"`+strings.Repeat("e", 20000)+`"`, "Fri, 01 Jan 2100 00:00:00 GMT"
	st["url"], st["partial_url"] = f.relay.URL+"/filter.pkbf", f.relay.URL+"/filter.pkbf"
	st["etag"], st["last_modified"], st["partial_etag"], st["partial_last_modified"] = huge, future, huge, future
	b, _ := json.Marshal(st)
	os.WriteFile(statePath, b, 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(f.path), ".filter.pkbf.download"), []byte("pkbfv1"), 0o600)
	f.publish(makeFilter(t, 2, ago(time.Hour), 14, "a", "b"), time.Now().Add(-time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated || f.installed().Revision != 2 {
		t.Fatalf("%+v, %v", res, err)
	}
	for _, h := range f.pub.Requests() {
		for _, name := range []string{"If-None-Match", "If-Modified-Since", "If-Range"} {
			if v := h.Get(name); strings.Contains(v, "eeee") || strings.Contains(v, "2100") {
				t.Errorf("a request carried the old state's validator: %s %.20q", name, v)
			}
		}
	}
}

// A server that refuses a request for a download's validators (400, 414,
// 431: an If-Range it cannot take) is asked once more without them, and
// they are dropped with the download: the refusal does not repeat at
// every run. A server that refuses the request without them too is an
// error, asked once more only.
func TestRefusedForValidatorsAskedWithout(t *testing.T) {
	for _, code := range []int{http.StatusBadRequest, http.StatusRequestURITooLong, http.StatusRequestHeaderFieldsTooLarge} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			s, ts := newServer(t, makeFilter(t, 1, ago(3*time.Hour), 12, "a"))
			path := filepath.Join(t.TempDir(), "filter.pkbf")
			if _, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err != nil {
				t.Fatal(err)
			}
			partial := func(body []byte) { // a download cut short: its validators are kept
				t.Helper()
				s.set(body)
				s.mu.Lock()
				s.cuts, s.cutAt = 1, 100
				s.mu.Unlock()
				opts := fastOpts(nil)
				opts.Retries = -1
				if _, err := Update(context.Background(), ts.URL, path, opts); err == nil {
					t.Fatal("the body cut short installed")
				}
			}
			partial(makeFilter(t, 2, ago(time.Hour), 12, "a", "b"))
			s.mu.Lock()
			var refuse http.HandlerFunc
			refuse = func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("If-Range") != "" {
					http.Error(w, "no", code)
					return
				}
				s.mu.Lock()
				s.handler = nil
				s.mu.Unlock()
				s.ServeHTTP(w, r)
				if r.Header.Get("Range") == "bytes=0-23" { // the request for the server's header, before the resumption
					s.mu.Lock()
					s.handler = refuse
					s.mu.Unlock()
				}
			}
			s.handler = refuse
			s.mu.Unlock()
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
			partial(makeFilter(t, 3, ago(time.Minute), 12, "a", "b", "c"))
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

// Red team 2, finding B: one interception served the installed revision's
// bytes (and genuine signature) with the ETag and Last-Modified of the
// publisher's newer file; update kept them, and every later run against
// the genuine server got a 304 and said "up to date" while a newer
// revision was there. Nothing the server says that the client cannot
// verify decides "up to date" now: each run compares the server's header
// with the installed one, and the next genuine run installs revision 2.
func TestRelayedValidatorsDoNotFreeze(t *testing.T) {
	for _, c := range []struct {
		name           string
		signed, noETag bool
	}{
		{"signed", true, false},
		{"unpinned", false, false},
		{"signed, Last-Modified only", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFeed(t)
			f.pub.NoETag = c.noETag
			if c.signed {
				s := newSigner(t, t.TempDir(), "ed25519")
				f.sig = &s
			}
			keys := manyKeys("k", 50)
			v1 := makeFilter(t, 1, ago(3*time.Hour), 14, keys...)
			f.publish(v1, time.Now().Add(-3*time.Hour))
			if res, err := f.update(f.opts()); err != nil || !res.Updated {
				t.Fatalf("revision 1: %+v, %v", res, err)
			}
			v1sig := []byte(nil)
			if c.signed {
				v1sig = f.sig.sign(t, v1, "pkbf")
			}
			f.publish(makeFilter(t, 2, ago(time.Hour), 14, append(keys, "new")...), time.Now().Add(-time.Hour))
			// Revision 1's bytes with revision 2's validators, as relayed.
			f.relay.Rewrite("filter.pkbf", func(h http.Header, body []byte) []byte { return v1 })
			if c.signed {
				f.relay.Rewrite("filter.pkbf.sig", func(h http.Header, body []byte) []byte { return v1sig })
			}
			if res, err := f.update(f.opts()); err != nil || res.Updated {
				t.Fatalf("the interception: %+v, %v; want revision 1 current", res, err)
			}
			if f.relay.Rewritten() == 0 {
				t.Fatal("the relay changed nothing")
			}
			for run := range 2 {
				res, err := f.update(f.opts())
				if err != nil || f.installed().Revision != 2 {
					t.Fatalf("genuine run %d after the interception: %+v, %v; want revision 2 installed", run+1, res, err)
				}
			}
		})
	}
}
