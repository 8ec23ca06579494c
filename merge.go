package pkbf

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"runtime/debug"
	"time"

	"github.com/pkbf/pkbf/internal/bitwords"
	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
)

// mergeChunk is how much of each input Merge reads at a time: its memory
// is two chunks and a write buffer, whatever the number and size of the
// inputs.
const mergeChunk = 1 << 20

// Merge writes to out the union of the filter files inputs, which must all
// have the same hash count and hash length: out answers exactly as one
// filter to which all the inputs' keys were added. Its header has the
// inputs' highest revision plus one, the update time now, and the sum of
// their entry counts (up to 2^32-1; [Header.EstimateEntries] counts a key
// in several inputs once).
//
// Merge streams, a chunk of each input at a time, in memory that does not
// grow with the inputs; each input is held under the reference's shared
// flock(2) from start to end, or read as a stream (a pipe). out is written
// atomically, as [Filter.WriteFile] writes it, and may be one of the
// inputs. Cancelling ctx stops the merge, leaves any old out as it was and
// returns ctx's error. Errors name the file they are about.
func Merge(ctx context.Context, out string, inputs ...string) (Header, error) {
	if len(inputs) == 0 {
		return Header{}, perr.New("merge: no input filters")
	}
	ins := make([]*mergeInput, 0, len(inputs))
	defer func() {
		for _, in := range ins {
			in.close()
		}
	}()
	for _, path := range inputs {
		in, err := openMergeInput(path)
		if err != nil {
			return Header{}, err
		}
		ins = append(ins, in)
		if first := ins[0]; in.hdr.HashCount != first.hdr.HashCount || in.hdr.HashLength != first.hdr.HashLength {
			return Header{}, perr.Errorf("merge: %s has hash count %d and hash length %d, %s has %d and %d: only filters with the same parameters can be merged",
				in.path, in.hdr.HashCount, in.hdr.HashLength, first.path, first.hdr.HashCount, first.hdr.HashLength)
		}
	}
	h := mergedHeader(ins)
	err := writeFileAtomic(out, func(w io.Writer) error {
		hdr, err := h.AppendBinary(nil)
		if err != nil {
			return err
		}
		if _, err := w.Write(hdr); err != nil {
			return err
		}
		return mergeData(ctx, w, ins, h.dataSize())
	})
	if err != nil {
		return Header{}, err
	}
	return h, nil
}

// mergedHeader is the header of the union of ins.
func mergedHeader(ins []*mergeInput) Header {
	h := Header{HashCount: ins[0].hdr.HashCount, HashLength: ins[0].hdr.HashLength, Updated: time.Unix(time.Now().Unix(), 0).UTC()}
	var rev, count uint64
	for _, in := range ins {
		rev = max(rev, uint64(in.hdr.Revision))
		count += uint64(in.hdr.EntryCount)
	}
	h.Revision = uint32(min(rev+1, math.MaxUint32))
	h.EntryCount = uint32(min(count, maxEntryCount))
	return h
}

// mergeData writes the OR of the inputs' data, size bytes each.
func mergeData(ctx context.Context, w io.Writer, ins []*mergeInput, size uint64) error {
	acc := make([]byte, min(size, mergeChunk))
	buf := make([]byte, len(acc))
	for left := size; left > 0; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(left, uint64(len(acc)))
		for i, in := range ins {
			dst := acc[:n]
			if i > 0 {
				dst = buf[:n]
			}
			if err := in.read(dst); err != nil {
				return err
			}
			if i > 0 {
				bitwords.Or(acc[:n], dst)
			}
		}
		if _, err := w.Write(acc[:n]); err != nil {
			return err
		}
		left -= n
	}
	for _, in := range ins {
		if err := in.finish(); err != nil {
			return err
		}
	}
	return nil
}

// mergeInput is one of Merge's input files, open and (a regular file)
// locked.
type mergeInput struct {
	path   string
	file   *os.File
	hdr    Header
	data   io.Reader // the data: a section of a regular file, or the stream itself
	stream bool      // not a regular file
	locked bool
}

// openMergeInput opens an input as Open does (openFile), but reads it a
// chunk at a time as the merge goes, from the file under its shared lock
// or from the stream, so that memory stays two chunks whatever the
// inputs' size, and a slow stream can be interrupted.
func openMergeInput(path string) (*mergeInput, error) {
	file, fi, err := openFile(path, false)
	if err != nil {
		return nil, err
	}
	in := &mergeInput{path: path, file: file}
	if err := in.start(fi); err != nil {
		in.close()
		return nil, err
	}
	return in, nil
}

