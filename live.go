package pkbf

import (
	"cmp"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pkbf/pkbf/internal/bitwords"
	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/internal/swap"
)

// A Live filter follows a filter path for the life of a program: its
// queries use the newest valid file at that path, where operators install
// new files by renaming them over it.
//
// A Live answers from a copy of the file in memory of its own, read under
// the file's shared flock(2) and validated as [Open] validates a file: no
// write to the file changes an answer. It polls the path (every
// [LiveOptions.Interval], and at [Live.Reload]) and switches to a new
// copy, once read and valid, when the path names another regular file or
// the file gained keys in place: the same hash count and length, counters
// not gone back, every bit of the copy in use still set. Any other change
// in place (zeros or another filter written over it) is refused, and
// [Filter.FileChanged] of the copy in use reports it until the file is
// whole again or another is renamed over the path. A file that cannot be
// loaded leaves the copy in use answering too ([LiveOptions.OnError]). A
// new copy is compared with the file at each poll for 2 s and until they
// agree, and the file with the copy every [LiveOptions.VerifyInterval]: a
// writer that holds no lock and changes no time of the file (through a
// mapping, or one long write(2)) is followed within that, and a copy
// never lacks a key the one before held.
//
// A copy takes the file's size, outside the Go heap; twice that during a
// switch. Queries are safe for concurrent use, lock-free and
// allocation-free.
type Live struct {
	path     string
	opts     LiveOptions
	cur      *swap.Value[*liveCopy]
	turn     chan struct{} // holds a token while a reload runs: one at a time
	stop     chan struct{}
	closed   atomic.Bool
	reloads  atomic.Int64
	errs     atomic.Int64
	lastErr  atomic.Pointer[error]
	slowLoad func()        // tests: runs before each load reads, as a file system that does not answer
	watch    mapfile.Watch // the reload's, with the turn
}

