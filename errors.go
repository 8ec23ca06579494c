package pkbf

import "github.com/pkbf/pkbf/internal/perr"

// ErrInvalidFile is wrapped by every error that reports a malformed filter:
// from [ParseHeader], [Parse], [Open] and [ReadFilter]. The message says
// what is wrong, for example
// "pkbf: invalid filter file: data is 511 bytes, header says 512".
var ErrInvalidFile = perr.New("invalid filter file")

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
var ErrFileChanged = perr.New("filter file was truncated or changed while in use")

// fileChanged describes what happened to a filter's file, naming it; its
// error wraps ErrFileChanged.
type fileChanged struct {
	path   string
	detail string // what was seen, or ""
	what   string // what happened; "" is "was truncated or changed while in use"
	advice string // "" is "replace filters by renaming a new file over them"
}

func (c fileChanged) err() error {
	what, advice := c.what, c.advice
	if what == "" {
		what = "was truncated or changed while in use"
	}
	if advice == "" {
		advice = "replace filters by renaming a new file over them"
	}
	detail := ""
	if c.detail != "" {
		detail = " (" + c.detail + ")"
	}
	return perr.Kind(ErrFileChanged, perr.Errorf("filter file %s %s%s: %s", c.path, what, detail, advice))
}

// fileError names the file err is about, first: "pkbf: PATH: invalid
// filter file: ...". It wraps err.
func fileError(path string, err error) error { return perr.Errorf("%s: %w", path, err) }
