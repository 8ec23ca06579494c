package pkbf

import (
	"errors"
	"runtime"
	"runtime/debug"
)

// ErrFileChanged is wrapped by the errors that report that the file behind
// a filter from [Open] or [Edit] changed in a way no writer following
// the format's lock protocol makes: it was truncated, overwritten with
// other content (cp over it, say), or its memory could not be backed (a
// full file system under a sparse file). The message names the file and
// says what to do: replace filters by renaming a new file over them.
//
// Filters from Open map their file into memory. When the file shrinks, the
// system takes the lost pages away and a query that touches them faults;
// pkbf turns that fault into a panic whose value is an error wrapping
// ErrFileChanged (see [Filter.Probably]), which a caller may recover.
// [Filter.FileChanged] reports the other changes as an error, without a fault.
var ErrFileChanged = errors.New("pkbf: filter file was truncated or changed while in use")

// fileChangedError names the file and what happened to it.
type fileChangedError struct {
	path   string
	detail string // what was seen, or ""
	what   string // what happened; "" is "was truncated or changed while in use"
	advice string // "" is "replace filters by renaming a new file over them"
}

func (e *fileChangedError) Error() string {
	what, advice := e.what, e.advice
	if what == "" {
		what = "was truncated or changed while in use"
	}
	if advice == "" {
		advice = "replace filters by renaming a new file over them"
	}
	msg := "pkbf: filter file " + e.path + " " + what
	if e.detail != "" {
		msg += " (" + e.detail + ")"
	}
	return msg + ": " + advice
}

func (e *fileChangedError) Is(target error) bool { return target == ErrFileChanged }

// catchFault, deferred with the result of debug.SetPanicOnFault(true) as
// its argument, restores the goroutine's setting and turns a memory fault
// inside m's mapping into a panic with an error wrapping ErrFileChanged.
// Any other panic goes on as it was.
func (m *mapping) catchFault(old bool) {
	debug.SetPanicOnFault(old)
	if r := recover(); r != nil {
		panic(m.faultError(r))
	}
}

// recoverFault is catchFault for callers that report errors instead of
// panicking: it stores the fault's error in *err.
func (m *mapping) recoverFault(old bool, err *error) {
	debug.SetPanicOnFault(old)
	if r := recover(); r != nil {
		fe := m.faultError(r)
		if e, ok := fe.(error); ok && errors.Is(e, ErrFileChanged) {
			*err = e
			return
		}
		panic(fe)
	}
}

// faultError returns the error for a fault inside the mapping, or r itself
// for any other panic.
func (m *mapping) faultError(r any) any {
	re, ok := r.(runtime.Error)
	if !ok {
		return r
	}
	addr, ok := re.(interface{ Addr() uintptr })
	if !ok || !m.contains(addr.Addr()) {
		return r
	}
	return &fileChangedError{path: m.path, detail: "its memory could not be read or written: the file is shorter than when it was opened, or its file system is full"}
}
