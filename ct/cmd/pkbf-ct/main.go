// Command pkbf-ct checks the key of every certificate and precertificate
// in a Certificate Transparency log against a pkbf filter, resumably.
//
// Usage:
//
//	pkbf-ct [flags] FILTER LOG
//
// LOG is a Static CT log's monitoring prefix or an RFC 6962 log's URL.
// Run pkbf-ct -h for the flags.
package main

import (
	"bufio"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/ct"
	"github.com/pkbf/pkbf/keycheck"
)

// Exit status: what the scan came to, then whether it found a hit. Only
// a complete scan tells hits from none; a failed or interrupted one
// exits as such whatever it printed.
const (
	exitOK       = 0   // complete, no hit
	exitFound    = 1   // complete, hits
	exitTrouble  = 2   // failed (or the arguments are wrong), hits or none
	exitSignaled = 130 // interrupted, hits or none
)

const usage = `Usage: pkbf-ct [flags] FILTER LOG

Check the subject public key of every certificate and precertificate in a
Certificate Transparency log against FILTER, from where the last run
stopped (its state file) to the log's current size. LOG is a Static CT
log's monitoring prefix (https://..., or file:// / gzip+file:// for a
local copy) or an RFC 6962 log's URL (https://ct.example/2026/). Each
probable hit is printed: probably, the key's fingerprint, the log and
entry, the entry's timestamp, the certificate's serial, subject and
issuer, separated by tabs (--json: one object a line, pkbf check
--json's with the entry's fields). FILTER may be - for standard input.

Tiles (Static CT) are checked against the checkpoint's root hash as they
are read, and RFC 6962 entries against the signed tree head's root when
the scan reaches its size (by a consistency proof where it stops short);
with --key, the checkpoint's or tree head's signature is verified too.
A hit is printed once its entry is proved so (RFC 6962: at the end of its
batch of 256); one in entries not proved is held back, counted in the
summary, and found again by the next run.
Each run proves the log's tree extends the one the last run read (the
state keeps its root), and an entry whose key could not be read stays
in the state, failing each run, until one checks it or
--acknowledge-unchecked drops it.

Ctrl-C (or SIGTERM) saves the position and exits 130; the next run goes
on from there (a second Ctrl-C quits at once). With --output FILE, hits
are appended to FILE and the state records how much of it they fill, so
that a run killed at any moment and resumed reports every hit exactly
once.

Each response is held to --max-response bytes and --response-timeout
(from its headers to its last byte); one past either fails the scan.

Exit status (hits printed stay printed, and the state keeps what was done):

                 no hit   hits
    complete        0       1    every entry up to the tree head's size (or --to) read and checked
    failed          2       2    an error, or an entry whose key could not be read
                                 (in this run or an earlier one: see --acknowledge-unchecked)
    interrupted   130     130    Ctrl-C or SIGTERM

Flags (one dash or two; anywhere among the arguments; -- ends them):
`

