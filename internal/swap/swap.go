// Package swap holds the current one of a series of values that replace
// one another while readers use them, as a Live filter's copies do: a
// reader takes a reference without a lock, and a value replaced is closed
// once its last reader is done, in the background.
package swap

import (
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// shards is how many counters share a value's references, each on a
// cache line of its own: one counter shared by every core costs more than
// a filter's query (BenchmarkLive).
const shards = 16

// A Value holds the current value of a series. Its methods are safe for
// concurrent use.
type Value[T io.Closer] struct {
	cur     atomic.Pointer[entry[T]]
	mu      sync.Mutex // orders Swap against Close
	closed  bool
	closing atomic.Int64
	// SlowClose, if not nil, runs before each close: tests set it, as a
	// slow kernel.
	SlowClose func()
}

// entry is one value with the count of references to it.
type entry[T io.Closer] struct {
	v    T
	refs [shards]struct {
		n atomic.Int64
		_ [56]byte // a cache line each
	}
	retired atomic.Bool
	closed  atomic.Bool
	owner   *Value[T]
}

// A Ref is a reference to a value: the value stays open until Release.
type Ref[T io.Closer] struct {
	e     *entry[T]
	shard uint32
}

// New returns a Value whose current value is v.
func New[T io.Closer](v T) *Value[T] {
	s := new(Value[T])
	s.cur.Store(&entry[T]{v: v, owner: s})
	return s
}

// Acquire takes a reference on the current value. The check after the
// increment makes sure the value was not retired in between: Swap
// replaces the pointer before it looks at the references, so a reader that
// still sees its value current has a reference Swap will wait for. The
// shard is chosen at random (the runtime's per-thread generator), so that
// readers on different cores rarely share a cache line.
func (s *Value[T]) Acquire() Ref[T] {
	shard := rand.Uint32() % shards
	for {
		e := s.cur.Load()
		e.refs[shard].n.Add(1)
		if s.cur.Load() == e {
			return Ref[T]{e, shard}
		}
		e.release(shard)
	}
}

// Value returns the value r refers to.
func (r Ref[T]) Value() T { return r.e.v }

// Release drops the reference, closing the value when it was the last on
// a retired one.
func (r Ref[T]) Release() { r.e.release(r.shard) }

// Swap makes v the current value, retires the one before, and reports
// true; after Close, it closes v instead and reports false.
func (s *Value[T]) Swap(v T) bool {
	e := &entry[T]{v: v, owner: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		e.retire()
		return false
	}
	s.cur.Swap(e).retire()
	return true
}

// Close retires the current value, closed once its readers are done.
func (s *Value[T]) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.cur.Load().retire()
	}
}

// Closing returns the number of retired values whose close is under way.
func (s *Value[T]) Closing() int64 { return s.closing.Load() }

// retire marks e replaced, and closes it if no reader holds it.
func (e *entry[T]) retire() {
	e.retired.Store(true)
	if e.inUse() == 0 {
		e.close()
	}
}

// inUse returns the number of references, summed over the shards: only
// exact once the value is retired (no new reference can last then).
func (e *entry[T]) inUse() int64 {
	var n int64
	for i := range e.refs {
		n += e.refs[i].n.Load()
	}
	return n
}

func (e *entry[T]) release(shard uint32) {
	e.refs[shard].n.Add(-1)
	if e.retired.Load() && e.inUse() == 0 {
		e.close()
	}
}

// close closes the value on a goroutine of its own: the last close of a
// file that was renamed over can keep the kernel busy for many seconds
// (discarding a GiB's blocks, on a file system mounted with discard), and
// the caller may be a reader, a Swap or the goroutine that handles a
// program's signals.
func (e *entry[T]) close() {
	if e.closed.CompareAndSwap(false, true) {
		s := e.owner
		s.closing.Add(1)
		go func() {
			defer s.closing.Add(-1)
			if slow := s.SlowClose; slow != nil {
				slow()
			}
			e.v.Close()
		}()
	}
}
