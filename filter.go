// Package pkbf reads, queries and writes pwnedkeys bloom filters (pkbfv1).
//
// A pkbfv1 file is a bloom filter over the DER SubjectPublicKeyInfo (SPKI) of
// keys known to be compromised, as published by pwnedkeys.com. A filter
// answers one question quickly and offline: is this key probably compromised?
//
//	f, err := pkbf.Open("pwnedkeys.pkbf")
//	...
//	if f.Probably(spki) { // spki: the DER bytes the publisher hashed
//		// look it up online before acting on it
//	}
//
// [Filter.Probably] tests exactly the bytes it is given, and
// [Filter.ProbablyBatch] a batch of them, overlapping their memory reads.
// One key has several DER encodings and a filter holds whichever was
// added: package github.com/pkbf/pkbf/keycheck reads keys, certificates
// and requests in every form, looks each key up under every encoding, and
// checks streams of them.
//
// # Guarantees
//
// A false answer from Probably is definite for those exact bytes: they
// were never added. A true answer means "look it up": the bytes were
// added or are a false positive, at about the rate
// [Header.FalsePositiveRate] estimates. Confirm a true answer online with
// the pwnedkeys API (package github.com/pkbf/pkbf/pwnedkeys).
//
// # Reading filters
//
// [Open] memory-maps a file read-only, [Parse] wraps a byte slice and
// [ReadFilter] reads one from a stream. Each validates the header and the
// exact data size before use; errors wrap [ErrInvalidFile]. A *Filter
// has no Add: it cannot change. [OpenLive] follows a path as new files
// replace it.
//
// # Writing filters
//
// [New] makes a [Writable] filter in memory and [Edit] one that edits a
// file in place, under the reference implementation's flock(2) protocol;
// [Writable.Add] adds an SPKI. [Create] makes an empty file, [Merge] the
// union of files, and [Parameters] sizes a filter as the reference does.
//
// # Concurrency
//
// Queries are safe from any number of goroutines at once, and so are adds
// to a Writable.
package pkbf

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync/atomic"
	"time"

	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
)

// Filter is a pkbfv1 bloom filter, for queries. A filter from [Open],
// [Parse] or [ReadFilter] is read-only: it has no Add. Keys are added to
// a [Writable] (from [New] or [Edit]), which answers queries too.
//
// Queries are safe for concurrent use. [Filter.Close] must not run
// concurrently with other methods; after Close, queries panic.
type Filter struct {
	core
}

// core is what a Filter and a Writable share: the header, the bit data,
// the file behind them, and the queries (query.go).
type core struct {
	hdr    Header
	data   []byte        // the bit data, exactly hdr.dataSize() bytes
	mask   uint64        // m - 1: a position is a hash masked to L bits
	k      uint64        // hash count
	large  bool          // batches work in rounds: see roundsFrom
	mapped *mapfile.File // the file behind a filter from Open or Edit, or nil
	copied *mapfile.File // the file behind a filter read, not mapped (OpenLive, or Open where mmap fails), or nil
	opened Header        // the header when the file was opened
	shared bool          // a Writable's data: Add sets its words meanwhile (see dataByte)

	// A Live's refusal of a change to this copy's file, FileChanged's.
	refused atomic.Pointer[error]

	// ProbablyBatch's running mean of the bits its keys needed tested in
	// turn, in 16ths: it sets how deep batches fetch (see probe.Depth).
	batchVisits atomic.Uint32
}

// roundsFrom: past this data size ProbablyBatch works in rounds whatever
// the hashing, as keys read from memory push a filter's lines out of a
// core's L2 (docs/performance.md, BenchmarkBatch/KeySet). hugePagesFrom:
// past this size small pages cost a probe a TLB miss.
const roundsFrom, hugePagesFrom = 4 << 20, 16 << 20

// init sets c to a filter over data, which must be exactly h.dataSize()
// bytes.
func (c *core) init(h Header, data []byte) {
	c.hdr, c.data = h, data
	c.mask, c.k = h.Bits()-1, uint64(h.HashCount)
	c.large = len(data) > roundsFrom
}

