package ct

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pkbf/pkbf/ct/cttest"
	"github.com/pkbf/pkbf/keycheck"
)

// The Transport retries 429 and 5xx answers to GETs after the server's
// Retry-After (a pause every request through it keeps), paces requests
// to its rate, gives up after Retries, and never retries a POST.
func TestTransport(t *testing.T) {
	var calls atomic.Int64
	var failFirst atomic.Int64
	failFirst.Store(2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := calls.Add(1); n <= failFirst.Load() {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	c := &http.Client{Transport: &Transport{}}

	start := time.Now()
	resp, err := c.Get(srv.URL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET: %v %v", resp, err)
	}
	resp.Body.Close()
	if calls.Load() != 3 || time.Since(start) < 2*time.Second {
		t.Errorf("%d requests in %v: want 3, after two pauses of a second", calls.Load(), time.Since(start))
	}

	calls.Store(0)
	resp, err = c.Post(srv.URL, "text/plain", strings.NewReader("x"))
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || calls.Load() != 1 {
		t.Errorf("POST: %v, %v, %d requests: want the 503, once", resp.Status, err, calls.Load())
	}
	resp.Body.Close()

	calls.Store(0)
	failFirst.Store(1 << 40)
	resp, err = (&http.Client{Transport: &Transport{Retries: 2, MaxWait: 10 * time.Millisecond}}).Get(srv.URL)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || calls.Load() != 3 {
		t.Errorf("always busy: %v, %v, %d requests: want the last 503 after 2 retries", resp.Status, err, calls.Load())
	}
	resp.Body.Close()

	calls.Store(0)
	failFirst.Store(0)
	paced := &http.Client{Transport: &Transport{Rate: 20}}
	start = time.Now()
	for range 11 {
		resp, err := paced.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("11 requests at 20 a second took %v, less than the 500 ms pacing asks", d)
	}
}

// Issue 41, item 7: a response body is held to Limits.MaxBody (the
// largest accepted, one byte more refused, whether it says its length or
// not) and to Limits.BodyTimeout, and the error says which limit.
func TestLimits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.FormValue("n"))
		if r.FormValue("length") != "" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		w.WriteHeader(200)
		w.(http.Flusher).Flush() // no Content-Length unless set above
		w.Write(bytes.Repeat([]byte("x"), n))
		if r.FormValue("stall") != "" {
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	c := Limits{MaxBody: 1000, BodyTimeout: 300 * time.Millisecond}.client(&http.Client{})
	for _, tc := range []struct {
		name, query, err string
	}{
		{"the largest body", "n=1000", ""},
		{"one byte more", "n=1001", "the response body is over the 1000-byte limit"},
		{"the largest body, its length said", "n=1000&length=1", ""},
		{"one byte more, its length said", "n=1001&length=1", "the response body is 1001 bytes, over the 1000-byte limit"},
		{"a body that stalls", "n=10&stall=1", "the response body took longer than the 300ms limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := c.Get(srv.URL + "/?" + tc.query)
			var b []byte
			if err == nil {
				b, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			switch {
			case tc.err == "" && (err != nil || len(b) != 1000):
				t.Errorf("%d bytes, %v: want 1000", len(b), err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "GET "+srv.URL)):
				t.Errorf("err = %v, want one with %q and the URL", err, tc.err)
			}
		})
	}
}

// Issue 41, item 7: a log that answers with a body larger than the
// default limit fails the scan at once, on both kinds of log, with an
// error that says so: the Sunlight client's retries of a failed body
// (after 1, 5, 25 and 125 s) are cut short.
func TestScanResponseTooLarge(t *testing.T) {
	fx := cttest.NewFixture(t, 600, 60, 31)
	f := openFilter(t, fx.Filter)
	var huge atomic.Int64
	logs := testLogsThrough(t, fx, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.Contains(r.URL.Path, "get-entries") && r.URL.Path != "/tile/data/001" {
				h.ServeHTTP(w, r)
				return
			}
			huge.Add(1)
			zeros := make([]byte, 1<<20)
			for range 64 { // 64 MiB, its length unsaid
				if _, err := w.Write(zeros); err != nil {
					return
				}
			}
		})
	})
	for kind, open := range logs {
		t.Run(kind, func(t *testing.T) {
			huge.Store(0)
			_, err := (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{})}).Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), "the response body is over the 16777216-byte limit") {
				t.Errorf("err = %v", err)
			}
			if kind == "static" && huge.Load() > 2 { // once by the client, once to name the entry
				t.Errorf("the tile was asked for %d times", huge.Load())
			}
		})
	}
}

// Red team L4: a log that redirects its checkpoint out of http and https
// (to file:///etc/passwd) is refused at the first answer: the Sunlight
// client, which retries a failed request after 1, 5, 25 and 125 s, asks
// once, and the error says why.
func TestRedirectOutOfHTTPNotRetried(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	}))
	defer srv.Close()
	for _, key := range []bool{false, true} {
		calls.Store(0)
		opts := Options{Kind: Static}
		if key {
			opts.Key = cttest.NewRFC6962Server(t, cttest.NewFixture(t, 1, 1, 7)).Key.Public()
		}
		l, err := Open(context.Background(), srv.URL, opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.Head(context.Background())
		if err == nil || !strings.Contains(err.Error(), "redirected to file:///etc/passwd: only http and https are followed") || calls.Load() != 1 {
			t.Errorf("with a key %v: %v after %d requests", key, err, calls.Load())
		}
	}
}
