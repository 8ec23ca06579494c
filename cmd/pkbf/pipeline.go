package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pkbf/pkbf/internal/source"
	"github.com/pkbf/pkbf/keys"
)

// An input is one FILE argument, or standard input.
type input struct {
	name        string // as the user wrote it; "-" is standard input
	stdin       io.Reader
	passphrases []string // for encrypted containers, after the empty one
	recursive   bool     // a directory is read file by file, as grep -r
}

// display is how the input is named in output.
func (in input) display() string {
	if in.name == "-" {
		return "<stdin>"
	}
	return in.name
}

func inputsOf(names []string, stdin io.Reader, passphrases []string, recursive bool) []input {
	if len(names) == 0 {
		names = []string{"-"}
	}
	inputs := make([]input, len(names))
	for i, name := range names {
		inputs[i] = input{name: name, stdin: stdin, passphrases: passphrases, recursive: recursive}
	}
	return inputs
}

// errDirectory is an input that is a directory, read without -r.
var errDirectory = errors.New("is a directory")

// passphraseEnv names the environment variable that may hold a passphrase
// for encrypted PKCS#12 files, beside -passphrase-file.
const passphraseEnv = "PKBF_PASSPHRASE"

// passphrases returns the passphrases to try on encrypted containers: each
// line of file (if not ""), then $PKBF_PASSPHRASE (if set). A passphrase on
// the command line would show in ps, so there is no flag for one.
func passphrases(file string) ([]string, error) {
	var out []string
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		for line := range strings.Lines(string(b)) {
			out = append(out, strings.TrimRight(line, "\r\n"))
		}
	}
	if v, ok := os.LookupEnv(passphraseEnv); ok {
		out = append(out, v)
	}
	return out, nil
}

// An item is one key found in an input, or an input that could not be
// read (then key is zero and err says why), with what the workers made of it.
type item struct {
	input string // display name
	key   keys.Key
	err   error
	// Set by the work function.
	spki      []byte         // as the input has it
	canonical []byte         // OpenSSL's encoding: spki itself when the same
	other     []byte         // an EC key's other point form, or nil
	fp        fingerprintSet // once lookupItems computed them
	sshFP     string         // SSH keys: the ssh-keygen fingerprint
	comment   string         // SSH keys: the comment
	probably  bool
	extra     [][]byte // add: the other encodings
	// check -confirm: what the pwnedkeys API said of a probable key.
	pwned      bool
	confirmErr error
	// The filter file changed while this item was queried: nothing after
	// it can be answered.
	filterErr error
}

// source names where the item came from, for output and errors.
func (it *item) source() string { return string(it.appendSource(nil)) }

// appendSource appends source() to b, without building strings: it runs
// for every verdict.
func (it *item) appendSource(b []byte) []byte {
	b = append(b, it.input...)
	if it.key.Index == 0 {
		return b
	}
	k := &it.key
	return source.Append(append(b, ": "...), k.Block, k.Line, k.Index, k.Offset, k.Part)
}

// errorMessage says what went wrong and where; an error opening or reading
// an input already names it.
func (it *item) errorMessage() string {
	if it.key.Index == 0 {
		return message(it.err)
	}
	return it.source() + ": " + message(it.err)
}

// batch is a run of items from one input, processed by one worker and
// emitted in order. Once emitted it is reused for later items: batches
// and lookupItems' arrays made anew for each 256 keys were most of what
// check allocated (700 of 836 bytes a DER key), and the collector's work
// and fresh memory's page faults grew with them.
type batch struct {
	items []item
	done  chan struct{}
	room  []byte // for the items' other encodings: see lookupItems
}

const batchSize = 256

func newBatch() *batch {
	return &batch{items: make([]item, 0, batchSize), done: make(chan struct{}), room: make([]byte, formsRoom*batchSize)}
}

// reset empties an emitted batch for reuse, keeping its memory.
func (b *batch) reset() {
	clear(b.items)
	b.items = b.items[:0]
	b.done = make(chan struct{})
}

// eachItem makes a work function for pipeline from one for a single item,
// called on the items that were read without error.
func eachItem(work func(*item)) func(*batch) {
	return func(b *batch) {
		for i := range b.items {
			if b.items[i].err == nil {
				work(&b.items[i])
			}
		}
	}
}

// pipelineOptions say what a pipeline reads and does.
type pipelineOptions struct {
	inputs  []input
	workers int          // goroutines running work
	work    func(*batch) // on each batch; skipping items with an error is its job
	// emit is called on each item in input order, from one goroutine; it
	// returns false to stop early.
	emit func(*item) bool
	// idle, if not nil, is called from emit's goroutine whenever
	// everything read so far has been emitted: the input is slower than
	// the work (a pipe, a terminal), so output should be flushed.
	idle func()
	// Closing stop (it may be nil) makes pipeline return at once, leaving
	// the reader to finish in the background: for an interrupt while the
	// input is blocked.
	stop     <-chan struct{}
	progress *progress
}

