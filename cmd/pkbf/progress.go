package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

// progress shows keys done, rate and (for regular files) the percentage of
// bytes read on stderr, when stderr is a terminal and the work has lasted
// longer than progressDelay. It is never shown otherwise, and never on
// stdout.
type progress struct {
	keys  atomic.Int64
	bytes atomic.Int64
	total int64 // bytes in the inputs, if all are regular files; else 0

	w       io.Writer // nil: no display
	mu      sync.Mutex
	shown   bool
	started time.Time
	done    chan struct{}
	wg      sync.WaitGroup
}

// Progress display timing.
var (
	progressDelay = time.Second
	progressEvery = 250 * time.Millisecond
)

// isTerminal reports whether w is a terminal; a variable so tests can
// point it at a pseudo-terminal of their own.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func startProgress(stderr io.Writer, inputs []input) *progress {
	p := &progress{started: time.Now(), done: make(chan struct{})}
	if !isTerminal(stderr) {
		return p
	}
	p.w = stderr
	for _, in := range inputs {
		fi, err := os.Stat(in.name)
		if in.name == "-" || err != nil || !fi.Mode().IsRegular() {
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
			p.show()
			select {
			case <-tick.C:
			case <-p.done:
				return
			}
		}
	}()
	return p
}

func (p *progress) show() {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := p.keys.Load()
	rate := float64(keys) / time.Since(p.started).Seconds()
	line := fmt.Sprintf("\r\033[K%d keys, %.0f keys/s", keys, rate)
	if p.total > 0 {
		line += fmt.Sprintf(", %.0f%% of %d bytes", 100*float64(p.bytes.Load())/float64(p.total), p.total)
	}
	io.WriteString(p.w, line)
	p.shown = true
}

// clear erases the progress line, before other output on stderr.
func (p *progress) clear() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		io.WriteString(p.w, "\r\033[K")
		p.shown = false
	}
}

// stop ends the display and erases it.
func (p *progress) stop() {
	if p.w == nil {
		return
	}
	close(p.done)
	p.wg.Wait()
	p.clear()
}
