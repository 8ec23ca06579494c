package pkbf

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/pkbf/pkbf/internal/hugemem"
	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
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

// New returns an empty in-memory filter with the given hash count
// (1 to 255) and hash length (3 to 40): revision 0, update time the Unix
// epoch, no entries. Add keys with [Filter.Add] and save it with
// [Filter.WriteFile] or [Filter.WriteTo].
func New(hashCount, hashLength int) (*Filter, error) {
	if err := checkParameters(hashCount, hashLength); err != nil {
		return nil, err
	}
	h := Header{Updated: time.Unix(0, 0).UTC(), HashCount: uint8(hashCount), HashLength: uint8(hashLength)}
	n := int(h.DataSize())
	data := hugemem.Alloc((n + 3) &^ 3) // whole words; huge pages when large
	words := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(data))), len(data)/4)
	f := newFilter(h, data[:n:n])
	f.words = words
	return f, nil
}

// Add adds spki, a DER SubjectPublicKeyInfo, to the filter, as the
// reference implementation does: a key already probably present changes
// nothing and Add returns false; otherwise Add sets its bits, raises the
// entry count by one (it stops at 2^32-1), sets the update time to now and,
// on the first add of this editing session (since New or Edit), raises
// the revision by one. It returns true.
//
// Add and Probably are safe to call from many goroutines at once. Add
// panics on a filter that is not writable (from Open, Parse or ReadFilter).
//
// On a filter edited in place, each Add takes an exclusive flock(2) on the
// file, reads the header there (other processes may have added keys), sets
// the bits and then writes the header. A crash in between can at worst
// leave a key's bits set with the count not yet raised. An error from the
// file makes Add return false, and so does a file cut short under it (an
// error wrapping [ErrFileChanged]); Sync and Close report it, and it stops
// all editing.
func (f *Filter) Add(spki []byte) bool {
	if f.words == nil {
		panic("pkbf: Add on a read-only or closed Filter")
	}
	if f.mapped != nil {
		return f.addMapped(spki)
	}
	return f.add(spki)
}

// addMapped is add on a file's mapping: a load or store past the end of a
// file cut short (between two of lock's path checks) faults, and the fault
// becomes the error that stops editing instead of the end of the program.
// (In add itself these defers would not be open-coded, for its many
// returns, and would cost more than the rest of an add's work.)
func (f *Filter) addMapped(spki []byte) (added bool) {
	var fault error
	defer f.stopOnFault(&fault, &added)
	defer f.mapped.RecoverFault(debug.SetPanicOnFault(true), &fault)
	return f.add(spki)
}

// stopOnFault, deferred by addMapped, records a fault caught in the file's
// mapping as the error that stops editing, and makes Add report false.
func (f *Filter) stopOnFault(fault *error, added *bool) {
	if *fault == nil {
		return
	}
	*added = false
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inPlace != nil {
		f.inPlace.fail(*fault)
	}
}

func (f *Filter) add(spki []byte) (added bool) {
	h1, h2 := hashes(spki)
	// Past the L2 cache, first load all the key's words, before the lock.
	// The loads overlap, where the locked ORs below cannot, and bring the
	// lines into the cache for them; and a key whose bits are all set
	// already changes nothing, so it needs no lock at all.
	if len(f.data) > warmBeforeLock && f.loadAll(h1, h2) {
		return false
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.words == nil {
		panic("pkbf: Add on a closed Filter")
	}
	if f.inPlace != nil {
		if !f.inPlace.lock(f, true) {
			return false
		}
		defer f.inPlace.unlock()
	}
	// Set the bits that are clear. Adds are serialized by f.mu (and by the
	// file lock across processes), so no bit changes between the load and
	// the OR; if none was clear, the key was already probably present.
	x, y := h1, h2
	for i := range f.k {
		w, m := wordBit(x & f.mask)
		if atomic.LoadUint32(&f.words[w])&m == 0 {
			atomic.OrUint32(&f.words[w], m)
			added = true
		}
		x, y = step(x, y, i)
	}
	if !added {
		return false
	}
	h := &f.hdr
	if h.EntryCount < maxEntryCount {
		h.EntryCount++
	}
	h.Updated = time.Unix(now.Unix(), 0).UTC()
	if !f.edited {
		if h.Revision < math.MaxUint32 {
			h.Revision++
		}
		f.edited = true
	}
	if f.inPlace != nil {
		f.inPlace.writeHeader(f.hdr)
	}
	return true
}

// Err returns the first error met editing a filter file in place (see
// [Filter.Add]), which stopped all editing, or nil. For other filters it
// returns nil.
func (f *Filter) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inPlace == nil {
		return nil
	}
	return f.inPlace.err
}