type flags struct {
	kind, key, state, output, userAgent string
	from, to                            int64
	json, quiet, acknowledge            bool
	parallel, batch                     int
	rate                                float64
	saveEvery, responseTimeout          time.Duration
	maxResponse                         int64
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// The command line, as pkbf's: flags are the fields of one struct, each
// declared once with the flag package's XxxVar; they go anywhere among
// the arguments, with one dash or two, and "--" ends them (parseArgs).
// An interrupt (Ctrl-C) or SIGTERM cancels the context the work runs
// under (interruptContext); whatever then stops the work, the command
// says what was kept and exits 130.

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pkbf-ct", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var fl flags
	fs.StringVar(&fl.kind, "kind", "auto", "the log's `API`: static, rfc6962, or auto (asked of the log: a checkpoint at LOG means static)")
	fs.StringVar(&fl.key, "key", "", "the log's public `KEY`: a PEM file, or the base64 DER that log lists give; verifies the tree head's signature")
	fs.StringVar(&fl.state, "state", "", "the scan's state `FILE` (default pkbf-ct.HOST_PATH.json in the current directory)")
	fs.StringVar(&fl.output, "output", "", "append hits to `FILE` (exactly once across interrupted runs) instead of standard output")
	fs.Int64Var(&fl.from, "from", 0, "the entry a scan without state starts at")
	fs.Int64Var(&fl.to, "to", 0, "stop before this entry (0: the tree head's size)")
	fs.BoolVar(&fl.json, "json", false, "one JSON object a hit")
	fs.BoolVar(&fl.quiet, "quiet", false, "no progress line, no summary")
	fs.BoolVar(&fl.acknowledge, "acknowledge-unchecked", false, "drop the entries the state lists as not checked (once you have dealt with them): later runs no longer fail on them")
	fs.IntVar(&fl.parallel, "parallel", 8, "fetches in flight at most")
	fs.IntVar(&fl.batch, "batch", 256, "entries asked for in one get-entries (RFC 6962)")
	fs.Float64Var(&fl.rate, "rate", 0, "at most `N` requests a second to the log (0: no limit)")
	fs.DurationVar(&fl.saveEvery, "save-every", 10*time.Second, "save the position this often")
	fs.Int64Var(&fl.maxResponse, "max-response", 16<<20, "the most `BYTES` of one response body")
	fs.DurationVar(&fl.responseTimeout, "response-timeout", 2*time.Minute, "the longest one response body may take, from its headers")
	fs.StringVar(&fl.userAgent, "user-agent", ct.DefaultUserAgent, "the User-Agent, with a contact (an email address or a +https:// URL), as logs ask")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	positional, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitTrouble
	}
	if len(positional) != 2 {
		fmt.Fprintf(stderr, "pkbf-ct: error: want FILTER and LOG\n%s", strings.SplitN(usage, "\n", 2)[0]+"\n")
		return exitTrouble
	}
	filterPath, logURL := positional[0], positional[1]

	ctx, stop := interruptContext()
	defer stop()
	fail := func(format string, args ...any) int {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "pkbf-ct: interrupted\n")
			return exitSignaled
		}
		fmt.Fprintf(stderr, "pkbf-ct: error: "+format+"\n", args...)
		return exitTrouble
	}
	if fl.kind == "auto" {
		fl.kind = ""
	}
	var key crypto.PublicKey
	if fl.key != "" {
		k, err := readKey(fl.key)
		if err != nil {
			return fail("--key %s: %v", fl.key, err)
		}
		key = k
	}
	hc := &http.Client{Transport: &ct.Transport{Rate: fl.rate, Base: &http.Transport{
		Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: fl.parallel + 2, IdleConnTimeout: 90 * time.Second,
		ResponseHeaderTimeout: time.Minute,
	}}}
	log, err := ct.Open(ctx, logURL, ct.Options{Kind: ct.Kind(fl.kind), Key: key, HTTPClient: hc, UserAgent: fl.userAgent,
		Parallel: fl.parallel, Batch: fl.batch, Limits: ct.Limits{MaxBody: fl.maxResponse, BodyTimeout: fl.responseTimeout}})
	if err != nil {
		return fail("%v", err)
	}
	f, err := openFilter(filterPath, stdin)
	if err != nil {
		return fail("%v", err)
	}
	defer f.Close()
	if fl.state == "" {
		fl.state = defaultState(logURL)
	}

	out, err := newOutput(fl.output, stdout)
	if err != nil {
		return fail("%v", err)
	}
	defer out.close()
	prog := newProgress(stderr, fl.quiet, logURL)
	unchecked := 0
	scan := &ct.Scan{
		Log: log, Filter: keycheck.New(f, keycheck.Options{}), State: fl.state, From: fl.from, To: fl.to, SaveEvery: fl.saveEvery, AcknowledgeUnchecked: fl.acknowledge,
		Report: func(h ct.Hit) error { return out.hit(h, fl.json) },
		Unchecked: func(index int64, err error) {
			unchecked++
			prog.clear()
			fmt.Fprintf(stderr, "pkbf-ct: error: %s: entry %d: not checked: %v\n", logURL, index, err)
		},
		Progress: prog.update,
		Saving:   out.saving,
		Resumed:  out.resumed,
	}
	res, err := scan.Run(ctx)
	prog.clear()
	if ferr := out.close(); ferr != nil && err == nil {
		err = ferr
	}
	if !fl.quiet {
		verified := "unverified: no --key"
		if res.Head.Verified {
			verified = "signature verified"
		}
		fmt.Fprintf(stderr, "pkbf-ct: %s: tree head of %d entries (%s): %s; %d hits, %d not checked%s; state in %s\n",
			logURL, res.Head.Size, verified, readProved(res), res.Hits, res.Unchecked, heldBack(res.Unproved), fl.state)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		fmt.Fprintf(stderr, "pkbf-ct: interrupted: the next run goes on from entry %d\n", res.Next)
		return exitSignaled
	case err != nil:
		fmt.Fprintf(stderr, "pkbf-ct: error: %v\n", err)
		return exitTrouble
	case unchecked > 0:
		fmt.Fprintf(stderr, "pkbf-ct: error: %d entries not checked\n", unchecked)
		return exitTrouble
	case res.Hits > 0:
		return exitFound
	}
	return exitOK
}