// start reads and checks the header: under the shared lock, with the file's
// size, for a regular file.
func (in *mergeInput) start(fi fs.FileInfo) error {
	var err error
	if !fi.Mode().IsRegular() {
		in.stream, in.data = true, in.file
		if in.hdr, err = readHeader(in.file); errors.Is(err, ErrInvalidFile) {
			return fileError(in.path, err)
		}
		return err
	}
	if err := mapfile.LockFile(in.file, false); err != nil {
		return err
	}
	in.locked = true
	if in.hdr, _, err = checkFile(in.file, in.path); err != nil {
		return err
	}
	in.data = io.NewSectionReader(in.file, offData, int64(in.hdr.dataSize()))
	return nil
}

// read fills b with the input's next data bytes.
func (in *mergeInput) read(b []byte) error {
	_, err := io.ReadFull(in.data, b)
	switch {
	case err == nil:
		return nil
	case err != io.EOF && err != io.ErrUnexpectedEOF:
		return err
	case in.stream:
		return fileError(in.path, perr.Errorf("%w: the data ends early, header says %d bytes: truncated: %w", ErrInvalidFile, in.hdr.dataSize(), io.ErrUnexpectedEOF))
	}
	return fileChanged{path: in.path, detail: "it was cut short while being merged"}.err()
}

// finish checks, after the data, that a stream holds nothing more and that
// a regular file is as it was at the start (only a writer that ignores the
// lock, such as cp, could have changed it).
func (in *mergeInput) finish() error {
	if in.stream {
		var extra [1]byte
		if n, _ := io.ReadFull(in.file, extra[:]); n > 0 {
			return fileError(in.path, perr.Errorf("%w: input holds more than the filter its header declares", ErrInvalidFile))
		}
		return nil
	}
	if h, _, err := checkFile(in.file, in.path); err != nil || h != in.hdr {
		return fileChanged{path: in.path, detail: "it was overwritten while being merged"}.err()
	}
	return nil
}

func (in *mergeInput) close() {
	if in.locked {
		mapfile.UnlockFile(in.file)
	}
	in.file.Close()
}

// Union adds the keys of g, a filter with the same hash count and length,
// to w, as [Merge] does: it sets every bit set in g, and grows w's entry
// count by g's (up to 2^32-1); the update time and revision change as
// [Writable.Add] changes them, and on a filter edited in place Union locks
// and fails as Add does.
func (w *Writable) Union(g *Filter) (err error) {
	gh := g.Header()
	if w.hdr.HashCount != gh.HashCount || w.hdr.HashLength != gh.HashLength {
		return perr.Errorf("union of filters with hash count %d and length %d, and %d and %d: only filters with the same parameters combine",
			w.hdr.HashCount, w.hdr.HashLength, gh.HashCount, gh.HashLength)
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.words == nil {
		panic("pkbf: Union on a closed filter")
	}
	if g.mapped != nil {
		defer g.mapped.RecoverFault(debug.SetPanicOnFault(true), &err)
		defer g.mapped.ReadingAll()()
	}
	if w.mapped != nil {
		var fault error
		defer func() {
			if fault != nil {
				err = fault
				if w.inPlace != nil {
					w.inPlace.fail(fault)
				}
			}
		}()
		defer w.mapped.RecoverFault(debug.SetPanicOnFault(true), &fault)
	}
	if w.inPlace != nil {
		if !w.inPlace.lock(w, true) {
			return w.inPlace.err
		}
		defer w.inPlace.unlock()
	}
	changed := bitwords.OrAtomic(w.words, g.data)
	if !changed && gh.EntryCount == 0 {
		return nil
	}
	w.changed(now, uint64(gh.EntryCount))
	if w.inPlace != nil {
		return w.inPlace.err
	}
	return nil
}

// EstimateEntries estimates how many distinct keys were added to a filter
// with this header's parameters from the number of its bits that are set:
// -m/k · ln(1 - set/m), the standard estimate for m bits and k hashes,
// within a few percent while the filter is less than about 90% full. It is
// +Inf when every bit is set. Unlike the header's entry count, it counts a
// key added to several merged filters once (see [Merge]).
func (h Header) EstimateEntries(set uint64) float64 {
	if set >= h.Bits() {
		return math.Inf(1)
	}
	m := float64(h.Bits())
	return -m / float64(h.HashCount) * math.Log1p(-float64(set)/m)
}
