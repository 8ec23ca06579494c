package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// progress shows keys done, rate and (for regular files) how much of the
// input was read, on stderr, when stderr is a terminal and the work has
// lasted longer than progressDelay. It is never shown otherwise, and never
// on stdout; the screen keeps it out of the verdicts' way.
type progress struct {
	keys  atomic.Int64
	bytes atomic.Int64
	total int64 // bytes in the inputs, if all are regular files; else 0

	scr     *screen                            // nil: no display
	what    string                             // "keys", or what is being counted
	line    func(elapsed time.Duration) string // if set, the whole progress line
	started time.Time
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// Progress display timing.
var (
	progressDelay = time.Second
	progressEvery = 250 * time.Millisecond
)

// startProgress starts the display; set, if given, sets what the
// display shows (what, line) before it starts, as it is read meanwhile.
func startProgress(scr *screen, names []string, set ...func(*progress)) *progress {
	p := &progress{started: time.Now(), done: make(chan struct{}), what: "keys"}
	for _, f := range set {
		f(p)
	}
	if !scr.progress {
		return p
	}
	p.scr = scr
	for _, name := range names {
		fi, err := os.Stat(name)
		if name == "-" || err != nil || !fi.Mode().IsRegular() {
			p.total = 0
			break
		}
		p.total += fi.Size()
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		select {
		case <-time.After(progressDelay):
		case <-p.done:
			return
		}
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			p.scr.showProgress(p.text())
			select {
			case <-tick.C:
			case <-p.done:
				return
			}
		}
	}()
	return p
}

// text is the progress line: "123.4k keys, 45.6k keys/s, 37% of 1.2 GiB".
func (p *progress) text() string {
	if p.line != nil {
		return p.line(time.Since(p.started))
	}
	keys := p.keys.Load()
	rate := float64(keys) / time.Since(p.started).Seconds()
	line := fmt.Sprintf("%s %s, %s %s/s", count(float64(keys)), p.what, count(rate), p.what)
	if p.total > 0 {
		line += fmt.Sprintf(", %.0f%% of %s", 100*float64(p.bytes.Load())/float64(p.total), binarySize(uint64(p.total)))
	}
	return line
}

// stop ends the display and erases it.
func (p *progress) stop() {
	p.once.Do(func() {
		close(p.done)
		p.wg.Wait()
		if p.scr != nil {
			p.scr.eraseProgress()
		}
	})
}

// count gives a number in human units: 950, 12.3k, 4.5M.
func count(v float64) string {
	switch {
	case v < 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v < 1e6:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case v < 1e9:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	}
	return strconv.FormatFloat(v/1e9, 'f', 1, 64) + "G"
}
