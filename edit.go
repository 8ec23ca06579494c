package pkbf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
)

// inPlace is the state of a filter file being edited in place: the file,
// mapped writable and shared, and its identity, to notice a replacement.
type inPlace struct {
	m       *mapfile.File
	opened  os.FileInfo // the file when it was opened, for os.SameFile
	checked time.Time   // when checkPath last found the path right
	err     error       // the first error met, reported by Close
}

// pathCheckEvery is how often adds check that the path still names the
// file: a stat per add would double the cost of an add. Keys added between
// a replacement and its discovery are not lost silently: the error says
// that they went to the old file. Close always checks.
const pathCheckEvery = 50 * time.Millisecond

func openInPlace(path string) (*Writable, error) {
	w := new(Writable)
	if err := open(path, forEditing, &w.core); err != nil {
		return nil, err
	}
	m := w.mapped
	fi, err := m.Stat()
	if err != nil {
		m.Close()
		return nil, err
	}
	// The mapping is page-aligned, so the data at offset 24 is word-aligned.
	w.setWords(unsafe.Pointer(&m.Bytes()[offData]), len(w.data))
	w.inPlace = &inPlace{m: m, opened: fi, checked: time.Now()}
	return w, nil
}

// fail records the first error and reports false.
func (p *inPlace) fail(err error) bool {
	if p.err == nil {
		p.err = err
	}
	return false
}

// lock takes the file lock, exclusive for a change or shared to read a
// consistent snapshot, checks that the path still names the file, and
// refreshes w's header from the file. It reports false, recording why, if
// the work must not go ahead.
func (p *inPlace) lock(w *Writable, exclusive bool) bool {
	if p.err != nil {
		return false
	}
	if err := p.m.Lock(exclusive); err != nil {
		return p.fail(err)
	}
	if time.Since(p.checked) >= pathCheckEvery {
		if err := p.checkPath(); err != nil {
			p.unlock()
			return p.fail(err)
		}
	}
	if err := p.refresh(w); err != nil {
		p.unlock()
		return p.fail(err)
	}
	return true
}

func (p *inPlace) unlock() { p.m.Unlock() }

// checkPath checks that the path still names the file being edited, at
// its size: a file renamed over it would silently receive none of the
// keys added here, and a file cut short would fault.
func (p *inPlace) checkPath() error {
	fi, err := os.Stat(p.m.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return fileChanged{path: p.m.Path(), what: "was removed or renamed away while keys were being added in place",
			advice: "keys added from then on went to the old file, which has no name now; add them to the file that is there now"}.err()
	}
	if err != nil {
		return err
	}
	if !os.SameFile(fi, p.opened) {
		return fileChanged{path: p.m.Path(), what: "was replaced by another file (renamed over it) while keys were being added in place",
			advice: "keys added from then on went to the old file; add them to the new one"}.err()
	}
	if fi.Size() != int64(p.m.Size()) {
		return fileChanged{path: p.m.Path(), detail: fmt.Sprintf("it is %d bytes, it was %d", fi.Size(), p.m.Size())}.err()
	}
	p.checked = time.Now()
	return nil
}

// refresh reads the header in the file into w.hdr: other processes may
// have added keys. A header that no longer matches the filter's parameters
// stops all editing.
func (p *inPlace) refresh(w *Writable) (err error) {
	defer p.m.RecoverFault(debug.SetPanicOnFault(true), &err)
	h, err := ParseHeader(p.m.Bytes())
	if err == nil && (h.HashCount != w.hdr.HashCount || h.HashLength != w.hdr.HashLength) {
		err = perr.Errorf("%w: hash count or length changed from %d, %d to %d, %d", ErrInvalidFile, w.hdr.HashCount, w.hdr.HashLength, h.HashCount, h.HashLength)
	}
	if err != nil {
		return fileChanged{path: p.m.Path(), detail: perr.Text(err)}.err()
	}
	w.hdr = h
	return nil
}

// writeHeader writes h into the file, after the bits it accounts for.
func (p *inPlace) writeHeader(h Header) {
	var b [headerSize]byte
	h.AppendBinary(b[:0])
	copy(p.m.Bytes(), b[:])
}

// sync makes the changes durable and checks, a last time, that they went
// to the file at the path.
func (p *inPlace) sync(w *Writable) error {
	if err := p.m.Sync(); err != nil {
		p.fail(err)
	}
	if w.edited {
		if err := p.checkPath(); err != nil {
			p.fail(err)
		}
	}
	return p.err
}