// newFilter makes a Filter over data, which must be exactly h.dataSize() bytes.
func newFilter(h Header, data []byte) *Filter {
	f := new(Filter)
	f.init(h, data)
	return f
}

// checkDataSize checks that a header's declared data fits this platform's
// address space and equals have, the bytes actually present.
func checkDataSize(h Header, have uint64) error {
	want := h.dataSize()
	if want > dataSizeLimit {
		return perr.Errorf("%w: hash length %d needs %d data bytes, more than this platform can address", ErrInvalidFile, h.HashLength, want)
	}
	switch {
	case have < want:
		return perr.Errorf("%w: data is %d bytes, header says %d: truncated: %w", ErrInvalidFile, have, want, io.ErrUnexpectedEOF)
	case have > want:
		return perr.Errorf("%w: data is %d bytes, header says %d: %d trailing bytes", ErrInvalidFile, have, want, have-want)
	}
	return nil
}

// Parse returns a read-only filter over b, a whole pkbfv1 file. It does not
// copy b: the caller must not modify b while the filter is in use. Errors
// wrap [ErrInvalidFile].
//
// Past 16 MiB of data, where small pages cost a probe a TLB miss, Parse
// asks Linux to back b's whole 2 MiB pages with huge pages (MADV_HUGEPAGE,
// MADV_COLLAPSE, which copies them: it takes time, docs/performance.md
// says how much). b's bytes and the caller's other memory stay as they
// are.
func Parse(b []byte) (*Filter, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if err := checkDataSize(h, uint64(len(b)-headerSize)); err != nil {
		return nil, err
	}
	data := b[offData:len(b):len(b)]
	if len(data) > hugePagesFrom {
		mapfile.AdviseHuge(data)
	}
	return newFilter(h, data), nil
}

// Open opens the pkbfv1 file at path read-only. A regular file is mapped
// into memory where the platform allows it, off the Go heap, its header
// and size read under the reference implementation's shared flock(2);
// keys another process adds in place under the lock ([Edit]) are seen at
// once. Any other file (a pipe, /dev/stdin) is read as a stream, as
// [ReadFilter] does. Replace a filter that programs have open by renaming
// a new file over it; a mapped file cut short in place makes queries panic
// with an error wrapping [ErrFileChanged]. Call [Filter.Close] to release
// the filter.
//
// A file that cannot be opened gives an error wrapping the os package's
// *fs.PathError (errors.Is(err, fs.ErrNotExist) for a missing file); a
// malformed one an error wrapping [ErrInvalidFile] that names the file.
// Open never writes to the file.
func Open(path string) (*Filter, error) {
	f := new(Filter)
	if err := open(path, forQueries, &f.core); err != nil {
		return nil, err
	}
	return f, nil
}

// How open reads a regular file: mapped read-only (Open), mapped writable
// and shared (Edit), or copied into memory of its own (OpenLive; see
// mapfile.Copy).
const (
	forQueries = iota
	forEditing
	forLive
)

// openFile opens the filter file at path, for reading or for writing in
// place, and refuses what cannot be one: a directory, and for writing
// anything but a regular file. It is how pkbf opens every filter file
// (Open, Edit, Merge); the caller then reads the filter in it as a
// regular file (checkFile, under the file's lock) or as a stream
// (readHeader).
func openFile(path string, writable bool) (*os.File, fs.FileInfo, error) {
	file, err := mapfile.Open(path, writable)
	if err != nil {
		return nil, nil, osError(path, err)
	}
	fi, err := file.Stat()
	switch {
	case err != nil:
	case fi.IsDir():
		err = fileError(path, perr.Errorf("%w: is a directory, not a filter file", ErrInvalidFile))
	case writable && !fi.Mode().IsRegular():
		err = fileError(path, perr.Errorf("%w: not a regular file (%s): only a regular file can be edited in place", ErrInvalidFile, mapfile.Kind(fi.Mode())))
	}
	if err != nil {
		file.Close()
		return nil, nil, err
	}
	return file, fi, nil
}

