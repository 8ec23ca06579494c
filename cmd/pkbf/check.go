package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/pwnedkeys"
)

// Verdicts in check's text output.
const (
	verdictProbably      = "probably"
	verdictNo            = "no"
	verdictCompromised   = "compromised"    // -confirm: a verified attestation
	verdictFalsePositive = "false-positive" // -confirm: the API does not know it
	verdictUnconfirmed   = "unconfirmed"    // -confirm: the API did not answer well
)

// confirmInFlight caps the API requests of check -confirm.
const confirmInFlight = 8

// defaultConfirmTimeout bounds all of check -confirm's API requests.
const defaultConfirmTimeout = 2 * time.Minute

// guardFilter makes work report, in the filterErr of every item of the
// batch, that the filter file was cut short while it queried it
// (pkbf.ErrFileChanged), instead of ending the program.
func guardFilter(work func([]item)) func([]item) {
	return func(items []item) {
		defer func() {
			if r := recover(); r != nil {
				err, ok := r.(error)
				if !ok || !errors.Is(err, pkbf.ErrFileChanged) {
					panic(r)
				}
				for i := range items {
					items[i].filterErr = err
				}
			}
		}()
		work(items)
	}
}

func runCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := newCommand("check", "check [-json] [-confirm [-api URL] [-timeout D]] FILTER [FILE...]", stdout, stderr)
	asJSON := c.Bool("json", false, "print one JSON object per key: source, fingerprint, probably (or error)")
	confirm := c.Bool("confirm", false, "confirm every probably with the pwnedkeys API, verifying its proof")
	api := c.String("api", pwnedkeys.DefaultBaseURL, "the pwnedkeys API `URL`, for -confirm")
	passphraseFile := c.String("passphrase-file", "", "try each line of `FILE` as the passphrase of encrypted PKCS#12 files (also $"+passphraseEnv+")")
	timeout := c.Duration("timeout", defaultConfirmTimeout, "with -confirm: give up on the API after `DURATION` in all (0: never); keys left are unconfirmed")
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
	pws, err := passphrases(*passphraseFile)
	if err != nil {
		errorf(stderr, "%v", err)
		return exitTrouble
	}
	inputs := inputsOf(c.Args()[1:], stdin, pws)
	prog := startProgress(stderr, inputs)
	// A batch's keys are looked up together: on a filter larger than the
	// caches, their memory latencies overlap (pkbf.Filter.ContainsBatch).
	work, workers := func(items []item) {
		spkis := make([][]byte, 0, len(items))
		for i := range items {
			if items[i].err == nil && items[i].decode() {
				spkis = append(spkis, items[i].spki)
			}
		}
		found := make([]bool, len(spkis))
		f.ContainsBatch(spkis, found)
		j := 0
		for i := range items {
			if items[i].err == nil {
				items[i].probably, j = found[j], j+1
			}
		}
	}, runtime.GOMAXPROCS(0)
	if *confirm {
		ctx := context.Background()
		if *timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *timeout)
			defer cancel()
		}
		checker := &pwnedkeys.Checker{Filter: f, Client: &pwnedkeys.Client{BaseURL: *api}, MaxInFlight: confirmInFlight}
		work = eachItem(func(it *item) {
			if it.decode() {
				var res pwnedkeys.Result
				it.probably, res, it.confirmErr = checker.Check(ctx, it.spki)
				it.pwned = res.Pwned
			}
		})
		workers = max(workers, confirmInFlight) // waiting on the network
	}
	work = guardFilter(work)
	var found, troubled, filterFailed bool
	var line []byte
	pipeline(inputs, workers, work, func(it *item) bool {
		line = line[:0]
		if it.filterErr != nil {
			// The filter file changed under us: what was done stands, the
			// rest cannot be answered.
			troubled, filterFailed = true, true
			prog.clear()
			errorf(stderr, "%s", displayErr(it.filterErr))
			return false
		}
		switch {
		case it.err != nil:
			troubled = true
			prog.clear()
			errorf(stderr, "%s", it.errorMessage())
			if *asJSON {
				line = appendJSONError(line, it)
			}
		default:
			if it.confirmErr != nil {
				troubled = true
				prog.clear()
				fp := fingerprint(it.canonical)
				errorf(stderr, "%s: confirming %s: %s", it.source(), fp[:], displayErr(it.confirmErr))
			}
			if *confirm {
				found = found || it.pwned
			} else {
				found = found || it.probably
			}
			if *asJSON {
				line = appendJSONVerdict(line, it, *confirm)
			} else {
				line = appendTextVerdict(line, it, *confirm)
			}
		}
		if len(line) > 0 {
			if _, err := out.Write(line); err != nil {
				return false // stdout is gone (a closed pipe): stop
			}
		}
		return true
	}, func() { out.Flush() }, prog)
	prog.stop()
	if err := out.Flush(); err != nil {
		errorf(stderr, "writing output: %v", err)
		troubled = true
	}
	if err := f.Check(); err != nil && !filterFailed {
		// Answers may have come from another file than the one opened.
		errorf(stderr, "%s", displayErr(err))
		troubled, filterFailed = true, true
	}
	switch {
	case filterFailed: // the answers are incomplete or from another file
		return exitTrouble
	case found:
		return exitFound
	case troubled:
		return exitTrouble
	}
	return exitOK
}

