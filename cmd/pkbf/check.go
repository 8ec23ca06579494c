package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"time"

	"golang.org/x/term"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/cli"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/pwnedkeys"
)

// confirmInFlight caps the API requests of check --confirm.
const confirmInFlight = 8

// defaultConfirmTimeout bounds all of check --confirm's API requests.
const defaultConfirmTimeout = 2 * time.Minute

// checkFlags are check's options.
type checkFlags struct {
	json, confirm, allowEmpty, strict, quiet, recursive, noFilter bool
	api, passphraseFile                                           string
	timeout                                                       time.Duration
	br                                                            brFlags
}

func (fl *checkFlags) command(stdout, stderr io.Writer) *command {
	c := newCommand("check", "check [--json] [--confirm [--api URL] [--timeout D]] [--br [--debian FILE]] [flags] FILTER [FILE...]\n       pkbf check --br --no-filter [flags] [FILE...]", stdout, stderr)
	c.BoolVar(&fl.json, "json", false, "print one JSON object per key: source, offset, fingerprint, probably (or error)")
	c.BoolVar(&fl.confirm, "confirm", false, "confirm every probably with the pwnedkeys API, verifying its proof")
	c.StringVar(&fl.api, "api", pwnedkeys.DefaultBaseURL, "the pwnedkeys API `URL` (http or https), for --confirm")
	c.DurationVar(&fl.timeout, "timeout", defaultConfirmTimeout, "with --confirm: give up on the API after `DURATION` in all (0: never); keys left are unconfirmed")
	c.StringVar(&fl.passphraseFile, "passphrase-file", "", "try each line of `FILE` as the passphrase of encrypted PKCS#12 files (also $"+passphraseEnv+")")
	c.BoolVar(&fl.allowEmpty, "allow-empty", false, "exit 0, not 2, when the input holds no key at all")
	c.BoolVar(&fl.strict, "strict", false, "accepted for scripts that give it: every object not checked exits 2 anyway")
	c.BoolVar(&fl.quiet, "quiet", false, "no summary on standard error; errors still")
	c.BoolVar(&fl.recursive, "recursive", false, "check every file under the directories given (as grep -r: links inside them are not followed)")
	fl.br.register(c)
	c.BoolVar(&fl.noFilter, "no-filter", false, "with --br: no FILTER argument, the weak-key checks alone")
	c.alias("j", "json")
	c.alias("c", "confirm")
	c.alias("q", "quiet")
	c.alias("r", "recursive")
	return c
}

func runCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := &checkFlags{}
	c := fl.command(stdout, stderr)
	if ok, code := parseCheck(c, fl, args); !ok {
		return code
	}
	weak, closeWeak, err := fl.br.checker(c)
	if err != nil {
		return c.fail(message(err))
	}
	defer closeWeak()
	names := c.Args()
	var f *pkbf.Filter
	if !fl.noFilter {
		names = names[1:]
		if (c.Arg(0) == "-" || c.Arg(0) == "/dev/stdin") && (len(names) == 0 || slices.Contains(names, "-")) {
			return c.fail("the filter is read from standard input: name the key files")
		}
		if f, err = openFilter(c.Arg(0), stdin); err != nil {
			errorf(stderr, "%s%s", message(err), filterHint("check", c.Arg(0), err, names))
			return exitTrouble
		}
		defer f.Close()
	}
	pws, err := passphrases(fl.passphraseFile)
	if err != nil {
		return trouble(stderr, err)
	}
	// A first Ctrl-C stops the check and prints the verdicts made; a
	// second quits at once, even while the input is blocked.
	ctx, release := cli.InterruptContext()
	defer release()
	stdinHint(names, stdin, stderr)
	scr := newScreen(stdout, stderr)
	p := &checkPrinter{fl: fl, scr: scr}
	prog := startProgress(scr, names)
	opts := keycheck.Options{Passphrases: pws, Idle: func() { scr.flush() }, Weak: weak}
	if fl.confirm {
		confirm, cancel := confirmer(ctx, fl)
		defer cancel()
		opts.Confirm = confirm
	}
	var q keycheck.Querier
	if f != nil {
		q = f
	}
	for v := range keycheck.New(q, opts).Check(ctx, inputs(names, stdin, fl.recursive, &prog.bytes)) {
		prog.keys.Add(1)
		if !p.emit(&v) {
			break
		}
	}
	prog.stop()
	if err := scr.flush(); err != nil {
		errorf(stderr, "writing output: %v", err)
		p.sum.Unreadable++
	}
	if ctx.Err() != nil {
		if !fl.quiet {
			fmt.Fprintf(stderr, "pkbf: interrupted: checked %s\n", &p.sum)
		}
		return exitSignaled
	}
	if f != nil && !p.filterFailed {
		if err := f.FileChanged(); err != nil {
			// Answers may have come from another file than the one opened.
			errorf(stderr, "%s", message(err))
			p.filterFailed = true
		}
	}
	return p.finish(stderr)
}

