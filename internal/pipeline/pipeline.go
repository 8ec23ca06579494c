// Package pipeline runs the keys of many inputs through the work of a
// check or an add: one goroutine reads and frames them into batches,
// workers work on the batches, and the caller's goroutine takes them back
// in input order. It knows nothing of filters or verdicts: the root
// package's Check and AddKeys give it the work and take the batches.
package pipeline

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"sync"

	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keys"
)

// Input is one stream of keys: a name for the slots, and how to open it.
type Input struct {
	Name string
	Open func() (io.ReadCloser, error)
}

// Files returns the inputs of the files named, as the root package's
// Files documents.
func Files(names ...string) iter.Seq[Input] {
	return func(yield func(Input) bool) {
		for _, name := range names {
			if name == "-" {
				if !yield(Input{Name: "<stdin>", Open: func() (io.ReadCloser, error) { return io.NopCloser(os.Stdin), nil }}) {
					return
				}
				continue
			}
			if fi, err := os.Stat(name); err != nil || !fi.IsDir() {
				if !yield(fileInput(name)) {
					return
				}
				continue
			}
			stopped := false
			filepath.WalkDir(name, func(path string, d fs.DirEntry, err error) error {
				switch {
				case err != nil:
					stopped = !yield(Input{Name: path, Open: func() (io.ReadCloser, error) { return nil, err }})
				case d.Type().IsRegular():
					stopped = !yield(fileInput(path))
				}
				if stopped {
					return fs.SkipAll
				}
				return nil
			})
			if stopped {
				return
			}
		}
	}
}

func fileInput(path string) Input {
	return Input{Name: path, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
}

// A Batch is a run of slots (S, one a key) from one reader, worked on by
// one worker and handed back in order; once handed back it is reused for
// later keys.
type Batch[S any] struct {
	Slots []S
	// Room is scratch memory for the work, Config.Room bytes a slot.
	Room []byte
	// Failed, set by the work, is the failure that ends the run: the
	// batch's slots are not to be handed on.
	Failed error
	// Aborted, set by the work, says the context ended before every slot
	// was worked on: none of them may be handed on.
	Aborted bool

	done  chan struct{}
	arena []byte // the slots' Raw, from the scanner (SetRawAlloc)
}

const (
	// Size is the most slots a batch holds.
	Size = 256
	// arenaSize is the size a batch's arena starts at: 256 PEM
	// certificates' worth fill a few of them, and it keeps what it grew
	// to.
	arenaSize = 64 << 10
)

func newBatch[S any](room int) *Batch[S] {
	return &Batch[S]{Slots: make([]S, 0, Size), done: make(chan struct{}), Room: make([]byte, room*Size)}
}

// reset empties a handed-back batch for reuse, keeping its memory.
func (b *Batch[S]) reset() {
	clear(b.Slots)
	b.Slots, b.arena, b.Failed, b.Aborted = b.Slots[:0], b.arena[:0], nil, false
	b.done = make(chan struct{})
}

// alloc returns n bytes of the batch's arena, for a key's Raw: memory
// reused once the batch is handed back, so that reading a key allocates
// nothing.
func (b *Batch[S]) alloc(n int) []byte {
	if cap(b.arena)-len(b.arena) < n {
		b.arena = make([]byte, 0, max(arenaSize, 2*cap(b.arena), n))
	}
	end := len(b.arena) + n
	r := b.arena[len(b.arena):end:end]
	b.arena = b.arena[:end]
	return r
}

// A Pool keeps the batches of finished inline runs: a batch is hundreds
// of KB, and making one for every short run (a request's, a
// certificate's, a login's) costs far more than its keys' lookups.
type Pool[S any] struct{ p sync.Pool }

// Config is what a run does.
type Config[S any] struct {
	// Workers is how many goroutines work on batches; 1 runs everything
	// in the caller's goroutine.
	Workers int
	// Passphrases are tried on encrypted containers.
	Passphrases []string
	// Idle, if set, is called, in the caller's goroutine, whenever every
	// batch read so far has been handed back.
	Idle func()
	// Room is the scratch memory a slot has in Batch.Room.
	Room int
	// Slot makes the slot of a key read from the input named input, or
	// of the error that kept an input, or its rest, from being read.
	Slot func(input string, k keys.Key, err error) S
	// Work works on a batch, in a worker.
	Work func(*Batch[S])
	// Emit takes each batch once worked on, in input order, in the
	// caller's goroutine; false stops the run.
	Emit func(*Batch[S]) bool
	// Pool keeps the batch of an inline run for the next.
	Pool *Pool[S]
}

// Run reads every key of the inputs and runs it through c. Cancelling ctx
// stops it between two keys; it returns once no worker is working.
func Run[S any](ctx context.Context, inputs iter.Seq[Input], c *Config[S]) {
	if c.Workers == 1 {
		inline(ctx, inputs, c)
		return
	}
	parallel(ctx, inputs, c)
}

// inline runs everything in the caller's goroutine: each batch is worked
// on and handed back before more is read.
func inline[S any](ctx context.Context, inputs iter.Seq[Input], c *Config[S]) {
	b, _ := c.Pool.p.Get().(*Batch[S])
	if b == nil {
		b = newBatch[S](c.Room)
	}
	rd := &reader[S]{ctx: ctx, c: c, b: b, get: func() *Batch[S] { return b }}
	rd.send = func(b *Batch[S]) bool {
		c.Work(b)
		ok := c.Emit(b)
		b.reset()
		return ok && ctx.Err() == nil
	}
	rd.read(inputs)
	// Not after a panic (Emit's): b may be half made. Nor with the
	// arena a huge key grew.
	if cap(b.arena) <= 4*arenaSize {
		b.reset()
		c.Pool.p.Put(b)
	}
}

// parallel reads in one goroutine, works on batches in workers and hands
// them back in order in the caller's goroutine.
func parallel[S any](ctx context.Context, inputs iter.Seq[Input], c *Config[S]) {
	workers := c.Workers
	order := make(chan *Batch[S], 4*workers)
	todo := make(chan *Batch[S], 4*workers)
	// Handed-back batches go back to the reader; it makes new ones only
	// while none is free.
	free := make(chan *Batch[S], 4*workers+2)
	halted := make(chan struct{})
	var halt sync.Once
	go func() {
		defer close(order)
		defer close(todo)
		rd := &reader[S]{ctx: ctx, c: c}
		rd.get = func() *Batch[S] {
			select {
			case b := <-free:
				return b
			default:
				return newBatch[S](c.Room)
			}
		}
		rd.send = func(b *Batch[S]) bool {
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
		rd.b = rd.get()
		rd.read(inputs)
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				select {
				case b, ok := <-todo:
					if !ok {
						return
					}
					c.Work(b)
					close(b.done)
				case <-halted:
					return
				}
			}
		})
	}
	// Whatever ends the loop, no worker is working once this returns:
	// the caller may close what they use.
	defer func() {
		halt.Do(func() { close(halted) })
		wg.Wait()
	}()
	done := ctx.Done()
	for {
		var b *Batch[S]
		var ok bool
		select {
		case b, ok = <-order:
		case <-done:
			return
		}
		if !ok {
			return
		}
		select {
		case <-b.done:
		case <-done:
			return
		}
		if !c.Emit(b) {
			return
		}
		b.reset()
		select {
		case free <- b:
		default:
		}
		if c.Idle != nil && len(order) == 0 {
			c.Idle()
		}
	}
}

