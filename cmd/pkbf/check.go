package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keys"
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
func guardFilter(work func(*batch)) func(*batch) {
	return func(b *batch) {
		defer func() {
			if err := fileChanged(recover()); err != nil {
				for i := range b.items {
					b.items[i].filterErr = err
				}
			}
		}()
		work(b)
	}
}

// fileChanged returns the error of a recovered panic that reports a
// filter file cut short while in use (pkbf.ErrFileChanged), or nil if
// there was no panic. Any other panic goes on.
func fileChanged(r any) error {
	if r == nil {
		return nil
	}
	if err, ok := r.(error); ok && errors.Is(err, pkbf.ErrFileChanged) {
		return err
	}
	panic(r)
}

// lookupItems decodes the keys of the items read without error, parsing
// each once for all its encodings (decode), and looks all of those up
// together with probablyBatch (a filter's ProbablyBatch): on a filter
// larger than the caches, their memory latencies overlap. A key is
// probably in the filter if any of its encodings is, as Contains says.
// Then it computes each key's fingerprints, here in the workers rather
// than where the output is written. The keys' other encodings are built
// in room when it holds formsRoom bytes an item (a batch's, reused), else
// in a new buffer: they must last as long as the items. With a ctx that
// can be done, it stops with ctx's error between two keys, or two lookups
// of lookupChunk encodings (an EC key on an explicit curve costs a square
// root to decode).
func lookupItems(ctx context.Context, items []item, room []byte, probablyBatch func(spkis [][]byte, out []bool)) error {
	if len(room) < formsRoom*len(items) {
		room = make([]byte, formsRoom*len(items))
	}
	sc := lookupScratchPool.Get().(*lookupScratch)
	defer sc.put()
	encodings, owners := sc.encodings[:0], sc.owners[:0]
	for i := range items {
		if err := ctx.Err(); err != nil {
			return err
		}
		it := &items[i]
		if it.err != nil || !it.decode(room[i*formsRoom:i*formsRoom:(i+1)*formsRoom]) {
			continue
		}
		encodings, owners = append(encodings, it.spki), append(owners, i)
		if !sameBytes(it.canonical, it.spki) {
			encodings, owners = append(encodings, it.canonical), append(owners, i)
		}
		if it.other != nil {
			encodings, owners = append(encodings, it.other), append(owners, i)
		}
	}
	sc.encodings, sc.owners = encodings, owners
	found := append(sc.found[:0], make([]bool, len(encodings))...)
	sc.found = found
	chunk := len(encodings)
	if ctx.Done() != nil {
		chunk = lookupChunk
	}
	for i := 0; i < len(encodings); i += chunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(i+chunk, len(encodings))
		probablyBatch(encodings[i:end], found[i:end])
	}
	for j, i := range owners {
		items[i].probably = items[i].probably || found[j]
	}
	for i := range items {
		if it := &items[i]; it.err == nil {
			fp, other, label := it.fingerprints()
			it.fp = fingerprintSet{fp: fp, other: other, label: label, set: true}
		}
	}
	return nil
}

// lookupScratch is what lookupItems needs only while it runs, kept from
// one batch to the next.
type lookupScratch struct {
	encodings [][]byte
	owners    []int
	found     []bool
}

var lookupScratchPool = sync.Pool{New: func() any { return new(lookupScratch) }}

// put returns sc to the pool, dropping its references to the keys.
func (sc *lookupScratch) put() {
	clear(sc.encodings)
	lookupScratchPool.Put(sc)
}

// A fingerprintSet is what item.fingerprints returns, computed once.
type fingerprintSet struct {
	fp, other [2 * sha256.Size]byte
	label     string
	set       bool
}

// formsRoom is the room decode has for a key's other encodings: an EC
// point's other form on the largest named curves (a P-521 uncompressed
// SPKI is 158 bytes). keys.Forms allocates what does not fit.
const formsRoom = 160

// sameBytes reports whether a and b are the same bytes in memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// lookupChunk is how many encodings lookupItems looks up between two looks at
// a context that can be done.
const lookupChunk = 64

// checkFlags are check's options.
type checkFlags struct {
	json, confirm, allowEmpty, strict, quiet, recursive *bool
	api, passphraseFile                                 *string
	timeout                                             *time.Duration
}

func checkCommand(stdout, stderr io.Writer) (*command, *checkFlags) {
	c := newCommand("check", "check [--json] [--confirm [--api URL] [--timeout D]] [flags] FILTER [FILE...]", stdout, stderr)
	fl := &checkFlags{
		json:           c.Bool("json", false, "print one JSON object per key: source, offset, fingerprint, probably (or error)"),
		confirm:        c.Bool("confirm", false, "confirm every probably with the pwnedkeys API, verifying its proof"),
		api:            c.String("api", pwnedkeys.DefaultBaseURL, "the pwnedkeys API `URL` (http or https), for --confirm"),
		timeout:        c.Duration("timeout", defaultConfirmTimeout, "with --confirm: give up on the API after `DURATION` in all (0: never); keys left are unconfirmed"),
		passphraseFile: c.String("passphrase-file", "", "try each line of `FILE` as the passphrase of encrypted PKCS#12 files (also $"+passphraseEnv+")"),
		allowEmpty:     c.Bool("allow-empty", false, "exit 0, not 2, when the input holds no key at all"),
		strict:         c.Bool("strict", false, "accepted for scripts that give it: every object not checked exits 2 anyway"),
		quiet:          c.Bool("quiet", false, "no summary on standard error; errors still"),
		recursive:      c.Bool("recursive", false, "check every file under the directories given (as grep -r: links inside them are not followed)"),
	}
	c.alias("j", "json")
	c.alias("c", "confirm")
	c.alias("q", "quiet")
	c.alias("r", "recursive")
	return c, fl
}

func runCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, fl := checkCommand(stdout, stderr)
	if ok, code := parseCheck(c, fl, args); !ok {
		return code
	}
	f, err := openFilter(c.Arg(0), stdin)
	if err != nil {
		errorf(stderr, "%s%s", message(err), filterFirstHint(err, c.Args()[1:]))
		return exitTrouble
	}
	defer f.Close()
	pws, err := passphrases(*fl.passphraseFile)
	if err != nil {
		errorf(stderr, "%s", message(err))
		return exitTrouble
	}
	inputs := inputsOf(c.Args()[1:], stdin, pws, *fl.recursive)
	if c.Arg(0) == "-" || c.Arg(0) == "/dev/stdin" {
		for _, in := range inputs {
			if in.name == "-" {
				_, code := c.fail("the filter is read from standard input: name the key files")
				return code
			}
		}
	}
	work, workers, cancel := checkWork(f, fl)
	defer cancel()
	interrupt := stopOnInterrupt()
	defer interrupt.release()
	scr := newScreen(stdout, stderr)
	p := &checkPrinter{fl: fl, scr: scr, hint: passphraseHint}
	prog := startProgress(scr, inputs)
	pipeline(pipelineOptions{inputs: inputs, workers: workers, work: work, emit: p.emit, idle: func() { scr.flush() }, stop: interrupt.stop, progress: prog})
	prog.stop()
	if err := scr.flush(); err != nil {
		errorf(stderr, "writing output: %v", err)
		p.sum.unreadable++
	}
	if interrupt.stopping.Load() {
		if !*fl.quiet {
			p.sum.print(stderr, "interrupted: ")
		}
		return exitSignaled
	}
	if err := f.FileChanged(); err != nil && !p.filterFailed {
		// Answers may have come from another file than the one opened.
		errorf(stderr, "%s", message(err))
		p.filterFailed = true
	}
	return p.finish(stderr)
}

// parseCheck parses check's arguments and checks the flags that go
// together.
func parseCheck(c *command, fl *checkFlags, args []string) (ok bool, code int) {
	if ok, code := c.parse(args, 1, -1); !ok {
		return false, code
	}
	set := map[string]bool{}
	c.Visit(func(f *flag.Flag) { set[c.longName(f.Name)] = true })
	if *fl.confirm {
		if u, err := url.Parse(*fl.api); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return c.fail(fmt.Sprintf("--api %q is not an http or https URL", *fl.api))
		}
	} else if set["api"] || set["timeout"] {
		return c.fail("--api and --timeout go with --confirm")
	}
	return true, exitOK
}

// checkWork is what check does with each batch of keys, in how many
// goroutines: look them up in f together, or with --confirm, one by one
// through the pwnedkeys API. Call cancel when done.
func checkWork(f *pkbf.Filter, fl *checkFlags) (work func(*batch), workers int, cancel func()) {
	lookup := func(b *batch) { lookupItems(context.Background(), b.items, b.room, f.ProbablyBatch) }
	work, workers, cancel = lookup, runtime.GOMAXPROCS(0), func() {}
	if *fl.confirm {
		ctx := context.Background()
		if *fl.timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, *fl.timeout)
		}
		checker := &pwnedkeys.Checker{Filter: f, Client: &pwnedkeys.Client{BaseURL: *fl.api}, MaxInFlight: confirmInFlight}
		work = func(b *batch) {
			// Each key parsed once, looked up with the batch, and only the
			// probable ones sent to the API.
			lookup(b)
			for i := range b.items {
				if it := &b.items[i]; it.err == nil && it.probably {
					var res pwnedkeys.Result
					res, it.confirmErr = checker.Confirm(ctx, it.canonical)
					it.pwned = res.Pwned
				}
			}
		}
		workers = max(workers, confirmInFlight) // waiting on the network
	}
	return guardFilter(work), workers, cancel
}

// checkPrinter prints check's verdicts as the pipeline emits them, and
// counts them.
type checkPrinter struct {
	fl                  *checkFlags
	scr                 *screen
	sum                 summary
	found, filterFailed bool
	line                []byte
	hint                func(error) string // what to add to an item's error
}

