package ct

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkbf/pkbf/retryafter"
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

// Limits bound what one response from a log may cost, whatever client
// makes the request. The zero value is the defaults.
type Limits struct {
	// MaxBody is the most bytes of one response body as read, after any
	// decompression by the HTTP client (0: 16 MiB).
	MaxBody int64
	// BodyTimeout is the longest one response body may take to arrive,
	// from its headers to its last byte (0: 2 minutes).
	BodyTimeout time.Duration
}

// defaultClient makes a log's requests when its options give no client:
// Transport's retries, and a minute at most for an answer's headers.
func defaultClient() *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.ResponseHeaderTimeout = time.Minute
	return &http.Client{Transport: &Transport{Base: base}}
}

// client returns a copy of hc whose responses are held to the limits.
func (l Limits) client(hc *http.Client) *http.Client {
	if l.MaxBody <= 0 {
		l.MaxBody = 16 << 20
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = 2 * time.Minute
	}
	c := *hc
	c.Transport = &bounded{base: hc.Transport, limits: l}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			err := &limitError{fmt.Sprintf("%s %s: redirected to %s: only http and https are followed", via[0].Method, via[0].URL.Redacted(), req.URL.Redacted())}
			if hook, ok := req.Context().Value(limitHookKey{}).(func(error)); ok {
				hook(err) // it fails the same way every time: no retry
			}
			return err
		}
		if hc.CheckRedirect != nil {
			return hc.CheckRedirect(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// bounded is an http.RoundTripper that holds each response to Limits.
type bounded struct {
	base   http.RoundTripper
	limits Limits
}

// A limitError is a response that passed one of the Limits, or one that
// redirected out of http and https: an answer that fails the same way
// every time.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// limitHookKey marks a context whose requests report a limit they pass
// to a func(error): abortOnLimit.
type limitHookKey struct{}

// abortOnLimit returns a context that ends as soon as a request made with
// it passes one of the Limits, a function that turns the error its caller
// got into that limit's, if the limit was the end, and one that releases
// the context. Some clients retry a response whose body failed, after
// long pauses (the Sunlight client: 1, 5, 25 and 125 s); a limit passed
// (or a redirect out of http and https) fails the same way every time.
func abortOnLimit(ctx context.Context) (_ context.Context, limited func(error) error, release func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	ctx = context.WithValue(ctx, limitHookKey{}, func(err error) { cancel(err) })
	limited = func(err error) error {
		var lerr *limitError
		if err != nil && errors.As(context.Cause(ctx), &lerr) {
			return lerr
		}
		return err
	}
	return ctx, limited, func() { cancel(nil) }
}

func (b *bounded) RoundTrip(req *http.Request) (*http.Response, error) {
	base := b.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) error {
		err := &limitError{fmt.Sprintf("%s %s: ", req.Method, req.URL.Redacted()) + fmt.Sprintf(format, args...)}
		if hook, ok := req.Context().Value(limitHookKey{}).(func(error)); ok {
			hook(err)
		}
		return err
	}
	if resp.ContentLength > b.limits.MaxBody {
		resp.Body.Close()
		return nil, fail("the response body is %d bytes, over the %d-byte limit", resp.ContentLength, b.limits.MaxBody)
	}
	body := &boundedBody{body: resp.Body, left: b.limits.MaxBody, fail: fail, max: b.limits.MaxBody, timeout: b.limits.BodyTimeout}
	body.timer = time.AfterFunc(b.limits.BodyTimeout, func() {
		body.late.Store(true)
		body.body.Close() // ends a Read in progress
	})
	resp.Body = body
	return resp, nil
}

// boundedBody is a response body held to a size and a deadline.
type boundedBody struct {
	body      io.ReadCloser
	left, max int64
	timeout   time.Duration
	timer     *time.Timer
	late      atomic.Bool
	fail      func(format string, args ...any) error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.late.Load() {
		return 0, b.fail("the response body took longer than the %v limit", b.timeout)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more than the limit tells a body over it
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	switch {
	case b.left < 0:
		b.body.Close()
		return 0, b.fail("the response body is over the %d-byte limit", b.max)
	case err != nil && err != io.EOF && b.late.Load():
		return n, b.fail("the response body took longer than the %v limit", b.timeout)
	}
	return n, err
}

func (b *boundedBody) Close() error {
	b.timer.Stop()
	return b.body.Close()
}
