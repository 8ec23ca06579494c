package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/pkbf/pkbf"
)

// createFlags are create's options.
type createFlags struct {
	hashes, length *int
	entries        *uint64
	rate           *float64
}

func createCommand(stdout, stderr io.Writer) (*command, *createFlags) {
	c := newCommand("create", "create (--hashes K --length L | --entries N --fp-rate P) FILTER", stdout, stderr)
	fl := &createFlags{
		hashes:  c.Int("hashes", 0, "hash count `K`, 1 to 255 (with --length)"),
		length:  c.Int("length", 0, "hash length `L`: the filter has 2^L bits, L from 3 to 40 (with --hashes)"),
		entries: c.Uint64("entries", 0, "expected number of keys `N` (with --fp-rate)"),
		rate:    c.Float64("fp-rate", 0, "target false-positive rate `P`, between 0 and 1 (with --entries)"),
	}
	c.alias("k", "hashes")
	c.alias("l", "length")
	c.alias("n", "entries")
	c.alias("p", "fp-rate")
	return c, fl
}

func runCreate(args []string, stdout, stderr io.Writer) int {
	c, fl := createCommand(stdout, stderr)
	hashes, length, entries, rate := fl.hashes, fl.length, fl.entries, fl.rate
	if ok, code := c.parse(args, 1, 1); !ok {
		return code
	}
	set := map[string]bool{}
	c.Visit(func(f *flag.Flag) { set[c.longName(f.Name)] = true })
	byParams, bySize := set["hashes"] || set["length"], set["entries"] || set["fp-rate"]
	switch {
	case byParams && bySize:
		_, code := c.fail("give either --hashes and --length or --entries and --fp-rate, not both")
		return code
	case byParams && !(set["hashes"] && set["length"]):
		_, code := c.fail("--hashes and --length go together")
		return code
	case bySize && !(set["entries"] && set["fp-rate"]):
		_, code := c.fail("--entries and --fp-rate go together")
		return code
	case !byParams && !bySize:
		_, code := c.fail("give --hashes and --length, or --entries and --fp-rate")
		return code
	}
	k, l := *hashes, *length
	if bySize {
		var err error
		if k, l, err = pkbf.Parameters(*entries, *rate); err != nil {
			errorf(stderr, "%s", displayErr(err))
			return exitTrouble
		}
	}
	path := c.Arg(0)
	if err := pkbf.Create(path, k, l); err != nil {
		errorf(stderr, "%s", displayErr(err))
		return exitTrouble
	}
	h := pkbf.Header{HashCount: uint8(k), HashLength: uint8(l)}
	fmt.Fprintf(stdout, "created %s: hash count %d, hash length %d (%d bits, %s)", path, k, l, h.Bits(), sizeText(h.FileSize()))
	if bySize {
		fmt.Fprintf(stdout, ", chosen for %d entries at a false-positive rate of %g", *entries, *rate)
	}
	fmt.Fprintln(stdout)
	return exitOK
}

func addCommand(stdout, stderr io.Writer) (*command, *string) {
	c := newCommand("add", "add [--passphrase-file FILE] FILTER [FILE...]", stdout, stderr)
	passphraseFile := c.String("passphrase-file", "", "try each line of `FILE` as the passphrase of encrypted PKCS#12 files (also $"+passphraseEnv+")")
	return c, passphraseFile
}

func runAdd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, passphraseFile := addCommand(stdout, stderr)
	if ok, code := c.parse(args, 1, -1); !ok {
		return code
	}
	path := c.Arg(0)
	f, err := pkbf.OpenFile(path, os.O_RDWR)
	if err != nil {
		errorf(stderr, "%s", displayErr(err))
		return exitTrouble
	}
	// A first interrupt stops adding after the key in progress; the file is
	// synced and closed as usual. It also restores the default action, so
	// a second one quits at once, even while the input is blocked: that is
	// safe too, as each add sets the key's bits before the header and the
	// mapped file keeps every write made.
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(interrupted)
	var stopping atomic.Bool
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-interrupted:
			stopping.Store(true)
			signal.Stop(interrupted)
		case <-finished:
		}
	}()

	pws, err := passphrases(*passphraseFile)
	if err != nil {
		errorf(stderr, "%s", displayErr(err))
		return exitTrouble
	}
	inputs := inputsOf(c.Args()[1:], stdin, pws)
	scr := newScreen(stdout, stderr)
	prog := startProgress(scr, inputs)
	var keys, added int
	troubled, stopped := false, false
	pipeline(inputs, runtime.GOMAXPROCS(0), eachItem(func(it *item) {
		it.spki, it.err = it.key.SPKI()
		if it.err == nil {
			it.extra, it.err = pkbf.Encodings(it.spki)
		}
	}), func(it *item) bool {
		if stopping.Load() {
			stopped = true
			return false
		}
		if it.err != nil {
			troubled = true
			scr.errorf("%s", it.errorMessage())
			return true
		}
		keys++
		for _, e := range it.extra {
			if f.Add(e) {
				added++
			}
		}
		// The file was replaced or cut short: adding more is pointless;
		// Close reports why.
		return f.Err() == nil
	}, nil, nil, prog)
	prog.stop()
	if err := f.Close(); err != nil {
		errorf(stderr, "%s", displayErr(err))
		fmt.Fprintf(stderr, "pkbf: %d keys read before the error; see above for what became of them\n", keys)
		return exitTrouble
	}
	h := f.Header()
	fmt.Fprintf(stdout, "%s: %s from %s; %s, revision %d\n", path, plural(added, "new entry", "new entries"), plural(keys, "key", "keys"), plural(int(h.EntryCount), "entry", "entries"), h.Revision)
	switch {
	case stopped:
		errorf(stderr, "interrupted: the keys before stayed added, the rest were not")
		return exitSignaled
	case troubled:
		return exitTrouble
	}
	return exitOK
}

// sizeText gives a byte count with its size in binary units: "16 GiB
// (17179869208 bytes)", or "32 bytes".
func sizeText(n uint64) string {
	if n < 1024 {
		return binarySize(n)
	}
	return fmt.Sprintf("%s (%d bytes)", binarySize(n), n)
}

// binarySize gives a size in binary units: "1.2 GiB", "512 bytes".
func binarySize(n uint64) string {
	if n < 1024 {
		return plural(int(n), "byte", "bytes")
	}
	v, units := float64(n), []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := -1
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + " " + units[i]
}