// readProved says which entries a run read and which of them it proved
// part of the tree head: "256 read (entries 0 to 255), none proved".
func readProved(res ct.Result) string {
	if res.Entries == 0 {
		return "0 read"
	}
	last := res.Start + res.Entries - 1
	s := fmt.Sprintf("%d read (entries %d to %d), ", res.Entries, res.Start, last)
	switch {
	case res.Next > last:
		return s + "all proved"
	case res.Next <= res.Start:
		return s + "none proved"
	}
	return s + fmt.Sprintf("entries %d to %d proved", res.Start, res.Next-1)
}

// heldBack counts the hits a run found in entries it did not prove.
func heldBack(n int64) string {
	switch n {
	case 0:
		return ""
	case 1:
		return ", 1 hit held back (in entries not proved: not reported; the next run reads them again)"
	}
	return fmt.Sprintf(", %d hits held back (in entries not proved: not reported; the next run reads them again)", n)
}

// parseArgs parses args with the flags anywhere among them, as pkbf
// does: one dash or two, and "--" ends them. It returns the other
// arguments, in order.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
}

// interruptContext returns a context that the first interrupt (Ctrl-C)
// or SIGTERM cancels, with the signal as its cause; the signals have
// their default action again before the context ends, so that a second
// one ends the process at once, even while it waits on something that
// does not heed the context. Call stop when done. (pkbf's commands do the
// same with internal/cli's, which module ct does not import: see
// TestNoInternalPackages.)
func interruptContext() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-sigs:
			signal.Stop(sigs)
			cancel(fmt.Errorf("%v signal received", sig))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel(context.Canceled) }
}

// openFilter opens FILTER: "-" is standard input, read as a stream.
func openFilter(name string, stdin io.Reader) (*pkbf.Filter, error) {
	if name != "-" {
		return pkbf.Open(name)
	}
	f, err := pkbf.ReadFilter(stdin)
	if err != nil {
		return nil, fmt.Errorf("<stdin>: %w", err)
	}
	return f, nil
}

// readKey reads a log's public key: a PEM file, or base64 DER.
func readKey(s string) (crypto.PublicKey, error) {
	der, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		b, ferr := os.ReadFile(s)
		if ferr != nil {
			return nil, fmt.Errorf("neither base64 nor a readable file: %w", ferr)
		}
		block, _ := pem.Decode(b)
		if block == nil {
			return nil, errors.New("no PEM block in the file")
		}
		der = block.Bytes
	}
	return x509.ParsePKIXPublicKey(der)
}

