// Package perr makes pkbf's errors: every message starts with "pkbf: ",
// once. An Error keeps its text without the prefix beside it, so an error
// that wraps another pkbf error puts the inner text after its own context
// ("pkbf: update from URL: invalid filter file: ...") instead of a second
// "pkbf: ", and the command shows an error under its own prefix ("pkbf:
// error: ...") from [Text]. Nobody removes a prefix from a string.
package perr

import (
	"errors"
	"fmt"
)

// Prefix starts every pkbf error message.
const Prefix = "pkbf: "

// Error is a pkbf error.
type Error struct {
	text  string  // the message after Prefix
	err   error   // what it wraps, or nil
	kinds []error // sentinels it also is (errors.Is), beside err's chain
}

func (e *Error) Error() string { return Prefix + e.text }

// Unwrap returns what e wraps and the kinds it was given.
func (e *Error) Unwrap() []error {
	if e.err == nil {
		return e.kinds
	}
	return append([]error{e.err}, e.kinds...)
}

// New returns an error whose message is Prefix and text: a sentinel.
func New(text string) error { return &Error{text: text} }

// Errorf formats as fmt.Errorf does, with Prefix before the result; a
// pkbf error given for a verb (%w, %v, %s) contributes its text without
// the prefix, and %w wraps it as usual.
func Errorf(format string, args ...any) error {
	for i, a := range args {
		if e, ok := a.(*Error); ok {
			args[i] = textOf{e}
		}
	}
	w := fmt.Errorf(format, args...)
	return &Error{text: w.Error(), err: errors.Unwrap(w), kinds: joined(w)}
}

// joined returns the errors w wraps when it wraps several (fmt.Errorf
// with more than one %w), which errors.Unwrap does not return.
func joined(w error) []error {
	if m, ok := w.(interface{ Unwrap() []error }); ok {
		return m.Unwrap()
	}
	return nil
}

// textOf is a pkbf error shown by its text alone, inside another's.
type textOf struct{ e *Error }

func (t textOf) Error() string { return t.e.text }
func (t textOf) Unwrap() error { return t.e }

// Kind returns err, which must be a pkbf error, as an error that is also
// kind (errors.Is(result, kind)): a sentinel callers branch on. Any other
// error is returned as it is.
func Kind(kind, err error) error {
	e, ok := err.(*Error)
	if !ok {
		return err
	}
	c := *e
	c.kinds = append(append([]error(nil), e.kinds...), kind)
	return &c
}

// Text returns err's message without the prefix where err is a pkbf
// error, or wraps one without adding to its message (a type that only
// marks it, as a retry does), and the whole message otherwise (an
// *fs.PathError, say, which names its file and has no prefix).
func Text(err error) string {
	var e *Error
	if msg := err.Error(); errors.As(err, &e) && e.Error() == msg {
		return e.text
	}
	return err.Error()
}
