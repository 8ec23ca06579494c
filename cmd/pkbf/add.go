package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/cli"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
)

// add: keys into a filter file, in place, under the reference's lock
// protocol.

type addFlags struct {
	passphraseFile string
	recursive      bool
	allowEmpty     bool
	fpRate         float64
}

func (fl *addFlags) command(stdout, stderr io.Writer) *command {
	c := newCommand("add", "add [--fp-rate P] [--passphrase-file FILE] [-r] [--allow-empty] FILTER [FILE...]", stdout, stderr)
	c.Float64Var(&fl.fpRate, "fp-rate", 0, "warn when the filter's estimated false-positive rate passes `P` (the rate it was created for)")
	c.StringVar(&fl.passphraseFile, "passphrase-file", "", "try each line of `FILE` as the passphrase of encrypted PKCS#12 files (also $"+passphraseEnv+")")
	c.BoolVar(&fl.recursive, "recursive", false, "add the keys of every file under the directories given (as grep -r: links inside them are not followed)")
	c.alias("r", "recursive")
	c.BoolVar(&fl.allowEmpty, "allow-empty", false, "exit 0, not 2, when the input holds no key at all")
	return c
}

func runAdd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var fl addFlags
	c := fl.command(stdout, stderr)
	if ok, code := c.parse(args, 1, -1); !ok {
		return code
	}
	if !(fl.fpRate >= 0 && fl.fpRate < 1) { // NaN too
		return c.fail(fmt.Sprintf("--fp-rate %v: must be between 0 and 1", fl.fpRate))
	}
	pws, err := passphrases(fl.passphraseFile)
	if err != nil {
		return trouble(stderr, err)
	}
	path, names := c.Arg(0), c.Args()[1:]
	f, err := pkbf.Edit(path)
	if err != nil {
		errorf(stderr, "%s%s", message(err), filterHint("add", path, err, names))
		return exitTrouble
	}
	// A first Ctrl-C stops after the key in progress; a second quits at
	// once, which is safe too: each add sets the key's bits before the
	// header, and the mapped file keeps every write made.
	ctx, release := cli.InterruptContext()
	defer release()
	stdinHint(names, stdin, stderr)
	scr := newScreen(stdout, stderr)
	prog := startProgress(scr, names)
	var keysRead, added int
	troubled := false
	for v, n := range keycheck.AddKeys(ctx, f, inputs(names, stdin, fl.recursive, &prog.bytes), keycheck.Options{Passphrases: pws}) {
		prog.keys.Add(1)
		switch {
		case v.Err == nil:
			keysRead++
			added += n
		case v.Source.Index == 0 || errors.Is(v.Err, keys.ErrInvalidKey): // an input or a key that could not be read
			troubled = true
			scr.errorf("%s%s", verdictError(&v), passphraseHint(v.Err))
		}
		// Any other error is the filter's; it ended AddKeys, and Close
		// reports it.
	}
	prog.stop()
	if err := f.Close(); err != nil {
		errorf(stderr, "%s", message(err))
		fmt.Fprintf(stderr, "pkbf: %d keys read before the error; see above for what became of them\n", keysRead)
		return exitTrouble
	}
	h := f.Header()
	fmt.Fprintf(stdout, "%s: %s from %s; %s, revision %d\n", path, plural(added, "new entry", "new entries"), plural(keysRead, "key", "keys"), plural(int(h.EntryCount), "entry", "entries"), h.Revision)
	if r := h.FalsePositiveRate(); fl.fpRate > 0 && r > fl.fpRate {
		fmt.Fprintf(stderr, "pkbf: warning: %s: %s give an estimated false-positive rate of %.3g, past %v: create a larger filter (an EC key is two entries)\n", path, plural(int(h.EntryCount), "entry", "entries"), r, fl.fpRate)
	}
	switch {
	case ctx.Err() != nil:
		errorf(stderr, "interrupted: the keys before stayed added, the rest were not")
		return exitSignaled
	case troubled:
		return exitTrouble
	case keysRead == 0 && !fl.allowEmpty:
		// As check: an empty input is more often a mistake (the wrong
		// file, a pipe that failed upstream) than a list with no keys.
		errorf(stderr, "no key, certificate or request in the input (--allow-empty accepts that)")
		return exitTrouble
	}
	return exitOK
}