// open opens the filter file at path into c, as Open documents, read as
// how says.
func open(path string, how int, c *core) error {
	writable := how == forEditing
	file, fi, err := openFile(path, writable)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		defer file.Close()
		if how == forLive { // a FIFO or a device can wait for ever
			return fileError(path, perr.Errorf("%w: %s, not a regular file: a live filter follows regular files only", ErrInvalidFile, mapfile.Kind(fi.Mode())))
		}
		h, data, err := readStream(file, path, fi.Mode())
		if err == nil {
			c.init(h, data)
		}
		return err
	}
	var h Header
	check := func() (size int, err error) {
		h, size, err = checkFile(file, path)
		return size, err
	}
	var m *mapfile.File
	if how == forLive {
		m, err = mapfile.Copy(file, path, check)
	} else {
		fault := fileChanged{path: path, detail: "its memory could not be read or written: the file is shorter than when it was opened, or its file system is full"}.err()
		m, err = mapfile.Map(file, path, writable, check, fault)
	}
	if err != nil {
		file.Close()
		return err
	}
	c.init(h, m.Bytes()[offData:m.Size():m.Size()])
	if c.opened = h; m.Mapped() {
		c.mapped = m
	} else {
		c.copied = m
	}
	return nil
}

// readStream reads a filter from a file that is not a regular file.
func readStream(file *os.File, path string, mode fs.FileMode) (Header, []byte, error) {
	h, data, err := readFilter(file)
	if err == nil {
		var extra [1]byte
		if n, _ := io.ReadFull(file, extra[:]); n > 0 {
			err = perr.Errorf("%w: %s holds more than the filter its header declares", ErrInvalidFile, mapfile.Kind(mode))
		}
	}
	if err != nil {
		if mode&fs.ModeNamedPipe != 0 && errors.Is(err, io.ErrUnexpectedEOF) {
			err = perr.Errorf("%w; a FIFO gives nothing unless a writer has it open", err)
		}
		if _, ok := err.(*fs.PathError); !ok {
			err = fileError(path, err)
		}
		return Header{}, nil, err
	}
	return h, data, nil
}

// checkFile validates an open filter file: a regular file whose header is
// valid and whose size is exactly what the header says. It returns the
// header and the file size. Errors name the file.
func checkFile(file *os.File, path string) (Header, int, error) {
	fi, err := file.Stat()
	if err != nil {
		return Header{}, 0, err
	}
	size := fi.Size()
	var hb [headerSize]byte
	if n, err := file.ReadAt(hb[:], 0); n < headerSize {
		if err == io.EOF {
			return Header{}, 0, fileError(path, perr.Errorf("%w: file is %d bytes, shorter than the %d-byte header: %w", ErrInvalidFile, n, headerSize, io.ErrUnexpectedEOF))
		}
		return Header{}, 0, err
	}
	h, err := ParseHeader(hb[:])
	if err == nil {
		err = checkDataSize(h, uint64(size-int64(headerSize)))
	}
	if err != nil {
		return Header{}, 0, fileError(path, err)
	}
	return h, int(size), nil
}

// ReadFilter reads one pkbfv1 file from r: exactly the header and the data
// it declares, nothing after. It allocates the whole data only once a
// quarter of it has arrived, so a header that claims more than the stream
// holds costs little more than what the stream sent; such a stream fails
// with an error wrapping both [ErrInvalidFile] and [io.ErrUnexpectedEOF].
// Read errors from r are returned as they are.
func ReadFilter(r io.Reader) (*Filter, error) {
	h, data, err := readFilter(r)
	if err != nil {
		return nil, err
	}
	return newFilter(h, data), nil
}

// readFilter is ReadFilter, returning the header and the data.
func readFilter(r io.Reader) (Header, []byte, error) {
	h, err := readHeader(r)
	if err != nil {
		return Header{}, nil, err
	}
	want := h.dataSize()
	if want > dataSizeLimit {
		return Header{}, nil, checkDataSize(h, want)
	}
	data, n, err := mapfile.ReadDeclared(r, int(want), mapfile.AllocHuge)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return Header{}, nil, checkDataSize(h, uint64(n))
	}
	if err != nil {
		return Header{}, nil, err
	}
	mapfile.SettleHuge(data)
	return h, data, nil
}

