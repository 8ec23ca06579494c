// Package mapfile is the file behind a pkbf filter, and the memory of its
// data: the file mapped into memory (read-only, or writable and shared for
// editing in place) where the platform allows it and read where it does
// not, or copied into memory of its own that later writes cannot reach;
// data read from a stream whose header declares its size; huge pages for
// large data, on Linux; its flock(2) locks; disk space reserved before it
// is written through the mapping; atomic writes and a rename that refuses
// an existing name; and the guard that turns a fault inside the mapping
// (the file cut short under it) into an error the caller chose.
package mapfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"
	"unsafe"
)

// File is an open file and its bytes: mapped, or read into memory.
type File struct {
	file   *os.File // kept open for flock(2) and Stat
	path   string   // as given to Open, for messages
	b      []byte   // the whole file (rounded up to a word when writable)
	size   int      // the file's size when it was mapped
	mapped bool     // b is a mapping of the file, to be unmapped by Close
	own    bool     // b is an anonymous mapping of its own (Copy), to be unmapped by Close
	fault  error    // what a fault inside the mapping becomes
}

// Open opens path for reading, or for reading and writing, without
// blocking where the platform allows: opening a FIFO that has no writer
// would otherwise wait for one for ever.
func Open(path string, writable bool) (*os.File, error) {
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR
	}
	return os.OpenFile(path, flag|openFlags, 0)
}

// Map maps file, which must be a regular file, read-only or writable.
// check runs first, under the file's lock (exclusive when writable,
// shared otherwise, as the reference implementation takes them), and
// returns the size to map: the header read there is consistent with the
// data mapped. A reader waits at most [SharedLockWait] for its shared
// lock, then goes on without it (see [File.Lock]). A writable mapping has the file's disk space reserved
// first (see [Reserve]) and reaches to the end of the last 32-bit word,
// which is inside the file's last page. Where the file cannot be mapped,
// a read-only File reads it into memory instead; writable mappings need a
// Unix system (errors.ErrUnsupported elsewhere). fault is the error a
// fault inside the mapping becomes (see [File.CatchFault]).
func Map(file *os.File, path string, writable bool, check func() (size int, err error), fault error) (*File, error) {
	if writable {
		if err := lock(file, true); err != nil {
			return nil, err
		}
		defer unlock(file)
	} else if held, err := lockShared(file); err != nil {
		return nil, err
	} else if held {
		defer unlock(file)
	}
	size, err := check()
	if err != nil {
		return nil, err
	}
	m := &File{file: file, path: path, size: size, fault: fault}
	if err := m.mmap(writable); err != nil {
		return nil, err
	}
	return m, nil
}

// ErrChanging is wrapped by the error [Copy] returns, naming the file,
// when the file changed while it was read: a writer is at work on it, and
// a copy could hold some of its bytes and not others.
var ErrChanging = errors.New("changed while it was read: a writer is at work on it")

// Copy reads file, a regular file, into memory of its own, read-only,
// which no later write to the file can reach. check runs first, as for
// [Map], under the file's shared lock, and returns the size to read.
//
// The copy is of the file as one moment left it. A writer that follows
// the lock protocol cannot write under the shared lock; one that does not
// (cp, dd, an editor) changes the file's size or times, which Copy
// compares before and after reading and, if they differ, returns
// [ErrChanging]. File times are coarse (a clock tick, or a second or two
// on some file systems), so that a write in the same tick as the change
// before it would leave them as they were: a file changed less than that
// ago is read only once it has been left alone that long, the lock held
// meanwhile. Copy waits at most a few such spells, then returns
// ErrChanging.
func Copy(file *os.File, path string, check func() (size int, err error)) (*File, error) {
	if held, err := lockShared(file); err != nil {
		return nil, err
	} else if held {
		defer unlock(file)
	}
	before, err := settled(file)
	if err != nil {
		return nil, err
	}
	size, err := check()
	if err != nil {
		return nil, err
	}
	m := &File{file: file, path: path, size: size}
	if err := m.copy(); err != nil {
		return nil, err
	}
	if afterRead != nil {
		afterRead()
	}
	after, err := stampOf(file)
	if err == nil && after != before {
		err = &fs.PathError{Op: "read", Path: path, Err: ErrChanging}
	}
	if err != nil {
		m.free()
		return nil, err
	}
	return m, nil
}

// afterRead, when not nil, runs between Copy's read and its second look
// at the file: tests write there, as a writer at work would.
var afterRead func()

// settleTries bounds the spells settled waits for a file to be left alone.
const settleTries = 3