// WriteTo writes the filter, header and data, to w: a consistent snapshot,
// as adds wait until it is done. It implements io.WriterTo.
func (f *Filter) WriteTo(w io.Writer) (n int64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.data == nil {
		return 0, perr.New("WriteTo on a closed Filter")
	}
	if f.mapped != nil {
		defer f.mapped.RecoverFault(debug.SetPanicOnFault(true), &err)
	}
	if f.inPlace != nil {
		if !f.inPlace.lock(f, false) {
			return 0, f.inPlace.err
		}
		defer f.inPlace.unlock()
	}
	hdr, err := f.hdr.AppendBinary(nil)
	if err != nil {
		return 0, err
	}
	m, err := w.Write(hdr)
	n = int64(m)
	if err != nil {
		return n, err
	}
	m, err = w.Write(f.data)
	return n + int64(m), err
}

// WriteFile writes the filter to path atomically: to a temporary file in
// the same directory, synced to disk, then renamed over path. Readers never
// see a half-written filter, a failure (a full disk, say) leaves any old
// file as it was, and readers that have the old file open keep their view
// of it. A new file gets mode 0644; an existing one keeps its mode.
func (f *Filter) WriteFile(path string) error {
	return writeFileAtomic(path, func(w io.Writer) error {
		_, err := f.WriteTo(w)
		return err
	})
}

// writeFileAtomic puts what write writes at path, replacing the file there
// (whose mode it keeps) or making one with mode 0644. A symbolic link at
// path stays, and the file it leads to is replaced; a directory, FIFO or
// device there is refused.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	target, fi, err := mapfile.ReplaceTarget(path)
	if err != nil {
		return perr.Errorf("%w", err)
	}
	mode := fs.FileMode(0o644)
	if fi != nil {
		mode = fi.Mode().Perm()
	}
	return makeFileAtomic(target, false, func(tmp *os.File) error {
		bw := bufio.NewWriterSize(tmp, 1<<20)
		if err := write(bw); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return tmp.Chmod(mode)
	})
}

// makeFileAtomic gives path its content in one step: fill writes it to a
// new file under a temporary name in the same directory (.NAME.tmp-*),
// which is then synced, closed and renamed to path, and the directory
// synced. With noReplace the rename refuses an existing path, at that
// moment (errors.Is(err, fs.ErrExist)). A failure removes the temporary
// file; one left by a writer that was killed is removed by a later call
// (see mapfile.CreateTemp).
func makeFileAtomic(path string, noReplace bool, fill func(tmp *os.File) error) (err error) {
	tmp, err := mapfile.CreateTemp(path)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := fill(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	createHook("synced")
	// Renamed while still open, and so locked, where the system allows:
	// a sweep (mapfile.SweepTemps) removes only unlocked files.
	closeFirst := runtime.GOOS == "windows" // no rename of an open file
	if closeFirst {
		if err := tmp.Close(); err != nil {
			return err
		}
	}
	rename := os.Rename
	if noReplace {
		rename = mapfile.RenameNoReplace
	}
	if err := rename(tmp.Name(), path); err != nil {
		if noReplace && errors.Is(err, fs.ErrExist) {
			return &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
		}
		return err
	}
	if !closeFirst {
		if err := tmp.Close(); err != nil {
			return err
		}
	}
	return mapfile.SyncDir(filepath.Dir(path))
}

// Create makes a new, empty filter file at path, as the reference does:
// it refuses an existing file (errors.Is(err, fs.ErrExist)) and writes the
// header (revision 0, time 0, no entries, the given hash count and length,
// in the ranges of [New]) and zeroed data.
//
// It is atomic: the filter is made under a temporary name in the same
// directory, its disk space reserved (on Linux; a file system too small
// fails here, not on the first add), synced, and only then given its
// name, which an existing file refuses at that moment too. A crash leaves
// either no filter at path or a complete empty one, and at worst a
// temporary file named .NAME.tmp-* beside it. A failure removes the
// temporary file.
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
// big to rewrite. Changes made by [Filter.Add] go straight to the file
// (which is mapped into memory) under an exclusive flock(2) each, so the
// reference implementation and other processes can work on the same file;
// they are durable after [Filter.Sync] or [Filter.Close]. Editing in place
// needs a Unix system. Errors are those of [Open], and of reserving disk
// space for a sparse file.
func Edit(path string) (*Filter, error) { return openInPlace(path) }

// Sync makes the changes to a filter edited in place durable, and returns
// the first error met editing it. For other filters it does nothing.
func (f *Filter) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inPlace == nil {
		return nil
	}
	return f.inPlace.sync(f)
}

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