// verdict is the word for an item in check's output.
func (it *item) verdict(confirm bool) string {
	switch {
	case !it.probably:
		return verdictNo
	case !confirm:
		return verdictProbably
	case it.confirmErr != nil:
		return verdictUnconfirmed
	case it.pwned:
		return verdictCompromised
	}
	return verdictFalsePositive
}

// displayErr drops the package prefix from library errors, which the
// command's own "pkbf: error:" already gives.
func displayErr(err error) string {
	return strings.TrimPrefix(err.Error(), "pkbf: ")
}

// decode reads the item's key and its canonical encoding, and reports
// whether that worked.
func (it *item) decode() bool {
	it.spki, it.err = it.key.SPKI()
	if it.err != nil {
		return false
	}
	var err error
	if it.canonical, err = pkbf.Canonical(it.spki); err != nil {
		it.canonical = it.spki // looked up as given only
	}
	return true
}

func fingerprint(spki []byte) [2 * sha256.Size]byte {
	var out [2 * sha256.Size]byte
	sum := sha256.Sum256(spki)
	hex.Encode(out[:], sum[:])
	return out
}

// appendTextVerdict appends "VERDICT  FINGERPRINT  SOURCE\n", the verdict
// padded to the widest one in use.
func appendTextVerdict(b []byte, it *item, confirm bool) []byte {
	v, width := it.verdict(confirm), len(verdictProbably)
	if confirm {
		width = len(verdictFalsePositive)
	}
	fp := fingerprint(it.canonical)
	b = append(b, v...)
	for range width - len(v) + 2 {
		b = append(b, ' ')
	}
	b = append(b, fp[:]...)
	b = append(b, "  "...)
	b = it.appendSource(b)
	if given, ok := it.givenFingerprint(); ok {
		b = append(b, "  (as given: "...)
		b = append(b, given[:]...)
		b = append(b, ')')
	}
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

// givenFingerprint is the fingerprint of the key as the input has it, when
// that is not the canonical encoding.
func (it *item) givenFingerprint() ([2 * sha256.Size]byte, bool) {
	if len(it.spki) == len(it.canonical) && &it.spki[0] == &it.canonical[0] {
		return [2 * sha256.Size]byte{}, false
	}
	return fingerprint(it.spki), true
}

func appendJSONVerdict(b []byte, it *item, confirm bool) []byte {
	fp := fingerprint(it.canonical)
	b = appendJSONSource(b, it)
	b = append(b, `,"fingerprint":"`...)
	b = append(b, fp[:]...)
	if given, ok := it.givenFingerprint(); ok {
		b = append(b, `","fingerprint_as_given":"`...)
		b = append(b, given[:]...)
	}
	b = append(b, `","probably":`...)
	b = strconv.AppendBool(b, it.probably)
	if confirm {
		b = append(b, `,"verdict":"`...)
		b = append(b, it.verdict(true)...)
		b = append(b, '"')
		if it.confirmErr != nil {
			b = append(b, `,"error":`...)
			b = appendJSONString(b, displayErr(it.confirmErr))
		}
	}
	return append(b, "}\n"...)
}

func appendJSONError(b []byte, it *item) []byte {
	b = appendJSONSource(b, it)
	b = append(b, `,"error":`...)
	b = appendJSONString(b, displayErr(it.err))
	return append(b, "}\n"...)
}