// readHeader reads and parses the header at the start of a stream. Errors
// wrap ErrInvalidFile, or are r's read errors as they are.
func readHeader(r io.Reader) (Header, error) {
	var hb [headerSize]byte
	if n, err := io.ReadFull(r, hb[:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return Header{}, perr.Errorf("%w: input is %d bytes, shorter than the %d-byte header: %w", ErrInvalidFile, n, headerSize, io.ErrUnexpectedEOF)
		}
		return Header{}, err
	}
	return ParseHeader(hb[:])
}

// Close releases the file and memory mapping of a filter from [Open]. For
// other filters Close does nothing. Close is idempotent; after it, queries
// panic.
func (f *Filter) Close() error { return f.release() }

// release unmaps and closes the filter's file, if any, and forgets its data.
func (c *core) release() error {
	var err error
	for _, m := range []*mapfile.File{c.mapped, c.copied} {
		if m != nil {
			err = errors.Join(err, m.Close())
		}
	}
	c.mapped, c.copied, c.data = nil, nil, nil
	return err
}

// FileChanged returns nil while the file behind a filter from [Open] or
// [Live.Do] is, as far as can be told, the one that was opened: the same
// size and parameters, counters that only went forward (keys added in
// place), and for a Live's copy no change in place the Live refused (see
// [OpenLive]); otherwise an error wrapping [ErrFileChanged] that says
// what changed. It reads the header under a shared flock(2), is safe to
// call concurrently with queries, and returns nil for a filter not read
// from a file.
func (f *Filter) FileChanged() error {
	_, err := f.fileHeader()
	return err
}

// fileHeader reads the header in the file behind a filter now, under a
// shared flock(2), and checks it as FileChanged documents. For filters
// not read from a file it returns the header as opened.
func (f *Filter) fileHeader() (h Header, err error) {
	m := cmp.Or(f.mapped, f.copied)
	if m == nil {
		return f.hdr, nil
	}
	if err := m.Lock(false); err != nil {
		return Header{}, err
	}
	defer m.Unlock()
	fi, err := m.Stat()
	if err != nil {
		return Header{}, err
	}
	path := m.Path()
	if fi.Size() != int64(m.Size()) {
		return Header{}, fileChanged{path: path, detail: fmt.Sprintf("it is %d bytes, it was %d", fi.Size(), m.Size())}.err()
	}
	var hb [headerSize]byte
	if err := m.ReadStart(hb[:]); err != nil {
		return Header{}, err
	}
	h, herr := ParseHeader(hb[:])
	if herr != nil {
		return Header{}, fileChanged{path: path, detail: "its header is no longer valid: " + perr.Text(herr)}.err()
	}
	if detail := f.opened.notGrownTo(h); detail != "" {
		return Header{}, fileChanged{path: path, detail: detail}.err()
	}
	if e := f.refused.Load(); e != nil {
		return Header{}, *e
	}
	return h, nil
}

// notGrownTo returns "" when now is a header that adding keys in place to
// a filter of header h can make (the same hash count and length, counters
// that did not go back), else what differs.
func (h Header) notGrownTo(now Header) string {
	switch {
	case now.HashCount != h.HashCount || now.HashLength != h.HashLength:
		return fmt.Sprintf("hash count and length are now %d and %d, were %d and %d", now.HashCount, now.HashLength, h.HashCount, h.HashLength)
	case now.Revision < h.Revision || now.EntryCount < h.EntryCount || uint64(now.Updated.Unix()) < uint64(h.Updated.Unix()):
		return fmt.Sprintf("revision %d, %d entries, updated %s; it had revision %d, %d entries, updated %s",
			now.Revision, now.EntryCount, now.Updated.Format(time.RFC3339), h.Revision, h.EntryCount, h.Updated.Format(time.RFC3339))
	}
	return ""
}

// Header returns the filter's header, as it was when the filter was read.
func (f *Filter) Header() Header { return f.hdr }