// emit prints one item's verdict or error; it returns false to stop.
func (p *checkPrinter) emit(it *item) bool {
	fl := p.fl
	p.line = p.line[:0]
	if it.filterErr != nil {
		// The filter file changed under us: what was done stands, the
		// rest cannot be answered.
		p.filterFailed = true
		p.scr.errorf("%s", message(it.filterErr))
		return false
	}
	switch {
	case it.err != nil:
		p.sum.addError(it.err)
		p.scr.errorf("%s%s", it.errorMessage(), p.hint(it.err))
		if *fl.json {
			p.line = appendJSONError(p.line, it, p.hint(it.err))
		}
	default:
		p.sum.keys++
		if it.confirmErr != nil {
			p.sum.unconfirmed++
			fp, _, _ := it.fingerprints()
			p.scr.errorf("%s: confirming %s: %s", it.source(), fp[:], message(it.confirmErr))
		}
		if it.probably {
			p.sum.probably++
		}
		if *fl.confirm {
			p.found = p.found || it.pwned
		} else {
			p.found = p.found || it.probably
		}
		if *fl.json {
			p.line = appendJSONVerdict(p.line, it, *fl.confirm)
		} else {
			p.line = appendTextVerdict(p.line, it, *fl.confirm, p.scr.perLine)
		}
	}
	if len(p.line) > 0 {
		if err := p.scr.write(p.line); err != nil {
			return false // stdout is gone (a closed pipe): stop
		}
	}
	return true
}

// checkExitTable is check's exit status for every mix of what it saw, in
// the order the rows are tried; --help and the README show it.
const checkExitTable = `  1    a key is probably compromised (--confirm: a verified one), whatever
       else happened: a hit is never hidden behind an error
  2    no hit, but something was not checked: an input or object that could
       not be read, an unsupported or encrypted key, an unconfirmed answer,
       a filter that failed while in use; or no key at all in the input
       (unless --allow-empty); or bad usage
  0    every object was checked and no key is probably compromised
  130  interrupted (Ctrl-C), after printing the verdicts made`

// finish prints the summary and returns check's exit code: the first row
// of checkExitTable that applies.
func (p *checkPrinter) finish(stderr io.Writer) int {
	fl, sum := p.fl, &p.sum
	empty := sum.keys == 0 && sum.errors() == 0
	if !*fl.quiet || empty {
		sum.print(stderr, "")
	}
	switch {
	case p.found:
		return exitFound
	case p.filterFailed || sum.errors() > 0 || sum.unconfirmed > 0:
		return exitTrouble
	case empty && !*fl.allowEmpty:
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

// filterFirstHint adds to an error opening the filter a hint that the
// arguments are in the wrong order, when one of the other arguments is
// a filter.
func filterFirstHint(err error, others []string) string {
	if !errors.Is(err, pkbf.ErrInvalidFile) {
		return ""
	}
	for _, name := range others {
		if name == "-" {
			continue
		}
		if f, err := pkbf.Open(name); err == nil {
			f.Close()
			return fmt.Sprintf(" (%s is a filter: the filter comes first, then the files to check)", name)
		}
	}
	return ""
}

// summary counts what check saw, for the line it prints at the end.
type summary struct {
	keys, probably, unconfirmed        int
	unreadable, unsupported, encrypted int
}

func (s *summary) errors() int { return s.unreadable + s.unsupported + s.encrypted }

// addError counts an item's error by kind and returns the kind.
func (s *summary) addError(err error) string {
	switch {
	case errors.Is(err, keys.ErrUnsupportedKey):
		s.unsupported++
		return "unsupported"
	case errors.Is(err, keys.ErrEncryptedKey):
		s.encrypted++
		return "encrypted"
	}
	s.unreadable++
	return "unreadable"
}

// print writes "pkbf: checked 12 keys: 1 probably, 11 no; 2 errors: ..."
func (s *summary) print(w io.Writer, prefix string) {
	msg := fmt.Sprintf("pkbf: %schecked %s: %d probably, %d no", prefix, plural(s.keys, "key", "keys"), s.probably, s.keys-s.probably)
	if s.unconfirmed > 0 {
		msg += fmt.Sprintf(" (%d unconfirmed)", s.unconfirmed)
	}
	if n := s.errors(); n > 0 {
		var kinds []string
		for _, k := range []struct {
			n    int
			what string
		}{{s.unreadable, "unreadable"}, {s.unsupported, "unsupported"}, {s.encrypted, "encrypted"}} {
			if k.n > 0 {
				kinds = append(kinds, fmt.Sprintf("%d %s", k.n, k.what))
			}
		}
		msg += fmt.Sprintf("; %s not checked: %s", plural(n, "object", "objects"), strings.Join(kinds, ", "))
	}
	fmt.Fprintln(w, msg)
}

// decode reads the item's key and, in the same parse, the other encodings
// a filter may hold it under (Key.Forms, building them in dst's spare
// capacity), and reports whether that worked.
func (it *item) decode(dst []byte) bool {
	it.spki, it.canonical, it.other, it.err = it.key.Forms(dst)
	if it.spki == nil {
		return false
	}
	if it.err != nil {
		it.canonical, it.other, it.err = it.spki, nil, nil // looked up as given only
	}
	it.sshFP, it.comment = it.key.SSHFingerprint()
	return true
}
