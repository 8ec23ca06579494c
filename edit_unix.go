//go:build unix

package pkbf

import (
	"fmt"
	"io/fs"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inPlace is the state of a filter file being edited in place: the file
// (for flock) and its shared, writable mapping.
type inPlace struct {
	file    *os.File
	mapping []byte // the whole file, rounded up to whole words
	err     error  // the first error met, reported by Sync and Close
}

func openInPlace(path string) (*Filter, error) {
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	f, err := mapInPlace(file, path)
	if err != nil {
		file.Close()
		return nil, err
	}
	return f, nil
}

func mapInPlace(file *os.File, path string) (*Filter, error) {
	fd := int(file.Fd())
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		return nil, &fs.PathError{Op: "flock", Path: path, Err: err}
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	h, size, err := checkFile(file, path)
	if err != nil {
		return nil, err
	}
	// Map whole 32-bit words: the last may reach past the end of the file
	// but not past its last page, which the kernel maps whole.
	m, err := unix.Mmap(fd, 0, (size+3)&^3, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, &fs.PathError{Op: "mmap", Path: path, Err: err}
	}
	n := size - headerSize
	f := newFilter(h, m[offData:size:size])
	// The mapping is page-aligned, so the data at offset 24 is word-aligned.
	f.words = unsafe.Slice((*uint32)(unsafe.Pointer(&m[offData])), (n+3)/4)
	f.inPlace = &inPlace{file: file, mapping: m}
	return f, nil
}

func (p *inPlace) fail(op string, err error) bool {
	if p.err == nil {
		p.err = &fs.PathError{Op: op, Path: p.file.Name(), Err: err}
	}
	return false
}

// lock takes the file lock, exclusive for a change or shared to read a
// consistent snapshot, and refreshes f's header from the file. It reports
// false, recording why, if the work must not go ahead.
func (p *inPlace) lock(f *Filter, exclusive bool) bool {
	if p.err != nil {
		return false
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(int(p.file.Fd()), how); err != nil {
		return p.fail("flock", err)
	}
	if !p.refresh(f) {
		p.unlock()
		return false
	}
	return true
}

func (p *inPlace) unlock() { unix.Flock(int(p.file.Fd()), unix.LOCK_UN) }

// refresh reads the header in the file into f.hdr: other processes may
// have added keys. A header that no longer matches the filter's parameters
// stops all editing.
func (p *inPlace) refresh(f *Filter) bool {
	h, err := ParseHeader(p.mapping)
	if err == nil && (h.HashCount != f.hdr.HashCount || h.HashLength != f.hdr.HashLength) {
		err = fmt.Errorf("%w: hash count or length changed from %d, %d to %d, %d", ErrInvalidFile, f.hdr.HashCount, f.hdr.HashLength, h.HashCount, h.HashLength)
	}
	if err != nil {
		if p.err == nil {
			p.err = fmt.Errorf("%w (%s, changed by another writer)", err, p.file.Name())
		}
		return false
	}
	f.hdr = h
	return true
}

// writeHeader writes h into the file, after the bits it accounts for.
func (p *inPlace) writeHeader(h Header) {
	var b [headerSize]byte
	h.AppendBinary(b[:0])
	copy(p.mapping, b[:])
}

func (p *inPlace) sync() error {
	if err := unix.Msync(p.mapping, unix.MS_SYNC); err != nil {
		p.fail("msync", err)
	}
	return p.err
}

func (p *inPlace) close() error {
	err := p.sync()
	if merr := unix.Munmap(p.mapping); merr != nil && err == nil {
		err = &fs.PathError{Op: "munmap", Path: p.file.Name(), Err: merr}
	}
	if cerr := p.file.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}
