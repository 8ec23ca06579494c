// Package retryafter reads the Retry-After header of an HTTP response
// (RFC 9110, section 10.2.3) and waits between tries: the one parser
// and pause of every pkbf client that retries (package update, the
// pwnedkeys API client, and the CT scanner of module
// github.com/pkbf/pkbf/ct, which imports it as a public package).
//
//	if d := retryafter.Parse(resp.Header.Get("Retry-After"), 5*time.Minute); d > 0 {
//		if err := retryafter.Sleep(ctx, d); err != nil {
//			return err // ctx ended during the pause
//		}
//	}
//
// Both functions are safe for concurrent use.
package retryafter

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// Parse returns how long a Retry-After value v asks to wait: its seconds,
// or the time until its HTTP date, at most limit. It returns 0 for an
// empty, unreadable or past value.
func Parse(v string, limit time.Duration) time.Duration {
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 {
		d = time.Duration(min(secs, int64(limit/time.Second)+1)) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	}
	return min(max(d, 0), limit)
}

// Sleep waits d, or until ctx is done, and then returns ctx's error: the
// pause between two tries of a request.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
