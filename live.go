package pkbf

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
)

// A Live filter follows a filter path for the life of a program: its
// queries use the newest valid file at that path, where operators install
// new files by renaming them over it.
//
// A Live answers from a copy of the file in memory of its own, read under
// the file's shared flock(2) and validated as [Open] validates a file: no
// write to the file (cp or dd over it) changes an answer. It polls the
// path (every [LiveOptions.Interval], and at [Live.Reload]), and when the
// path names another file or the file changed, switches to a new copy
// once it is read and valid; a file that is not leaves the old copy
// answering ([LiveOptions.OnError], [Live.Stats]). A copy takes the file's
// size, outside the Go heap; twice that during a switch. Queries are safe
// for concurrent use, lock-free and allocation-free.
type Live struct {
	path string
	opts LiveOptions

	cur       atomic.Pointer[liveFilter]
	mu        sync.Mutex // serializes reloads
	stop      chan struct{}
	done      chan struct{}
	closed    atomic.Bool
	reloads   atomic.Int64
	errs      atomic.Int64
	lastErr   atomic.Pointer[error]
	closing   atomic.Int64  // retired filters whose close is under way
	slowClose func()        // tests: runs before each close, as a slow kernel
	failed    mapfile.Stamp // the last file (and its state) that failed to load
	statErr   string        // the error of the last stat that failed, reported once
}

// LiveOptions configure a [Live] filter. The zero value polls every second.
type LiveOptions struct {
	// Interval is how often the path is checked for a new file; 0 means
	// one second, a negative value never (call Reload).
	Interval time.Duration
	// OnReload, if not nil, is called after a switch to a new file.
	OnReload func(Header)
	// OnError, if not nil, is called when a new file cannot be loaded;
	// the old one stays in use.
	OnError func(error)
	// OnChange, if not nil, is called after a switch to new content of the
	// same file (keys added in place, or another filter copied over it).
	OnChange func(old, new Header)
}

// LiveStats describes a Live filter's life so far.
type LiveStats struct {
	Path      string    // the path followed
	Header    Header    // the header of the copy in use
	LoadedAt  time.Time // when the copy in use was read
	Reloads   int64     // switches to a new file (not to new content of the same file)
	Errors    int64     // new files or contents that could not be loaded
	LastError error     // the last of those since the copy in use was read, or nil
	// PendingCloses counts retired files still being closed: the kernel
	// can take seconds to release a large file that was renamed over.
	PendingCloses int64
}

// liveShards is how many counters share a filter's references, each on a
// cache line of its own: one counter shared by every core costs more than
// the query itself (BenchmarkLive).
const liveShards = 16

// liveFilter is one file's filter with the count of queries using it.
type liveFilter struct {
	f        *Filter
	id       mapfile.Stamp
	loadedAt time.Time
	refs     [liveShards]struct {
		n atomic.Int64
		_ [56]byte // a cache line each
	}
	retired atomic.Bool
	closed  atomic.Bool
	live    *Live // that follows it
}

// inUse returns the number of references, summed over the shards: only
// exact once the filter is retired (no new reference can last then).
func (lf *liveFilter) inUse() int64 {
	var n int64
	for i := range lf.refs {
		n += lf.refs[i].n.Load()
	}
	return n
}

// release drops a reference taken on shard, closing the filter when it was
// the last on a retired one.
func (lf *liveFilter) release(shard uint32) {
	lf.refs[shard].n.Add(-1)
	if lf.retired.Load() && lf.inUse() == 0 {
		lf.close()
	}
}

// close releases the filter's mapping and file on a goroutine of its own:
// the last close of a file that was renamed over can keep the kernel busy
// for many seconds (discarding a GiB's blocks, on a file system mounted
// with discard), and the caller may be a query, a reload or the goroutine
// that handles a program's signals.
func (lf *liveFilter) close() {
	if lf.closed.CompareAndSwap(false, true) {
		lf.live.closing.Add(1)
		go func() {
			defer lf.live.closing.Add(-1)
			if slow := lf.live.slowClose; slow != nil {
				slow()
			}
			lf.f.Close()
		}()
	}
}

// OpenLive reads the filter at path into a copy, validated as [Open]
// validates a file, and follows it. It returns Open's error if the first
// file cannot be loaded, or if it keeps changing while it is read. Call
// [Live.Close] to stop following and release the filter.
func OpenLive(path string, opts LiveOptions) (*Live, error) {
	l := &Live{path: path, opts: opts, stop: make(chan struct{}), done: make(chan struct{})}
	lf, err := l.load()
	if err != nil {
		return nil, err
	}
	l.cur.Store(lf)
	interval := opts.Interval
	if interval == 0 {
		interval = time.Second
	}
	if interval < 0 {
		close(l.done)
		return l, nil
	}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
				l.Reload()
			}
		}
	}()
	return l, nil
}

