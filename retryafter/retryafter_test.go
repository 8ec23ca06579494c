package retryafter

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	limit := 5 * time.Minute
	soon := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	for _, c := range []struct {
		v        string
		min, max time.Duration
	}{
		{"", 0, 0},
		{"0", 0, 0},
		{"120", 2 * time.Minute, 2 * time.Minute},
		{"99999", limit, limit},
		{"99999999999999999999", 0, 0}, // not an int64: unreadable
		{"9223372036854775807", limit, limit},
		{"-5", 0, 0},
		{"soon", 0, 0},
		{soon, 80 * time.Second, 90 * time.Second},
		{"Sun, 06 Nov 1994 08:49:37 GMT", 0, 0}, // past
		{"Fri, 31 Dec 9999 23:59:59 GMT", limit, limit},
	} {
		if got := Parse(c.v, limit); got < c.min || got > c.max {
			t.Errorf("Parse(%q) = %v, want %v to %v", c.v, got, c.min, c.max)
		}
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("a pause that ends: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(start) > time.Minute {
		t.Errorf("a cancelled pause: %v after %v", err, time.Since(start))
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("no pause, cancelled: %v", err)
	}
	if err := Sleep(context.Background(), -time.Second); err != nil {
		t.Errorf("no pause: %v", err)
	}
}
