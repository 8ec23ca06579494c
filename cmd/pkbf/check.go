package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strconv"
	"strings"

	"github.com/pkbf/pkbf"
)

// Verdicts in check's text output.
const (
	verdictProbably = "probably"
	verdictNo       = "no"
)

func runCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := newCommand("check", "check [-json] FILTER [FILE...]", stdout, stderr)
	asJSON := c.Bool("json", false, "print one JSON object per key: source, fingerprint, probably (or error)")
	if ok, code := c.parse(args, 1, -1); !ok {
		return code
	}
	f, err := pkbf.Open(c.Arg(0))
	if err != nil {
		errorf(stderr, "%v", err)
		return exitTrouble
	}
	defer f.Close()

	out := bufio.NewWriterSize(stdout, 64<<10)
	defer out.Flush()
	inputs := inputsOf(c.Args()[1:], stdin)
	prog := startProgress(stderr, inputs)
	var found, troubled bool
	var line []byte
	pipeline(inputs, func(it *item) {
		it.spki, it.err = it.key.SPKI()
		if it.err == nil {
			it.probably = f.Probably(it.spki)
		}
	}, func(it *item) bool {
		line = line[:0]
		if it.err != nil {
			troubled = true
			prog.clear()
			errorf(stderr, "%s", it.errorMessage())
			if *asJSON {
				line = appendJSONError(line, it)
			}
		} else {
			found = found || it.probably
			if *asJSON {
				line = appendJSONVerdict(line, it)
			} else {
				line = appendTextVerdict(line, it)
			}
		}
		if len(line) > 0 {
			if _, err := out.Write(line); err != nil {
				return false // stdout is gone (a closed pipe): stop
			}
		}
		return true
	}, prog)
	prog.stop()
	if err := out.Flush(); err != nil {
		errorf(stderr, "writing output: %v", err)
		troubled = true
	}
	switch {
	case found:
		return exitFound
	case troubled:
		return exitTrouble
	}
	return exitOK
}

// displayErr drops the package prefix from library errors, which the
// command's own "pkbf: error:" already gives.
func displayErr(err error) string {
	return strings.TrimPrefix(err.Error(), "pkbf: ")
}

func fingerprint(spki []byte) [2 * sha256.Size]byte {
	var out [2 * sha256.Size]byte
	sum := sha256.Sum256(spki)
	hex.Encode(out[:], sum[:])
	return out
}

// appendTextVerdict appends "probably  FINGERPRINT  SOURCE\n" (or "no").
func appendTextVerdict(b []byte, it *item) []byte {
	v := verdictNo + "       "
	if it.probably {
		v = verdictProbably + " "
	}
	fp := fingerprint(it.spki)
	b = append(b, v...)
	b = append(b, ' ')
	b = append(b, fp[:]...)
	b = append(b, "  "...)
	b = append(b, it.source()...)
	return append(b, '\n')
}

func appendJSONSource(b []byte, it *item) []byte {
	b = append(b, `{"source":`...)
	b = appendJSONString(b, it.source())
	b = append(b, `,"file":`...)
	b = appendJSONString(b, it.input)
	if it.key.Line > 0 {
		b = append(b, `,"line":`...)
		b = strconv.AppendInt(b, int64(it.key.Line), 10)
	}
	if it.key.Index > 0 {
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(it.key.Index), 10)
	}
	return b
}

func appendJSONVerdict(b []byte, it *item) []byte {
	fp := fingerprint(it.spki)
	b = appendJSONSource(b, it)
	b = append(b, `,"fingerprint":"`...)
	b = append(b, fp[:]...)
	b = append(b, `","probably":`...)
	b = strconv.AppendBool(b, it.probably)
	return append(b, "}\n"...)
}

func appendJSONError(b []byte, it *item) []byte {
	b = appendJSONSource(b, it)
	b = append(b, `,"error":`...)
	b = appendJSONString(b, displayErr(it.err))
	return append(b, "}\n"...)
}