// settled returns the stamp of a file that has been left alone long enough
// that any write from now on changes its stamp, waiting for that if need
// be, or ErrChanging if it keeps changing.
func settled(file *os.File) (stamp, error) {
	var last stamp
	for try := 0; ; try++ {
		s, err := stampOf(file)
		if err != nil {
			return stamp{}, err
		}
		wait := s.settle()
		// After a spell with the stamp unchanged, the file was left alone
		// that long. (A change time ahead of the clock, the clock set back,
		// stays ahead: a write now would set an earlier one.)
		if try > 0 && s == last {
			return s, nil
		}
		if wait <= 0 {
			return s, nil
		}
		if try == settleTries {
			return stamp{}, &fs.PathError{Op: "read", Path: file.Name(), Err: ErrChanging}
		}
		last = s
		time.Sleep(wait)
	}
}

// coarseSpell is how long a file must be left alone before it is read
// when its times are whole seconds (1 s on ext3, 2 s on FAT); fineSpell
// when they are finer, a few clock ticks.
const coarseSpell, fineSpell = 2*time.Second + 50*time.Millisecond, 50 * time.Millisecond

// settle returns how long to wait until the file's last change is a whole
// spell old: at most a spell, nothing if it is old enough already.
func (s stamp) settle() time.Duration {
	spell := fineSpell
	if s.changed%1e9 == 0 && s.modified%1e9 == 0 {
		spell = coarseSpell
	}
	return min(time.Until(time.Unix(0, max(s.changed, s.modified)).Add(spell)), spell)
}

// A Stamp is what a rename over a path or a write to its file changes:
// the file it names, its size, its modification time and its change time
// (which, unlike the other, no writer can set back; where the platform
// has one). The zero Stamp is no file's.
type Stamp struct {
	fi os.FileInfo
	s  stamp
}

// StatPath returns the Stamp of the file at path now.
func StatPath(path string) (Stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Stamp{}, err
	}
	return Stamp{fi, stamp{size: fi.Size(), modified: fi.ModTime().UnixNano(), changed: ChangeTime(fi)}}, nil
}

// SameFile reports whether s and o are stamps of the same file.
func (s Stamp) SameFile(o Stamp) bool { return s.fi != nil && o.fi != nil && os.SameFile(s.fi, o.fi) }

// Unchanged reports whether s and o are stamps of the same file, not
// written between them.
func (s Stamp) Unchanged(o Stamp) bool { return s.SameFile(o) && s.s == o.s }

// A stamp is what a write to a file changes: its size and times (where
// the platform has a change time; elsewhere changed is 0), with the file
// it is.
type stamp struct {
	dev, ino          uint64
	size              int64
	modified, changed int64 // in nanoseconds since 1970
}

// free releases the memory of a File that was never handed out, leaving
// its file open for the caller.
func (m *File) free() {
	if m.own {
		munmap(m.b)
	}
	m.b, m.own = nil, false
}

// compareChunk is how much of the file SameContent reads at a time.
const compareChunk = 1 << 20

// SameContent reports whether the file's bytes now are those of the copy
// ([Copy]): read under the file's shared lock, as Copy reads, a chunk at
// a time, and compared. A writer that holds no lock and writes through a
// mapping whose pages it had written before changes no time of the file:
// reading it is the only way to see its bytes. Errors are the read's.
func (m *File) SameContent() (bool, error) {
	if held, err := lockShared(m.file); err != nil {
		return false, err
	} else if held {
		defer unlock(m.file)
	}
	if s, err := stampOf(m.file); err != nil || s.size != int64(m.size) {
		return false, err
	}
	buf := make([]byte, min(compareChunk, m.size))
	for off := 0; off < m.size; off += len(buf) {
		b := buf[:min(len(buf), m.size-off)]
		if _, err := m.file.ReadAt(b, int64(off)); err != nil {
			if err == io.EOF { // cut short since its size was taken
				return false, nil
			}
			return false, &fs.PathError{Op: "read", Path: m.path, Err: err}
		}
		if !bytes.Equal(b, m.b[off:off+len(b)]) {
			return false, nil
		}
	}
	return true, nil
}

// ReadStart reads the first len(b) bytes of the file as it is now: from
// the mapping (a fault there is the File's fault error), or from the file
// itself when its bytes are a copy.
func (m *File) ReadStart(b []byte) (err error) {
	if m.mapped {
		defer m.RecoverFault(debug.SetPanicOnFault(true), &err)
		copy(b, m.b)
		return nil
	}
	if _, err := m.file.ReadAt(b, 0); err != nil {
		if err == io.EOF { // cut short since its size was taken
			err = io.ErrUnexpectedEOF
		}
		return &fs.PathError{Op: "read", Path: m.path, Err: err}
	}
	return nil
}

// Bytes returns the file's bytes: the mapping, or what was read.
func (m *File) Bytes() []byte { return m.b }

// Size is the file's size when it was mapped.
func (m *File) Size() int { return m.size }

// Path is the path the file was opened by.
func (m *File) Path() string { return m.path }

// Mapped reports whether the bytes are a mapping of the file, which sees
// other processes' changes, rather than a copy read at Map or Copy.
func (m *File) Mapped() bool { return m.mapped }

// Stat returns the open file's FileInfo now.
func (m *File) Stat() (fs.FileInfo, error) { return m.file.Stat() }