// confirmer is check --confirm's question to the pwnedkeys API about a key
// the filter probably holds: at most confirmInFlight requests at once, all
// within --timeout. Call cancel when done.
func confirmer(ctx context.Context, fl *checkFlags) (confirm func(context.Context, []byte) (bool, error), cancel func()) {
	cancel = func() {}
	if fl.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, fl.timeout)
	}
	checker := &pwnedkeys.Checker{Client: &pwnedkeys.Client{BaseURL: fl.api}, MaxInFlight: confirmInFlight}
	return func(_ context.Context, canonical []byte) (bool, error) {
		res, err := checker.Confirm(ctx, canonical)
		return res.Pwned, err
	}, cancel
}

// parseCheck parses check's arguments and checks the flags that go
// together.
func parseCheck(c *command, fl *checkFlags, args []string) (ok bool, code int) {
	if ok, code := c.parse(args, 0, -1); !ok {
		return false, code
	}
	set := map[string]bool{}
	c.Visit(func(f *flag.Flag) { set[c.longName(f.Name)] = true })
	switch {
	case fl.noFilter && !fl.br.on:
		return false, c.fail("--no-filter goes with --br: without a filter, the weak-key checks are all there is")
	case fl.noFilter && fl.confirm:
		return false, c.fail("--confirm asks the API about keys a filter holds: it needs a FILTER, not --no-filter")
	case !fl.noFilter && c.NArg() == 0:
		return false, c.fail("missing arguments")
	}
	if fl.confirm {
		if u, err := url.Parse(fl.api); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return false, c.fail(fmt.Sprintf("--api %q is not an http or https URL", fl.api))
		}
	} else if set["api"] || set["timeout"] {
		return false, c.fail("--api and --timeout go with --confirm")
	}
	return true, exitOK
}

// checkPrinter prints check's verdicts as the pipeline emits them, and
// counts them.
type checkPrinter struct {
	fl                  *checkFlags
	scr                 *screen
	sum                 keycheck.Tally
	found, filterFailed bool
	line                []byte
}

// emit prints one verdict, or the error that kept its key or input from
// being checked; it returns false to stop.
func (p *checkPrinter) emit(v *keycheck.Verdict) bool {
	fl := p.fl
	p.line = p.line[:0]
	switch {
	case errors.Is(v.Err, pkbf.ErrFileChanged):
		// The filter file changed under us: what was done stands, the
		// rest cannot be answered.
		p.filterFailed = true
		p.scr.errorf("%s", message(v.Err))
		return false
	case v.Err != nil:
		p.scr.errorf("%s%s", verdictError(v), passphraseHint(v.Err))
	case v.Confirmation.Err != nil:
		p.scr.errorf("%s: confirming %s: %s", v.Source, v.Key.Fingerprint, message(v.Confirmation.Err))
	}
	p.sum.Add(v)
	p.found = p.found || v.Refuse()
	if fl.json {
		p.line = v.AppendJSON(p.line)
	} else {
		p.line = v.AppendText(p.line, p.scr.perLine)
	}
	if len(p.line) > 0 {
		if err := p.scr.write(p.line); err != nil {
			return false // stdout is gone (a closed pipe): stop
		}
	}
	return true
}

