package keycheck

import (
	"bytes"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
)

// Input is one stream of keys for [Checker.Check] and [AddKeys]: a file,
// standard input, a request's body. It may hold keys in any form a
// [keys.Scanner] reads.
type Input struct {
	// Name is how verdicts name the input: a path, "<stdin>", "request".
	Name string
	// Open opens the input; it is called once, when the input's turn
	// comes, and what it returns is closed when the input is done. An
	// error is the input's verdict.
	Open func() (io.ReadCloser, error)
}

// Files returns the inputs of the files named, in order: "-" is standard
// input (named "<stdin>"), and a directory stands for every regular file
// under it, in lexical order, as grep -r reads one (links inside it are
// not followed; an unreadable subdirectory is an input whose Open fails).
func Files(names ...string) iter.Seq[Input] {
	return func(yield func(Input) bool) {
		for _, name := range names {
			if name == "-" {
				if !yield(Input{Name: "<stdin>", Open: func() (io.ReadCloser, error) { return io.NopCloser(os.Stdin), nil }}) {
					return
				}
				continue
			}
			if fi, err := os.Stat(name); err != nil || !fi.IsDir() {
				if !yield(fileInput(name)) {
					return
				}
				continue
			}
			stopped := false
			filepath.WalkDir(name, func(path string, d fs.DirEntry, err error) error {
				switch {
				case err != nil:
					stopped = !yield(Input{Name: path, Open: func() (io.ReadCloser, error) { return nil, err }})
				case d.Type().IsRegular():
					stopped = !yield(fileInput(path))
				}
				if stopped {
					return fs.SkipAll
				}
				return nil
			})
			if stopped {
				return
			}
		}
	}
}

func fileInput(path string) Input {
	return Input{Name: path, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
}

// Bytes returns one input, named name, holding b: a request's body, a
// certificate or a file already in memory. b must not change until the
// check is done.
func Bytes(name string, b []byte) iter.Seq[Input] {
	return func(yield func(Input) bool) {
		yield(Input{Name: name, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }})
	}
}
