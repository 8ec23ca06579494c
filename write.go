package pkbf

import (
	"io"
	"io/fs"
	"math"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/pkbf/pkbf/internal/bitwords"
	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/internal/probe"
)

// Limits on the parameters of filters this package creates. Reading accepts
// any hash length up to 63, as the format allows; creating stops at 2^40
// bits (128 GiB), far past any real filter and within what a machine can
// hold or a file system store sparsely.
const (
	maxCreateHashLength = 40
	maxEntryCount       = math.MaxUint32
)

// warmBeforeLock is the data size (an L2 cache) past which Add loads a
// key's words before it takes the lock; see Add.
const warmBeforeLock = 1 << 20

func checkParameters(hashCount, hashLength int) error {
	if hashCount < minHashCount || hashCount > maxHashCount {
		return perr.Errorf("hash count %d out of range %d to %d", hashCount, minHashCount, maxHashCount)
	}
	if hashLength < minHashLength || hashLength > maxCreateHashLength {
		return perr.Errorf("hash length %d out of range %d to %d", hashLength, minHashLength, maxCreateHashLength)
	}
	if uint64(1)<<hashLength/8 > dataSizeLimit {
		return perr.Errorf("hash length %d needs more memory than this platform can address", hashLength)
	}
	return nil
}

// Writable is a filter keys are added to: in memory, from [New], or in
// its file, in place, from [Edit]. It answers queries as a [Filter] does,
// also while keys are being added. Its methods are safe for concurrent
// use, but Close, which must not run concurrently with the others.
type Writable struct {
	core
	words []uint32 // the data as 32-bit words, which Add sets atomically

	mu      sync.Mutex // serializes changes, and header reads with them
	edited  bool       // the revision was raised in this editing session
	inPlace *inPlace   // the file being edited in place, or nil
}

// setWords gives w its data's 32-bit words: n bytes from p, rounded up to
// whole words.
func (w *Writable) setWords(p unsafe.Pointer, n int) {
	w.words = unsafe.Slice((*uint32)(p), (n+3)/4)
	w.shared = true
}

// loadAll loads the word of every position of a key, with no branch
// between the loads, and reports whether all its bits are set.
func (w *Writable) loadAll(x, y uint64) bool {
	words, mask := w.words, w.mask
	var missing uint32
	for i := range w.k {
		wd, m := bitwords.Bit(x & mask)
		missing |= m &^ atomic.LoadUint32(&words[wd])
		x, y = probe.Step(x, y, i)
	}
	return missing == 0
}

// New returns an empty in-memory filter with the given hash count
// (1 to 255) and hash length (3 to 40): revision 0, update time the Unix
// epoch, no entries. Add keys with [Writable.Add] (keycheck.AddKey adds a
// key under every encoding) and save it with [Writable.WriteFile] or
// [Writable.WriteTo].
func New(hashCount, hashLength int) (*Writable, error) {
	if err := checkParameters(hashCount, hashLength); err != nil {
		return nil, err
	}
	h := Header{Updated: time.Unix(0, 0).UTC(), HashCount: uint8(hashCount), HashLength: uint8(hashLength)}
	n := int(h.dataSize())
	data := mapfile.AllocHuge((n + 3) &^ 3) // whole words; huge pages when large
	w := new(Writable)
	w.init(h, data[:n:n])
	w.setWords(unsafe.Pointer(unsafe.SliceData(data)), n)
	return w, nil
}

// Add adds spki, a DER SubjectPublicKeyInfo, to the filter, as the
// reference implementation does: a key already probably present changes
// nothing and Add returns false; otherwise Add sets its bits, raises the
// entry count (up to 2^32-1), sets the update time to now and, on the
// first add since New or Edit, raises the revision, and returns true. It
// adds exactly these bytes (keycheck.AddKey adds every encoding of a key),
// and is safe to call from many goroutines at once, beside queries.
//
// On a filter edited in place, each Add takes an exclusive flock(2), reads
// the header in the file (other processes may have added keys), sets the
// bits, then writes the header. An error from the file, or a file cut
// short under it (wrapping [ErrFileChanged]), stops all editing: Add and
// Close return it from then on.
func (w *Writable) Add(spki []byte) (bool, error) {
	if w.words == nil {
		panic("pkbf: Add on a closed filter")
	}
	if w.mapped != nil {
		return w.addMapped(spki)
	}
	return w.add(spki), nil
}

// addMapped is add on a file's mapping: a load or store past the end of a
// file cut short (between two of lock's path checks) faults, and the fault
// becomes the error that stops editing instead of the end of the program.
// (In add itself these defers would not be open-coded, for its many
// returns, and would cost more than the rest of an add's work.)
func (w *Writable) addMapped(spki []byte) (added bool, err error) {
	var fault error
	defer w.stopOnFault(&fault, &added, &err)
	defer w.mapped.RecoverFault(debug.SetPanicOnFault(true), &fault)
	added = w.add(spki)
	return added, w.err()
}

