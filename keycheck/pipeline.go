package keycheck

import (
	"bytes"
	"io"
	"iter"
	"sync"

	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keys"
)

// A run's keys flow through three stages: one goroutine reads the inputs
// and frames their keys into batches (reader), workers decode and look up
// each batch (run.work), and the caller's goroutine takes the batches
// back in input order and yields their verdicts (run.emit). With one
// worker, all three run in the caller's goroutine, a batch at a time.

// A batch is a run of keys from one reader, worked on by one worker and
// handed back in order; once handed back it is reused for later keys.
type batch struct {
	slots []slot
	// room is scratch memory for decoding, formsRoom bytes a slot.
	room []byte
	// failed, set by the work, is the failure that ends the run: the
	// batch's slots are not to be handed on.
	failed error
	// aborted, set by the work, says the context ended before every slot
	// was worked on: none of them may be handed on.
	aborted bool

	done  chan struct{}
	arena []byte // the slots' Raw, from the scanner (SetRawAlloc)
}

const (
	// batchSize is the most slots a batch holds.
	batchSize = 256
	// arenaSize is the size a batch's arena starts at: 256 PEM
	// certificates' worth fill a few of them, and it keeps what it grew
	// to.
	arenaSize = 64 << 10
)

func newBatch() *batch {
	return &batch{slots: make([]slot, 0, batchSize), done: make(chan struct{}), room: make([]byte, formsRoom*batchSize)}
}

// reset empties a handed-back batch for reuse, keeping its memory.
func (b *batch) reset() {
	clear(b.slots)
	b.slots, b.arena, b.failed, b.aborted = b.slots[:0], b.arena[:0], nil, false
	b.done = make(chan struct{})
}

// alloc returns n bytes of the batch's arena, for a key's Raw: memory
// reused once the batch is handed back, so that reading a key allocates
// nothing.
func (b *batch) alloc(n int) []byte {
	if cap(b.arena)-len(b.arena) < n {
		b.arena = make([]byte, 0, max(arenaSize, 2*cap(b.arena), n))
	}
	end := len(b.arena) + n
	r := b.arena[len(b.arena):end:end]
	b.arena = b.arena[:end]
	return r
}

// inlineBatches keeps the batches of finished inline runs: a batch is
// hundreds of KB, and making one for every short run (a request's, a
// certificate's, a login's) costs far more than its keys' lookups.
var inlineBatches sync.Pool

// inline runs everything in the caller's goroutine: each batch is worked
// on and handed back before more is read.
func (r *run) inline(inputs iter.Seq[Input], yield func(Verdict, int) bool) {
	b, _ := inlineBatches.Get().(*batch)
	if b == nil {
		b = newBatch()
	}
	rd := &reader{r: r, b: b, get: func() *batch { return b }}
	rd.send = func(b *batch) bool {
		r.work(b)
		ok := r.emit(b, yield)
		b.reset()
		return ok && r.ctx.Err() == nil
	}
	rd.read(inputs)
	// Not after a panic (the caller's, in yield): b may be half made.
	// Nor with the arena a huge key grew.
	if cap(b.arena) <= 4*arenaSize {
		b.reset()
		inlineBatches.Put(b)
	}
}

// parallel reads in one goroutine, works on batches in workers and hands
// them back in order in the caller's goroutine.
func (r *run) parallel(workers int, inputs iter.Seq[Input], yield func(Verdict, int) bool) {
	order := make(chan *batch, 4*workers)
	todo := make(chan *batch, 4*workers)
	// Handed-back batches go back to the reader; it makes new ones only
	// while none is free.
	free := make(chan *batch, 4*workers+2)
	halted := make(chan struct{})
	var halt sync.Once
	go func() {
		defer close(order)
		defer close(todo)
		rd := &reader{r: r}
		rd.get = func() *batch {
			select {
			case b := <-free:
				return b
			default:
				return newBatch()
			}
		}
		rd.send = func(b *batch) bool {
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
					r.work(b)
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
	done := r.ctx.Done()
	for {
		var b *batch
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
		if !r.emit(b, yield) {
			return
		}
		b.reset()
		select {
		case free <- b:
		default:
		}
		if r.opts.Idle != nil && len(order) == 0 {
			r.opts.Idle()
		}
	}
}

// reader frames the keys of the inputs into batches and sends them.
type reader struct {
	r       *run
	b       *batch
	get     func() *batch
	send    func(*batch) bool
	stopped bool
	// Batches sent so far, and when the scanner last took memory: a DER
	// object's memory is taken before it is read, and a read may send
	// the batch (flush, before a read that may wait).
	sent, allocAt int
}

func (rd *reader) read(inputs iter.Seq[Input]) {
	for in := range inputs {
		rd.input(in)
		if rd.stopped {
			return
		}
	}
	rd.flush()
}

// flush sends the batch being filled, if it holds anything.
func (rd *reader) flush() {
	if !rd.stopped && len(rd.b.slots) > 0 {
		rd.stopped = !rd.send(rd.b)
		rd.b = rd.get()
		rd.sent++
	}
}

func (rd *reader) add(s slot) {
	rd.b.slots = append(rd.b.slots, s)
	if len(rd.b.slots) == batchSize {
		rd.flush()
	}
}

func (rd *reader) input(in Input) {
	ctx := rd.r.ctx
	if ctx.Err() != nil {
		rd.stopped = true
		return
	}
	rc, err := in.Open()
	if err != nil {
		rd.add(newSlot(in.Name, keys.Key{}, err))
		return
	}
	defer rc.Close()
	sc := scanners.Get().(*keys.Scanner)
	sc.Reset(&idleReader{r: rc, idle: rd.flush})
	sc.SetPassphrases(rd.r.opts.Passphrases...)
	sc.SetKDFWork(rd.r.opts.KDFWork)
	sc.SetRawAlloc(func(n int) []byte {
		rd.allocAt = rd.sent
		return rd.b.alloc(n)
	})
	done := ctx.Done()
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
		rd.add(newSlot(in.Name, k, nil))
	}
	if err := sc.Err(); err != nil && !rd.stopped {
		rd.add(newSlot(in.Name, keys.Key{}, perr.Errorf("reading %s: %w", in.Name, err)))
	}
	sc.Reset(nil)
	sc.SetRawAlloc(nil)
	sc.SetPassphrases() // not kept alive in the pool
	sc.SetKDFWork(nil)
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