// reader frames the keys of the inputs into batches and sends them.
type reader[S any] struct {
	ctx     context.Context
	c       *Config[S]
	b       *Batch[S]
	get     func() *Batch[S]
	send    func(*Batch[S]) bool
	stopped bool
	// Batches sent so far, and when the scanner last took memory: a DER
	// object's memory is taken before it is read, and a read may send
	// the batch (flush, before a read that may wait).
	sent, allocAt int
}

func (rd *reader[S]) read(inputs iter.Seq[Input]) {
	for in := range inputs {
		rd.input(in)
		if rd.stopped {
			return
		}
	}
	rd.flush()
}

// flush sends the batch being filled, if it holds anything.
func (rd *reader[S]) flush() {
	if !rd.stopped && len(rd.b.Slots) > 0 {
		rd.stopped = !rd.send(rd.b)
		rd.b = rd.get()
		rd.sent++
	}
}

func (rd *reader[S]) add(s S) {
	rd.b.Slots = append(rd.b.Slots, s)
	if len(rd.b.Slots) == Size {
		rd.flush()
	}
}

func (rd *reader[S]) input(in Input) {
	if rd.ctx.Err() != nil {
		rd.stopped = true
		return
	}
	rc, err := in.Open()
	if err != nil {
		rd.add(rd.c.Slot(in.Name, keys.Key{}, err))
		return
	}
	defer rc.Close()
	sc := scanners.Get().(*keys.Scanner)
	sc.Reset(&idleReader{r: rc, idle: rd.flush})
	sc.SetPassphrases(rd.c.Passphrases...)
	sc.SetRawAlloc(func(n int) []byte {
		rd.allocAt = rd.sent
		return rd.b.alloc(n)
	})
	done := rd.ctx.Done()
	for !rd.stopped && sc.Scan() {
		select {
		case <-done: // between two keys: a container's can be costly to read
			rd.stopped = true
			continue
		default:
		}
		k := sc.Key()
		if rd.allocAt != rd.sent { // its memory may be a sent batch's
			k.Raw = bytes.Clone(k.Raw)
			rd.allocAt = rd.sent
		}
		rd.add(rd.c.Slot(in.Name, k, nil))
	}
	if err := sc.Err(); err != nil && !rd.stopped {
		rd.add(rd.c.Slot(in.Name, keys.Key{}, perr.Errorf("reading %s: %w", in.Name, err)))
	}
	sc.Reset(nil)
	sc.SetRawAlloc(nil)
	sc.SetPassphrases() // not kept alive in the pool
	scanners.Put(sc)
}

// scanners keeps Scanners, and their 64 KiB read buffers, between inputs.
var scanners = sync.Pool{New: func() any { return keys.NewScanner(nil) }}

// idleReader calls idle before a read that may wait: one after a read
// that came back short, as a pipe's or a terminal's does when their
// writer has sent nothing more yet. A regular file's reads come back
// full to its end, so its keys go out in whole batches.
type idleReader struct {
	r     io.Reader
	idle  func()
	short bool
}

func (ir *idleReader) Read(p []byte) (int, error) {
	if ir.short {
		ir.idle()
	}
	n, err := ir.r.Read(p)
	ir.short = n < len(p)
	return n, err
}