// LiveOptions configure a [Live] filter. The zero value polls every
// second and compares the file with the copy every minute.
type LiveOptions struct {
	// Interval is how often the path is checked for a new file; 0 means
	// one second, a negative value never (call Reload).
	Interval time.Duration
	// VerifyInterval is how often, at the polls, the file in use is read
	// and compared with the copy, to follow writes that changed no time of
	// the file (each costs a read of the file); 0 means a minute, a
	// negative value never.
	VerifyInterval time.Duration
	// OnReload, if not nil, is called after a switch to a new file.
	OnReload func(Header)
	// OnError, if not nil, is called when a new file or content cannot be
	// loaded, or a change in place is refused; the old copy stays in use.
	OnError func(error)
	// OnChange, if not nil, is called after a switch to new content of the
	// same file: keys added in place.
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

// liveCopy is one file's filter, as a Live read it.
type liveCopy struct {
	f        *Filter
	id       mapfile.Stamp
	loadedAt time.Time
}

func (c *liveCopy) Close() error { return c.f.Close() }

// OpenLive reads the filter at path, a regular file, into a copy,
// validated as [Open] validates a file, and follows it. It returns Open's
// error if the first file cannot be loaded, or if it keeps changing while
// it is read. Call [Live.Close] to stop following and release the filter.
func OpenLive(path string, opts LiveOptions) (*Live, error) {
	l := &Live{path: path, opts: opts, turn: make(chan struct{}, 1), stop: make(chan struct{})}
	// Confirm: a writer stalled mid-write for longer than a poll is followed.
	l.watch.Verify, l.watch.Confirm = cmp.Or(opts.VerifyInterval, time.Minute), 2*time.Second
	lf, err := l.load()
	if err != nil {
		return nil, err
	}
	l.cur = swap.New(lf)
	l.watch.Read()
	interval := opts.Interval
	if interval == 0 {
		interval = time.Second
	}
	if interval < 0 {
		return l, nil
	}
	go func() {
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
func (l *Live) load() (*liveCopy, error) {
	id, err := mapfile.StatPath(l.path)
	if err != nil {
		return nil, osError(l.path, err)
	}
	if l.slowLoad != nil {
		l.slowLoad()
	}
	f := new(Filter)
	if err := open(l.path, forLive, &f.core); err != nil {
		return nil, err
	}
	return &liveCopy{f: f, id: id, loadedAt: time.Now()}, nil
}

// errLiveClosed is Reload's error once Close has begun.
var errLiveClosed = perr.New("Reload on a closed Live filter")

// Reload checks the path now and switches to a new file there, or to keys
// added to the file in use, if there is one and it is valid. It returns
// nil when there was nothing to do or the switch was made, and the error
// otherwise (the copy in use stays). It waits for a reload under way, or
// for Close.
func (l *Live) Reload() error {
	if l.closed.Load() {
		return errLiveClosed
	}
	select {
	case l.turn <- struct{}{}:
	case <-l.stop:
		return errLiveClosed
	}
	defer func() { <-l.turn }()
	return l.reload()
}

func (l *Live) reload() error {
	ref := l.cur.Acquire() // Close may retire it meanwhile
	defer ref.Release()
	old := ref.Value()
	id, err := mapfile.StatPath(l.path)
	if err != nil {
		return l.fail(id, err)
	}
	sameHeader := func() bool { h, err := old.f.fileHeader(); return err == nil && h == old.f.Header() }
	if !l.watch.Due(id, old.id, old.f.copied, sameHeader) {
		return nil
	}
	lf, err := l.load()
	inPlace := id.SameFile(old.id)
	if err == nil {
		inPlace = lf.id.SameFile(old.id)
	}
	if err == nil && inPlace {
		if err = grownInPlace(l.path, old.f, lf.f); err != nil {
			lf.Close()
		}
	}
	switch {
	case errors.Is(err, mapfile.ErrChanging):
		return l.fail(mapfile.Stamp{}, err) // being written: read again at the next poll
	case err != nil:
		if inPlace {
			// The file of the copy in use is damaged: FileChanged says so.
			if !errors.Is(err, ErrFileChanged) {
				err = fileChanged{path: l.path, what: "changed in place", detail: perr.Text(err)}.err()
			}
			old.f.refused.Store(&err)
		}
		return l.fail(id, err)
	}
	if !l.cur.Swap(lf) {
		return errLiveClosed
	}
	l.watch.Read()
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

// grownInPlace returns nil when new, read from old's file, is what adding
// keys to old in place makes (the same hash count and length, counters
// not gone back, every bit of old still set), else an error wrapping
// ErrFileChanged that says what differs.
func grownInPlace(path string, old, new *Filter) error {
	detail := old.Header().notGrownTo(new.Header())
	if lost := bitwords.Lost(old.data, new.data); detail == "" && lost > 0 {
		detail = fmt.Sprintf("%d of the %d bits set in the copy in use are clear in it", lost, bitwords.Count(old.data))
	}
	if detail == "" {
		return nil
	}
	return fileChanged{path: path, what: "changed in place", detail: detail, advice: "a filter changed in place may only gain keys: rename a new filter over the path instead"}.err()
}

func (l *Live) fail(id mapfile.Stamp, err error) error {
	news := l.watch.Failed(id, perr.Text(err))
	err = perr.Errorf("reloading %s (the filter loaded before stays in use): %w", l.path, err)
	if !news {
		return err // the same failure, read again: reported already
	}
	l.errs.Add(1)
	l.lastErr.Store(&err)
	if l.opts.OnError != nil {
		l.opts.OnError(err)
	}
	return err
}

// Probably is [Filter.Probably] on the current file.
func (l *Live) Probably(spki []byte) bool {
	r := l.cur.Acquire()
	defer r.Release()
	return r.Value().f.Probably(spki)
}

// ProbablyBatch is [Filter.ProbablyBatch] on the current file: every key of
// the batch is answered by the same file.
func (l *Live) ProbablyBatch(spkis [][]byte, out []bool) {
	r := l.cur.Acquire()
	defer r.Release()
	r.Value().f.ProbablyBatch(spkis, out)
}

// Do calls fn with the current filter, which stays valid (and current for
// fn, even if a reload happens meanwhile) until fn returns. fn must not
// keep the filter.
func (l *Live) Do(fn func(*Filter)) {
	r := l.cur.Acquire()
	defer r.Release()
	fn(r.Value().f)
}

// Stats returns the current file's header and the reloads so far.
func (l *Live) Stats() LiveStats {
	r := l.cur.Acquire()
	defer r.Release()
	c := r.Value()
	s := LiveStats{Path: l.path, Header: c.f.Header(), LoadedAt: c.loadedAt, Reloads: l.reloads.Load(), Errors: l.errs.Load(), PendingCloses: l.cur.Closing()}
	if e := l.lastErr.Load(); e != nil {
		s.LastError = *e
	}
	return s
}

// Close stops following the path and releases the filter once the queries
// in flight finish; files are released in the background, without
// blocking Close, and a reload under way is not waited for (its copy is
// released when it ends). Queries after Close panic.
func (l *Live) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(l.stop)
	l.cur.Close()
	return nil
}
