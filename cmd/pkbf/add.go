package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keys"
)

// add: keys into a filter file, in place, under the reference's lock
// protocol.

func addCommand(stdout, stderr io.Writer) (*command, *string, *bool) {
	c := newCommand("add", "add [--passphrase-file FILE] [-r] FILTER [FILE...]", stdout, stderr)
	passphraseFile := c.String("passphrase-file", "", "try each line of `FILE` as the passphrase of encrypted PKCS#12 files (also $"+passphraseEnv+")")
	recursive := c.Bool("recursive", false, "add the keys of every file under the directories given (as grep -r: links inside them are not followed)")
	c.alias("r", "recursive")
	return c, passphraseFile, recursive
}

func runAdd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, passphraseFile, recursive := addCommand(stdout, stderr)
	if ok, code := c.parse(args, 1, -1); !ok {
		return code
	}
	pws, err := passphrases(*passphraseFile)
	if err != nil {
		errorf(stderr, "%s", message(err))
		return exitTrouble
	}
	path := c.Arg(0)
	f, err := pkbf.Edit(path)
	if err != nil {
		errorf(stderr, "%s", message(err))
		return exitTrouble
	}
	interrupt := stopOnInterrupt()
	defer interrupt.release()
	inputs := inputsOf(c.Args()[1:], stdin, pws, *recursive)
	scr := newScreen(stdout, stderr)
	prog := startProgress(scr, inputs)
	r := addInputs(f, inputs, &interrupt.stopping, scr, prog)
	prog.stop()
	if err := f.Close(); err != nil {
		errorf(stderr, "%s", message(err))
		fmt.Fprintf(stderr, "pkbf: %d keys read before the error; see above for what became of them\n", r.keys)
		return exitTrouble
	}
	h := f.Header()
	fmt.Fprintf(stdout, "%s: %s from %s; %s, revision %d\n", path, plural(r.added, "new entry", "new entries"), plural(r.keys, "key", "keys"), plural(int(h.EntryCount), "entry", "entries"), h.Revision)
	switch {
	case r.stopped:
		errorf(stderr, "interrupted: the keys before stayed added, the rest were not")
		return exitSignaled
	case r.troubled:
		return exitTrouble
	}
	return exitOK
}

// interruption is what stopOnInterrupt watches.
type interruption struct {
	stopping atomic.Bool   // an interrupt came
	stop     chan struct{} // closed when it came
	finished chan struct{}
	signals  chan os.Signal
}

// stopOnInterrupt makes a first interrupt (or SIGTERM) set stopping and
// close stop: add stops after the key in progress and closes the file as
// usual, check prints the verdicts made. It also restores the default
// action, so a second one quits at once, even while the input is blocked:
// that is safe too, as each add sets the key's bits before the header and
// the mapped file keeps every write made. Call release when done.
func stopOnInterrupt() *interruption {
	in := &interruption{stop: make(chan struct{}), finished: make(chan struct{}), signals: make(chan os.Signal, 1)}
	signal.Notify(in.signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-in.signals:
			in.stopping.Store(true)
			signal.Stop(in.signals)
			close(in.stop)
		case <-in.finished:
		}
	}()
	return in
}

func (in *interruption) release() {
	signal.Stop(in.signals)
	close(in.finished)
}

// interruptContext is stopOnInterrupt as a context, for work that takes
// one: a first interrupt cancels it, a second quits at once. Call release
// when done.
func interruptContext() (ctx context.Context, release func()) {
	interrupt := stopOnInterrupt()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-interrupt.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(); interrupt.release() }
}

// addResult is what addInputs did.
type addResult struct {
	keys, added       int  // keys read, encodings new to the filter
	troubled, stopped bool // an input could not be read; interrupted
}

// addInputs adds every key of inputs to f, under each encoding a filter
// may hold it in, until the inputs end, stopping is set, or f fails (it
// was replaced or cut short: Close reports why).
func addInputs(f *pkbf.Filter, inputs []input, stopping *atomic.Bool, scr *screen, prog *progress) addResult {
	var r addResult
	encodings := eachItem(func(it *item) {
		it.spki, it.err = it.key.SPKI()
		if it.err == nil {
			it.extra, it.err = keys.Encodings(it.spki)
		}
	})
	pipeline(pipelineOptions{inputs: inputs, workers: runtime.GOMAXPROCS(0), work: encodings, progress: prog, emit: func(it *item) bool {
		if stopping.Load() {
			r.stopped = true
			return false
		}
		if it.err != nil {
			r.troubled = true
			scr.errorf("%s%s", it.errorMessage(), passphraseHint(it.err))
			return true
		}
		r.keys++
		for _, e := range it.extra {
			if f.Add(e) {
				r.added++
			}
		}
		return f.Err() == nil
	}})
	return r
}
