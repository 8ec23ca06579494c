package update

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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
