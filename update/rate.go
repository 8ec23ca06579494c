package update

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// resetReader pushes a stall timer back whenever bytes arrive, and
// counts them for watchRate.
type resetReader struct {
	r     io.Reader
	timer *time.Timer
	after time.Duration
	n     atomic.Int64
}

func (r *resetReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.timer.Reset(r.after)
		r.n.Add(int64(n))
	}
	return n, err
}

// slowError is a body that arrived too slowly: got bytes in a window.
type slowError struct {
	got, min int64
	window   time.Duration
}

func (e *slowError) Error() string {
	return fmt.Sprintf("%s/s for %s, below the minimum of %s/s", rate(float64(e.got)/e.window.Seconds()), e.window, rate(float64(e.min)))
}

// rate words a number of bytes a second: "0.9 B", "12.5 KiB".
func rate(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB"}
	i := 0
	for ; v >= 1024 && i < len(units)-1; i++ {
		v /= 1024
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// watchRate calls fail once if fewer than minRate bytes a second were
// counted in n over any window (windows follow one another from the
// start). Call the returned function to stop watching.
func watchRate(n *atomic.Int64, minRate int64, window time.Duration, fail func(error)) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(window)
		defer tick.Stop()
		var last int64
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				now := n.Load()
				if got := now - last; float64(got) < float64(minRate)*window.Seconds() {
					fail(&slowError{got: got, min: minRate, window: window})
					return
				}
				last = now
			}
		}
	}()
	return func() { close(done) }
}
