package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"

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
			errorf(stderr, "%s", message(err))
			return exitTrouble
		}
	}
	path := c.Arg(0)
	if err := pkbf.Create(path, k, l); err != nil {
		errorf(stderr, "%s", message(err))
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