// pipeline reads every key of the inputs and runs the work and emit of o
// on them. Memory stays bounded: the reader waits when the workers or
// emit fall behind.
func pipeline(o pipelineOptions) {
	inputs, workers, work, emit, idle, stop, prog := o.inputs, o.workers, o.work, o.emit, o.idle, o.stop, o.progress
	order := make(chan *batch, 4*workers)
	todo := make(chan *batch, 4*workers)
	// Emitted batches go back to the reader; it makes new ones only
	// while none is free.
	free := make(chan *batch, 4*workers+2)
	get := func() *batch {
		select {
		case b := <-free:
			return b
		default:
			return newBatch()
		}
	}
	halted := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(halted) }) }

	go func() { // the reader: frames keys, in order
		defer close(order)
		defer close(todo)
		send := func(b *batch) bool {
			select {
			case order <- b:
			case <-halted:
				return false
			}
			select {
			case todo <- b:
				return true
			case <-halted:
				return false
			}
		}
		for _, in := range inputs {
			if !readInput(in, get, send, prog) {
				return
			}
		}
	}()

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range todo {
				work(b)
				for i := range b.items {
					b.items[i].key.Raw = nil // done with it
				}
				close(b.done)
			}
		}()
	}

	for {
		var b *batch
		var ok bool
		select {
		case b, ok = <-order:
		case <-stop:
			halt()
			return
		}
		if !ok {
			break
		}
		select {
		case <-b.done:
		case <-stop:
			halt()
			return
		}
		for i := range b.items {
			if !emit(&b.items[i]) {
				halt()
				for range order { // let the reader finish
				}
				wg.Wait()
				return
			}
		}
		prog.keys.Add(int64(len(b.items)))
		b.reset()
		select {
		case free <- b:
		default:
		}
		if idle != nil && len(order) == 0 {
			idle()
		}
	}
	wg.Wait()
}

// readInput frames the keys of one input into batches and sends them.
// New batches come from get.
func readInput(in input, get func() *batch, send func(*batch) bool, prog *progress) bool {
	fail := func(err error) bool {
		b := get()
		b.items = append(b.items, item{input: in.display(), err: err})
		return send(b)
	}
	var file *os.File
	if in.name == "-" {
		file, _ = in.stdin.(*os.File)
	} else {
		f, err := os.Open(in.name)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			if !in.recursive {
				return fail(fmt.Errorf("%s %w", in.name, errDirectory))
			}
			return readDirectory(in, get, send, prog, fail)
		}
		file = f
	}
	var r io.Reader = file
	if file == nil {
		r = in.stdin
	}
	regular := false
	if file != nil {
		fi, err := file.Stat()
		regular = err == nil && fi.Mode().IsRegular()
	}
	// From a pipe or terminal, a partial batch goes out whenever the scanner
	// needs more input, which may block: keys from a slow stream are not held
	// back waiting for more. Regular files do not block; they go in batches.
	b := get()
	ok := true
	flush := func() {
		if ok && len(b.items) > 0 {
			ok = send(b)
			b = get()
		}
	}
	beforeRead := flush
	if regular {
		beforeRead = func() {}
	}
	s := keys.NewScanner(&countingReader{r: r, n: &prog.bytes, beforeRead: beforeRead})
	s.SetPassphrases(in.passphrases...)
	for ok && s.Scan() {
		b.items = append(b.items, item{input: in.display(), key: s.Key()})
		if len(b.items) == batchSize {
			flush()
		}
	}
	if err := s.Err(); err != nil && ok {
		b.items = append(b.items, item{input: in.display(), err: fmt.Errorf("reading %s: %w", in.display(), err)})
	}
	flush()
	return ok
}

// readDirectory reads every regular file under the directory in.name, in
// lexical order, as grep -r does: links found inside are not followed,
// and other special files are skipped.
func readDirectory(in input, get func() *batch, send func(*batch) bool, prog *progress, fail func(error) bool) bool {
	ok := true
	err := filepath.WalkDir(in.name, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			ok = fail(err)
		case d.Type().IsRegular():
			file := in
			file.name = path
			ok = readInput(file, get, send, prog)
		}
		if !ok {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil && ok {
		ok = fail(err)
	}
	return ok
}

// countingReader counts the bytes read, for the progress display, and
// calls beforeRead before each read.
type countingReader struct {
	r          io.Reader
	n          *atomic.Int64
	beforeRead func()
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.beforeRead()
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
