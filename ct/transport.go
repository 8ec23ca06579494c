package ct

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/pkbf/pkbf/internal/retryafter"
)

// Transport is an http.RoundTripper for scanning logs: it paces requests
// to a rate, and retries those that fail in ways a retry can mend (a
// connection error, 429, 5xx), after the server's Retry-After or a
// jittered exponential backoff. A pause a server asks for holds for every
// request through the Transport: a struggling log gets one pause, not
// one per request in flight. Only GET and HEAD requests are retried.
type Transport struct {
	// Base makes the requests (nil: http.DefaultTransport).
	Base http.RoundTripper
	// Rate is the most requests a second (0: no limit).
	Rate float64
	// Retries is how many times a request is retried (0: 6).
	Retries int
	// MaxWait caps one wait, Retry-After's included (0: 5 minutes).
	MaxWait time.Duration

	mu      sync.Mutex
	nextReq time.Time // pacing: the earliest the next request may start
	pause   time.Time // a Retry-After: no request before it
}

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

// wait blocks until the request may go: after any pause, at the rate.
func (t *Transport) wait(ctx context.Context) error {
	t.mu.Lock()
	now := time.Now()
	at := now
	if t.pause.After(at) {
		at = t.pause
	}
	if t.Rate > 0 {
		if t.nextReq.After(at) {
			at = t.nextReq
		}
		t.nextReq = at.Add(time.Duration(float64(time.Second) / t.Rate))
	}
	t.mu.Unlock()
	return retryafter.Sleep(ctx, at.Sub(now))
}

// RoundTrip sends req, retrying as the Transport's documentation says.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	retries, maxWait := t.Retries, t.MaxWait
	if retries == 0 {
		retries = 6
	}
	if maxWait == 0 {
		maxWait = 5 * time.Minute
	}
	idempotent := req.Method == http.MethodGet || req.Method == http.MethodHead
	for attempt := 0; ; attempt++ {
		if err := t.wait(req.Context()); err != nil {
			return nil, err
		}
		resp, err := t.base().RoundTrip(req)
		retry := err != nil || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		if !retry || !idempotent || attempt == retries || req.Context().Err() != nil {
			return resp, err // the last answer, or error, is the caller's
		}
		backoff := time.Duration(float64(time.Second) * float64(int(1)<<min(attempt, 8)) * (0.5 + rand.Float64()))
		if err == nil {
			if d := retryafter.Parse(resp.Header.Get("Retry-After"), maxWait); d > 0 {
				backoff = d
				t.mu.Lock()
				if p := time.Now().Add(d); p.After(t.pause) {
					t.pause = p
				}
				t.mu.Unlock()
			}
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		if err := retryafter.Sleep(req.Context(), min(backoff, maxWait)); err != nil {
			return nil, err
		}
	}
}