// defaultState names the state file after the log: pkbf-ct.HOST_PATH.json.
func defaultState(logURL string) string {
	name := logURL
	if u, err := url.Parse(logURL); err == nil && u.Host != "" {
		name = u.Host + u.Path
	}
	name = strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		}
		return '_'
	}, name), "_")
	return filepath.Join(".", "pkbf-ct."+name+".json")
}

// output writes hits to standard output or appends them to a file whose
// length the state records.
type output struct {
	w    *bufio.Writer
	file *os.File // nil for standard output
}

func newOutput(path string, stdout io.Writer) (*output, error) {
	if path == "" {
		return &output{w: bufio.NewWriter(stdout)}, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, err
	}
	return &output{w: bufio.NewWriter(f), file: f}, nil
}

type outputState struct {
	Output string `json:"output"`
	Offset int64  `json:"output_offset"`
}

// resumed cuts the output file back to the length the state recorded:
// hits written after the last save are reported again from there.
func (o *output) resumed(extra json.RawMessage) error {
	if o.file == nil || extra == nil {
		return nil
	}
	var s outputState
	if err := json.Unmarshal(extra, &s); err != nil || s.Output == "" {
		return nil
	}
	if s.Output != o.file.Name() {
		return fmt.Errorf("the state's hits go to %s, not %s: give --output %s", s.Output, o.file.Name(), s.Output)
	}
	fi, err := o.file.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < s.Offset {
		return fmt.Errorf("%s is %d bytes, shorter than the %d the state recorded: it was changed outside pkbf-ct", s.Output, fi.Size(), s.Offset)
	}
	if err := o.file.Truncate(s.Offset); err != nil {
		return err
	}
	_, err = o.file.Seek(s.Offset, io.SeekStart)
	return err
}

// saving makes the hits so far durable and returns the output's length.
func (o *output) saving() (json.RawMessage, error) {
	if err := o.w.Flush(); err != nil {
		return nil, err
	}
	if o.file == nil {
		return nil, nil
	}
	if err := o.file.Sync(); err != nil {
		return nil, err
	}
	off, err := o.file.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	return json.Marshal(outputState{o.file.Name(), off})
}

func (o *output) hit(h ct.Hit, asJSON bool) error {
	if asJSON {
		o.w.Write(h.AppendJSON(nil))
	} else {
		fmt.Fprintf(o.w, "probably\t%s\t%s\t%s\tserial %s\tsubject %s\tissuer %s\n",
			h.Verdict.Key.Fingerprint, h.Source(), h.Timestamp.Format(time.RFC3339Nano), h.Serial, h.Subject, h.Issuer)
	}
	// Each hit is written at once: a pipe's reader sees it, and a file
	// holds it (until a resumed run cuts what the state does not cover).
	return o.w.Flush()
}

func (o *output) close() error {
	if o.w == nil {
		return nil
	}
	err := o.w.Flush()
	if o.file != nil {
		if cerr := o.file.Close(); err == nil {
			err = cerr
		}
		o.file = nil
	}
	o.w = nil
	return err
}

// progress is the line on a terminal: entries/s and the time left.
type progress struct {
	w     io.Writer
	on    bool
	log   string
	start time.Time
	shown bool
}

func newProgress(w io.Writer, quiet bool, log string) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, on: !quiet && ok && term.IsTerminal(int(f.Fd())), log: log, start: time.Now()}
}

func (p *progress) update(done, at, end int64) {
	if !p.on {
		return
	}
	rate := float64(done) / time.Since(p.start).Seconds()
	eta := "?"
	if rate > 0 {
		eta = time.Duration(float64(end-at) / rate * float64(time.Second)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r\033[K%s: entry %d of %d (%.1f%%), %.0f entries/s, %s left", p.log, at, end, 100*float64(at)/float64(max(end, 1)), rate, eta)
	p.shown = true
}

func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