// verdictError says what kept a verdict's key, or its input, from being
// checked, and where; an error opening or reading an input already names it.
func verdictError(v *keycheck.Verdict) string {
	if v.Source.Index == 0 {
		return message(v.Err)
	}
	return v.Source.String() + ": " + message(v.Err)
}

// checkExitTable is check's exit status for every mix of what it saw, in
// the order the rows are tried; --help and docs/command.md show it.
var checkExitTable = helpFile("check-exit")

// finish prints the summary and returns check's exit code: the first row
// of checkExitTable that applies.
func (p *checkPrinter) finish(stderr io.Writer) int {
	fl, sum := p.fl, &p.sum
	empty := sum.Keys == 0 && sum.NotChecked() == 0
	if !fl.quiet || empty {
		fmt.Fprintf(stderr, "pkbf: checked %s\n", sum)
	}
	switch {
	case p.found:
		return exitFound
	case p.filterFailed || sum.NotChecked() > 0 || sum.Unconfirmed > 0:
		return exitTrouble
	case empty && !fl.allowEmpty:
		errorf(stderr, "no key, certificate or request in the input (--allow-empty accepts that)")
		return exitTrouble
	}
	return exitOK
}

// passphraseHint is what check and add add to an error that a flag could
// mend: an encrypted key that a passphrase could open, a directory.
func passphraseHint(err error) string {
	switch {
	case errors.Is(err, keys.ErrNoPassphrase):
		return " (give the passphrase with --passphrase-file FILE or $" + passphraseEnv + ")"
	case errors.Is(err, errDirectory):
		return ": give -r to read every file in it"
	}
	return ""
}

// filterHint is what check and add (verb) add to an error opening the
// filter named name: that it is a key, that the arguments are in the
// wrong order.
func filterHint(verb, name string, err error, others []string) string {
	return derKeyHint(name, err) + filterFirstHint(verb, err, others)
}

// derKeyHint says that a file given as the filter is a DER key or
// certificate short enough for a one-byte length (Ed25519 and X25519
// keys, P-256 SPKIs and SEC 1 keys), which pkbf.Open's own hint, for DER
// with a longer length, does not name. Only what keys.SPKI reads as a
// key gets it; only a regular file is read.
func derKeyHint(name string, err error) string {
	if !errors.Is(err, pkbf.ErrInvalidFile) || name == "-" {
		return ""
	}
	// Only a regular file: opening a FIFO nobody writes would block.
	if fi, serr := os.Stat(name); serr != nil || !fi.Mode().IsRegular() {
		return ""
	}
	f, oerr := os.Open(name)
	if oerr != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 0x80+2))
	if len(b) < 2 || b[0] != 0x30 || b[1] >= 0x80 {
		return ""
	}
	if _, kerr := keys.SPKI(b); kerr != nil {
		return ""
	}
	return ": this looks like a DER key or certificate, not a filter"
}

// stdinHint says, when check or add reads keys from standard input and
// that is a terminal, what it waits for: without it, the command seems to
// hang.
func stdinHint(names []string, stdin io.Reader, stderr io.Writer) {
	if (len(names) == 0 || slices.Contains(names, "-")) && stdinTerminal(stdin) {
		fmt.Fprintln(stderr, "pkbf: reading keys from standard input (a terminal): paste them, then Ctrl-D; or name the files to read")
	}
}

// stdinTerminal reports whether r is a terminal; a variable so tests can
// pretend.
var stdinTerminal = func(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// filterFirstHint adds to an error opening the filter a hint that the
// arguments are in the wrong order, when one of the other arguments is
// a filter.
func filterFirstHint(verb string, err error, others []string) string {
	if !errors.Is(err, pkbf.ErrInvalidFile) {
		return ""
	}
	for _, name := range others {
		if name == "-" {
			continue
		}
		if f, err := pkbf.Open(name); err == nil {
			f.Close()
			return fmt.Sprintf(" (%s is a filter: the filter comes first, then the files to %s)", name, verb)
		}
	}
	return ""
}
