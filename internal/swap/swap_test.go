package swap

import (
	"sync/atomic"
	"testing"
	"time"
)

type closer struct{ closed atomic.Bool }

func (c *closer) Close() error { c.closed.Store(true); return nil }

// waitIdle waits for the closes under way to end.
func waitIdle(t *testing.T, s *Value[*closer]) {
	t.Helper()
	for start := time.Now(); s.Closing() != 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("closes still under way after 10 s")
		}
	}
}

// A replaced value is closed once its last reference is released, not
// before; after Close, the current value is closed and Swap closes what
// it is given instead of making it current.
func TestSwapClosesWhenReleased(t *testing.T) {
	a, b, c := new(closer), new(closer), new(closer)
	s := New(a)
	r := s.Acquire()
	if !s.Swap(b) {
		t.Fatal("Swap before Close reported false")
	}
	waitIdle(t, s)
	if a.closed.Load() || r.Value() != a {
		t.Fatal("a value still referred to was closed")
	}
	r.Release()
	waitIdle(t, s)
	if !a.closed.Load() {
		t.Fatal("a replaced value was not closed once released")
	}
	if got := s.Acquire(); got.Value() != b {
		t.Fatal("Acquire does not return the current value")
	} else {
		got.Release()
	}
	s.Close()
	if s.Swap(c) {
		t.Error("Swap after Close reported true")
	}
	waitIdle(t, s)
	if !b.closed.Load() || !c.closed.Load() {
		t.Errorf("after Close: current closed %v, swapped-in closed %v; want both", b.closed.Load(), c.closed.Load())
	}
}