// stopOnFault, deferred by addMapped, records a fault caught in the file's
// mapping as the error that stops editing, and returns it from Add.
func (w *Writable) stopOnFault(fault *error, added *bool, err *error) {
	if *fault == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	*added = false
	if w.inPlace != nil {
		w.inPlace.fail(*fault)
		*err = w.inPlace.err
	}
}

func (w *Writable) add(spki []byte) (added bool) {
	h1, h2 := probe.Hashes(spki)
	// Past the L2 cache, first load all the key's words, before the lock.
	// The loads overlap, where the locked ORs below cannot, and bring the
	// lines into the cache for them; and a key whose bits are all set
	// already changes nothing, so it needs no lock at all.
	if len(w.data) > warmBeforeLock && w.loadAll(h1, h2) {
		return false
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.words == nil {
		panic("pkbf: Add on a closed filter")
	}
	if w.inPlace != nil {
		if !w.inPlace.lock(w, true) {
			return false
		}
		defer w.inPlace.unlock()
	}
	// Set the bits that are clear. Adds are serialized by w.mu (and by the
	// file lock across processes), so no bit changes between the load and
	// the OR; if none was clear, the key was already probably present.
	x, y := h1, h2
	for i := range w.k {
		wd, m := bitwords.Bit(x & w.mask)
		if atomic.LoadUint32(&w.words[wd])&m == 0 {
			atomic.OrUint32(&w.words[wd], m)
			added = true
		}
		x, y = probe.Step(x, y, i)
	}
	if !added {
		return false
	}
	w.changed(now, 1)
	return true
}

// changed records in the header a change of entries keys, made at now: the
// count, the time and, once an editing session, the revision; a filter
// edited in place gets the header written. w.mu is held.
func (w *Writable) changed(now time.Time, entries uint64) {
	h := &w.hdr
	h.EntryCount = uint32(min(uint64(h.EntryCount)+entries, maxEntryCount))
	h.Updated = time.Unix(now.Unix(), 0).UTC()
	if !w.edited {
		h.Revision = uint32(min(uint64(h.Revision)+1, math.MaxUint32))
		w.edited = true
	}
	if w.inPlace != nil {
		w.inPlace.writeHeader(w.hdr)
	}
}

// err returns the first error met editing a filter file in place, which
// stopped all editing, or nil.
func (w *Writable) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inPlace == nil {
		return nil
	}
	return w.inPlace.err
}

// Header returns the filter's header. For a filter edited in place it is
// read from the file, so it includes other processes' changes.
func (w *Writable) Header() Header {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inPlace != nil && w.inPlace.lock(w, false) {
		w.inPlace.unlock()
	}
	return w.hdr
}

// Close releases the file and memory mapping of a filter from [Edit],
// after syncing it to its file, and returns any error met editing it. For
// a filter in memory Close does nothing. Close is idempotent; after it,
// queries and adds panic.
func (w *Writable) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	if w.inPlace != nil {
		err = w.inPlace.sync(w)
		w.inPlace = nil
	}
	if rerr := w.release(); err == nil {
		err = rerr
	}
	w.words = nil
	return err
}

// WriteTo writes the filter, header and data, to w: a consistent snapshot,
// as adds wait until it is done. It implements io.WriterTo.
func (w *Writable) WriteTo(dst io.Writer) (n int64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inPlace != nil {
		if !w.inPlace.lock(w, false) {
			return 0, w.inPlace.err
		}
		defer w.inPlace.unlock()
	}
	return w.writeTo(dst)
}

// WriteFile writes the filter to path atomically, as [Filter.WriteFile]
// does, a consistent snapshot as [Writable.WriteTo] writes it.
func (w *Writable) WriteFile(path string) error {
	return writeFileAtomic(path, func(dst io.Writer) error { _, err := w.WriteTo(dst); return err })
}

// WriteTo writes the filter, header and data, to w. It implements
// io.WriterTo.
func (f *Filter) WriteTo(w io.Writer) (n int64, err error) { return f.writeTo(w) }

// WriteFile writes the filter to path atomically: to a temporary file in
// the same directory, synced to disk, then renamed over path. Readers never
// see a half-written filter, a failure (a full disk, say) leaves any old
// file as it was, and readers that have the old file open keep their view
// of it. A new file gets mode 0644; an existing one keeps its mode.
func (f *Filter) WriteFile(path string) error {
	return writeFileAtomic(path, func(w io.Writer) error { _, err := f.WriteTo(w); return err })
}