// load reads the file at the path into a copy. The path is looked at
// first: a change after that makes the next poll read it again.
func (l *Live) load() (*liveFilter, error) {
	id, err := mapfile.StatPath(l.path)
	if err != nil {
		return nil, osError(l.path, err)
	}
	f := new(Filter)
	if err := open(l.path, forLive, &f.core); err != nil {
		return nil, err
	}
	return &liveFilter{f: f, id: id, loadedAt: time.Now(), live: l}, nil
}

// Reload checks the path now and switches to a new file there, or to new
// content of the file in use, if there is one and it is valid. It returns
// nil when there was nothing to do or the switch was made, and the error
// otherwise (the copy in use stays).
func (l *Live) Reload() error {
	if l.closed.Load() {
		return perr.New("Reload on a closed Live filter")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.cur.Load()
	id, err := mapfile.StatPath(l.path)
	if err != nil {
		if err.Error() == l.statErr {
			return err // the path is still missing: reported already
		}
		l.statErr = err.Error()
		return l.fail(id, err)
	}
	l.statErr = ""
	if id.Unchanged(old.id) {
		// A writer through a mapping (keys added in place) may leave
		// the times as they were: the header, under the lock, says.
		if h, err := old.f.fileHeader(); err == nil && h == old.f.Header() {
			return nil
		}
	}
	if id.Unchanged(l.failed) {
		return nil // this file failed already; try again when it changes
	}
	lf, err := l.load()
	if errors.Is(err, mapfile.ErrChanging) {
		return l.fail(mapfile.Stamp{}, err) // being written: read again at the next poll
	}
	if err != nil {
		return l.fail(id, err)
	}
	l.cur.Store(lf)
	old.retired.Store(true)
	if old.inUse() == 0 {
		old.close()
	}
	l.failed = mapfile.Stamp{}
	l.lastErr.Store(nil)
	if lf.id.SameFile(old.id) {
		if l.opts.OnChange != nil {
			l.opts.OnChange(old.f.Header(), lf.f.Header()) // a retired filter keeps its header
		}
		return nil
	}
	l.reloads.Add(1)
	if l.opts.OnReload != nil {
		l.opts.OnReload(lf.f.Header())
	}
	return nil
}

func (l *Live) fail(id mapfile.Stamp, err error) error {
	err = perr.Errorf("reloading %s (the filter loaded before stays in use): %w", l.path, err)
	l.failed = id
	l.errs.Add(1)
	l.lastErr.Store(&err)
	if l.opts.OnError != nil {
		l.opts.OnError(err)
	}
	return err
}

// acquire takes a reference on the current filter. The check after the
// increment makes sure the filter was not retired in between: a Reload
// swaps the pointer before it looks at the references, so a query that
// still sees its filter current has a reference Reload will wait for.
// The shard is chosen at random (the runtime's per-thread generator), so
// that queries on different cores rarely share a cache line.
func (l *Live) acquire() (*liveFilter, uint32) {
	shard := rand.Uint32() % liveShards
	for {
		lf := l.cur.Load()
		lf.refs[shard].n.Add(1)
		if l.cur.Load() == lf {
			return lf, shard
		}
		lf.release(shard)
	}
}

// Probably is [Filter.Probably] on the current file.
func (l *Live) Probably(spki []byte) bool {
	lf, shard := l.acquire()
	defer lf.release(shard)
	return lf.f.Probably(spki)
}

// ProbablyBatch is [Filter.ProbablyBatch] on the current file: every key of
// the batch is answered by the same file.
func (l *Live) ProbablyBatch(spkis [][]byte, out []bool) {
	lf, shard := l.acquire()
	defer lf.release(shard)
	lf.f.ProbablyBatch(spkis, out)
}

// Do calls fn with the current filter, which stays valid (and current for
// fn, even if a reload happens meanwhile) until fn returns. fn must not
// keep the filter.
func (l *Live) Do(fn func(*Filter)) {
	lf, shard := l.acquire()
	defer lf.release(shard)
	fn(lf.f)
}

// Stats returns the current file's header and the reloads so far.
func (l *Live) Stats() LiveStats {
	lf, shard := l.acquire()
	defer lf.release(shard)
	s := LiveStats{Path: l.path, Header: lf.f.Header(), LoadedAt: lf.loadedAt, Reloads: l.reloads.Load(), Errors: l.errs.Load(), PendingCloses: l.closing.Load()}
	if e := l.lastErr.Load(); e != nil {
		s.LastError = *e
	}
	return s
}

// Close stops following the path and releases the filter once the queries
// in flight finish; files are released in the background, without
// blocking Close. Queries after Close panic.
func (l *Live) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return nil
	}
	select {
	case <-l.done:
	default:
		close(l.stop)
		<-l.done
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lf := l.cur.Load()
	lf.retired.Store(true)
	if lf.inUse() == 0 {
		lf.close()
	}
	return nil
}
