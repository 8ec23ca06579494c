package main

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
	"sync/atomic"

	"github.com/pkbf/pkbf/keycheck"
)

// passphraseEnv names the environment variable that may hold a passphrase
// for encrypted PKCS#12 files, beside --passphrase-file.
const passphraseEnv = "PKBF_PASSPHRASE"

// passphrases returns the passphrases to try on encrypted containers: each
// line of file (if not ""), then $PKBF_PASSPHRASE (if set). A passphrase on
// the command line would show in ps, so there is no flag for one.
func passphrases(file string) ([]string, error) {
	var out []string
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		for line := range strings.Lines(string(b)) {
			out = append(out, strings.TrimRight(line, "\r\n"))
		}
	}
	if v, ok := os.LookupEnv(passphraseEnv); ok {
		out = append(out, v)
	}
	return out, nil
}

// errDirectory is an input that is a directory, given without -r.
var errDirectory = errors.New("is a directory")

// inputs are the command's inputs: the FILE arguments in order (standard
// input when there are none, or for "-"), each counted into read as it is
// read, for the progress display. A directory is read file by file with
// -r (keycheck.Files), else it is an input that fails, naming -r.
func inputs(names []string, stdin io.Reader, recursive bool, read *atomic.Int64) iter.Seq[keycheck.Input] {
	if len(names) == 0 {
		names = []string{"-"}
	}
	counted := func(in keycheck.Input) keycheck.Input {
		open := in.Open
		in.Open = func() (io.ReadCloser, error) {
			rc, err := open()
			if err != nil {
				return nil, err
			}
			return &countingReader{ReadCloser: rc, n: read}, nil
		}
		return in
	}
	return func(yield func(keycheck.Input) bool) {
		for _, name := range names {
			var in iter.Seq[keycheck.Input] = keycheck.Files(name)
			switch fi, err := os.Stat(name); {
			case name == "-":
				in = single(keycheck.Input{Name: "<stdin>", Open: func() (io.ReadCloser, error) {
					if stdin == nil {
						return nil, errors.New("no standard input")
					}
					return io.NopCloser(stdin), nil
				}})
			case err == nil && fi.IsDir() && !recursive:
				in = single(keycheck.Input{Name: name, Open: func() (io.ReadCloser, error) {
					return nil, fmt.Errorf("%s %w", name, errDirectory)
				}})
			}
			for i := range in {
				if !yield(counted(i)) {
					return
				}
			}
		}
	}
}

func single(in keycheck.Input) iter.Seq[keycheck.Input] {
	return func(yield func(keycheck.Input) bool) { yield(in) }
}

// countingReader counts the bytes read, for the progress display.
type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}