// Lock takes the file's flock(2), shared or exclusive; Unlock releases it.
// Where there is no flock they do nothing. An exclusive lock is waited
// for. A shared lock is waited for at most [SharedLockWait]; after that
// Lock returns nil without it (Unlock then releases nothing): anyone who
// can open the file can hold its lock, and a reader in a gate (sshd's
// command, a server's reload) must not wait on them for ever. A reader
// without the lock may see a writer's change half made; the header's
// magic, hash count and length, which decide what is mapped, never change
// in place.
func (m *File) Lock(exclusive bool) error {
	if exclusive {
		return lock(m.file, true)
	}
	_, err := lockShared(m.file)
	return err
}

// SharedLockWait bounds how long a reader waits for a shared lock that
// another process's exclusive lock holds up.
const SharedLockWait = time.Second

// lockShared takes file's shared flock(2), trying again with growing
// pauses for up to SharedLockWait while another process holds it
// exclusively, and reports whether it holds it. It polls rather than
// waits in the kernel: a wait given up would leave a thread blocked in
// flock(2), and its lock, once granted, shared with file's.
func lockShared(file *os.File) (held bool, err error) {
	pause := time.Millisecond
	for start := time.Now(); ; {
		switch ok, err := tryLockShared(file); {
		case err != nil:
			return false, err
		case ok:
			return true, nil
		case time.Since(start) >= SharedLockWait:
			return false, nil
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// Unlock releases the lock Lock took.
func (m *File) Unlock() { unlock(m.file) }

// LockFile takes file's flock(2), shared or exclusive, as [File.Lock]
// does, for a file that is read rather than mapped; UnlockFile releases it.
func LockFile(file *os.File, exclusive bool) error { return lock(file, exclusive) }

// UnlockFile releases the lock LockFile took.
func UnlockFile(file *os.File) { unlock(file) }

// TryLockFile takes file's exclusive flock(2) if no one holds a lock on
// it, and reports whether it did. Where there is no flock it succeeds.
func TryLockFile(file *os.File) (bool, error) { return tryLock(file) }

// SyncDir makes a rename in dir durable. File systems that cannot sync a
// directory say EINVAL; the rename then stands as the system left it.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// Close unmaps the file and closes it.
func (m *File) Close() error {
	var err error
	if m.mapped || m.own {
		if err = munmap(m.b); err != nil {
			err = &fs.PathError{Op: "munmap", Path: m.path, Err: err}
		}
	}
	m.b, m.mapped, m.own = nil, false, false
	if cerr := m.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// CatchFault, deferred with the result of debug.SetPanicOnFault(true) as
// its argument, restores the goroutine's setting and turns a memory fault
// inside the mapping into a panic whose value is the File's fault error.
// Any other panic goes on as it was.
func (m *File) CatchFault(old bool) {
	debug.SetPanicOnFault(old)
	if r := recover(); r != nil {
		if m.isFault(r) {
			panic(m.fault)
		}
		panic(r)
	}
}

// RecoverFault is CatchFault for callers that report errors instead of
// panicking: it stores the fault error in *err.
func (m *File) RecoverFault(old bool, err *error) {
	debug.SetPanicOnFault(old)
	if r := recover(); r != nil {
		if m.isFault(r) {
			*err = m.fault
			return
		}
		panic(r)
	}
}

// isFault reports whether a panic is a memory fault inside the mapping.
func (m *File) isFault(r any) bool {
	re, ok := r.(runtime.Error)
	if !ok {
		return false
	}
	addr, ok := re.(interface{ Addr() uintptr })
	return ok && m.contains(addr.Addr())
}

// contains reports whether addr lies in the pages of the mapping.
func (m *File) contains(addr uintptr) bool {
	if !m.mapped || len(m.b) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(m.b)))
	page := uintptr(os.Getpagesize())
	return addr >= start && addr < start+(uintptr(len(m.b))+page-1)&^(page-1)
}

// read reads the first m.size bytes of the file, whose size check found:
// the allocation is on the word of the file system, not of a header.
func (m *File) read() error {
	b := make([]byte, m.size)
	if _, err := m.file.ReadAt(b, 0); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return &fs.PathError{Op: "read", Path: m.path, Err: err}
	}
	m.b = b
	return nil
}

// linkNoReplace gives oldpath's file the name newpath, which must not exist,
// and removes the name oldpath. Where hard links are not supported it
// checks that newpath is free and renames: not atomic, but the best such a
// file system allows.
func linkNoReplace(oldpath, newpath string) error {
	err := os.Link(oldpath, newpath)
	if err == nil {
		return os.Remove(oldpath)
	}
	if errors.Is(err, fs.ErrExist) {
		return err
	}
	if _, serr := os.Lstat(newpath); serr == nil {
		return &fs.PathError{Op: "create", Path: newpath, Err: fs.ErrExist}
	}
	return os.Rename(oldpath, newpath)
}
