package pkbf

import "github.com/pkbf/pkbf/internal/perr"

// ErrInvalidFile is wrapped by every error that reports a malformed filter:
// from [ParseHeader], [Parse], [Open] and [ReadFilter]. The message says
// what is wrong, for example
// "pkbf: invalid filter file: data is 511 bytes, header says 512".
var ErrInvalidFile = perr.New("invalid filter file")

// ErrFileChanged is wrapped by the errors that report that the file behind
// a filter from [Open] or [Edit] changed in a way no writer following the
// format's lock protocol makes: truncated, overwritten with other content
// (cp over it), or its memory not backed (a full file system under a
// sparse file). The message names the file and says to replace filters by
// renaming a new file over them. A query that touches a mapped file's lost
// pages panics with such an error ([Filter.Probably]); [Filter.FileChanged]
// reports the other changes.
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

// osError prefixes an OS error about path (which names the file).
func osError(path string, err error) error {
	if path == "" {
		return perr.Errorf("no filter file: the path is empty: %w", err)
	}
	return perr.Errorf("%w", err)
}
