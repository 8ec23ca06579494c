package ct

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