// writeTo writes the header and the data to w.
func (c *core) writeTo(w io.Writer) (n int64, err error) {
	if c.data == nil {
		return 0, perr.New("WriteTo on a closed filter")
	}
	if c.mapped != nil {
		defer c.mapped.RecoverFault(debug.SetPanicOnFault(true), &err)
		defer c.mapped.ReadingAll()()
	}
	hdr, err := c.hdr.AppendBinary(nil)
	if err != nil {
		return 0, err
	}
	m, err := w.Write(hdr)
	n = int64(m)
	if err != nil {
		return n, err
	}
	m, err = w.Write(c.data)
	return n + int64(m), err
}

// writeFileAtomic is mapfile.WriteAtomic, with createHook after the sync
// and pkbf's errors.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	if err := mapfile.WriteAtomic(path, write, func() { createHook("synced") }); err != nil {
		return perr.Errorf("%w", err)
	}
	return nil
}

// makeFileAtomic is mapfile.MakeAtomic, with createHook after the sync.
func makeFileAtomic(path string, noReplace bool, fill func(tmp *os.File) error) error {
	return mapfile.MakeAtomic(path, noReplace, fill, func() { createHook("synced") })
}

// Create makes a new, empty filter file at path, as the reference does:
// the header (revision 0, time 0, no entries, the hash count and length in
// the ranges of [New]) and zeroed data; an existing file is refused
// (errors.Is(err, fs.ErrExist)). It is atomic: the file is made under a
// temporary name beside path, its disk space reserved (on Linux), synced,
// and only then named path, so a crash leaves no filter or a complete one.
func Create(path string, hashCount, hashLength int) error {
	if err := checkParameters(hashCount, hashLength); err != nil {
		return err
	}
	if _, err := os.Lstat(path); err == nil {
		return &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
	}
	return makeFileAtomic(path, true, func(tmp *os.File) error {
		createHook("created")
		h := Header{HashCount: uint8(hashCount), HashLength: uint8(hashLength)}
		size := int64(h.FileSize())
		if err := mapfile.Reserve(tmp, size); err != nil {
			return perr.Errorf("create %s: reserving %d bytes for the filter: %w", path, size, err)
		}
		if err := tmp.Truncate(size); err != nil {
			return err
		}
		createHook("reserved")
		hdr, _ := h.AppendBinary(nil)
		if _, err := tmp.WriteAt(hdr, 0); err != nil {
			return err
		}
		createHook("written")
		return nil
	})
}

// createHook is called at each stage of Create ("synced" comes from
// makeFileAtomic, for WriteFile too), for tests that crash it.
var createHook = func(stage string) {}

// Edit opens the filter file at path for editing in place, for filters too
// big to rewrite. Changes made by [Writable.Add] go straight to the file
// (which is mapped into memory) under an exclusive flock(2) each, so the
// reference implementation and other processes can work on the same file;
// they are durable after [Writable.Close]. Editing in
// place needs a Unix system. Errors are those of [Open], and of reserving
// disk space for a sparse file.
func Edit(path string) (*Writable, error) { return openInPlace(path) }

// Parameters returns the hash count and hash length the reference
// implementation chooses for a filter of the given number of entries at the
// false-positive rate fpRate: hash length L = ceil(log2(-n·ln p / ln²2)),
// at least 3, and the smallest hash count k with
// (1 - (1 - 1/2^L)^(k·n))^k < p. It returns an error for fpRate outside
// (0, 1), no entries, more entries than a header can count, or a result
// outside what [New] accepts.
func Parameters(entries uint64, fpRate float64) (hashCount, hashLength int, err error) {
	ln2 := math.Log(2) // a float64, as the reference's Math.log(2)
	switch {
	case !(fpRate > 0 && fpRate < 1):
		return 0, 0, perr.Errorf("false-positive rate %v is not between 0 and 1", fpRate)
	case entries == 0:
		return 0, 0, perr.New("a filter for 0 entries has no parameters")
	case entries > maxEntryCount:
		return 0, 0, perr.Errorf("%d entries is more than a filter header can count (%d)", entries, uint64(maxEntryCount))
	}
	// As the reference computes it, at run time in float64: divided by
	// ln 2 twice. The compile-time constant ln²2 differs in the last bit,
	// which puts the bit count on the other side of a power of two for
	// some inputs (2284036 entries at 0.89557852977517094).
	n := float64(entries)
	bits := -n * math.Log(fpRate) / ln2 / ln2
	hashLength = max(minHashLength, int(math.Ceil(math.Log2(bits))))
	if hashLength > maxCreateHashLength {
		return 0, 0, perr.Errorf("%d entries at rate %v need hash length %d, more than %d", entries, fpRate, hashLength, maxCreateHashLength)
	}
	m := float64(uint64(1) << hashLength)
	for k := minHashCount; k <= maxHashCount; k++ {
		if falsePositiveRate(uint64(m), uint64(k), entries) < fpRate {
			return k, hashLength, nil
		}
	}
	return 0, 0, perr.Errorf("no hash count up to %d reaches rate %v for %d entries in 2^%d bits", maxHashCount, fpRate, entries, hashLength)
}
