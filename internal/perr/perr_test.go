package perr

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"testing"
)

// The prefix appears once however errors wrap one another, errors.Is
// sees through every layer, and Text gives the message without it.
func TestOnePrefix(t *testing.T) {
	sentinel := New("invalid filter file")
	inner := Errorf("%w: data is %d bytes: %w", sentinel, 5, io.ErrUnexpectedEOF)
	path := Errorf("%s: %w", "f.pkbf", inner)
	outer := Errorf("update from %s: %w", "http://x/f", path)
	kinded := Kind(fs.ErrInvalid, outer)
	marked := &marker{kinded} // a type that only marks an error, as a retry does
	for _, c := range []struct {
		err       error
		msg, text string
		is        []error
	}{
		{sentinel, "pkbf: invalid filter file", "invalid filter file", []error{sentinel}},
		{inner, "pkbf: invalid filter file: data is 5 bytes: unexpected EOF", "invalid filter file: data is 5 bytes: unexpected EOF", []error{sentinel, io.ErrUnexpectedEOF}},
		{outer, "pkbf: update from http://x/f: f.pkbf: invalid filter file: data is 5 bytes: unexpected EOF", "update from http://x/f: f.pkbf: invalid filter file: data is 5 bytes: unexpected EOF", []error{sentinel, io.ErrUnexpectedEOF}},
		{kinded, outer.Error(), Text(outer), []error{sentinel, io.ErrUnexpectedEOF, fs.ErrInvalid}},
		{marked, outer.Error(), Text(outer), []error{sentinel, fs.ErrInvalid}},
		{&fs.PathError{Op: "open", Path: "f", Err: fs.ErrNotExist}, "open f: file does not exist", "open f: file does not exist", []error{fs.ErrNotExist}},
		{fmt.Errorf("context: %w", inner), "context: pkbf: invalid filter file: data is 5 bytes: unexpected EOF", "context: pkbf: invalid filter file: data is 5 bytes: unexpected EOF", []error{sentinel}},
	} {
		if got := c.err.Error(); got != c.msg {
			t.Errorf("Error() = %q, want %q", got, c.msg)
		}
		if got := Text(c.err); got != c.text {
			t.Errorf("Text = %q, want %q", got, c.text)
		}
		for _, target := range c.is {
			if !errors.Is(c.err, target) {
				t.Errorf("%q is not %v", c.err, target)
			}
		}
	}
	if errors.Is(inner, fs.ErrInvalid) {
		t.Error("Kind changed the error it was given")
	}
}

type marker struct{ err error }

func (m *marker) Error() string { return m.err.Error() }
func (m *marker) Unwrap() error { return m.err }
