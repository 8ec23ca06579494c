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
	hashes, length int
	entries, keys  uint64
	rate           float64
}

// entriesPerKey is what create --keys counts a key as: the entries add
// makes of it, one an encoding a filter may hold it under. An EC key is
// two (both point forms), and so is a key given in other than its
// canonical encoding (that one and the canonical); an EC key with
// explicit curve parameters, rare, is three.
const entriesPerKey = 2

func (fl *createFlags) command(stdout, stderr io.Writer) *command {
	c := newCommand("create", "create (--keys N --fp-rate P | --entries N --fp-rate P | --hashes K --length L) FILTER", stdout, stderr)
	c.IntVar(&fl.hashes, "hashes", 0, "hash count `K`, 1 to 255 (with --length)")
	c.IntVar(&fl.length, "length", 0, "hash length `L`: the filter has 2^L bits, L from 3 to 40 (with --hashes)")
	c.Uint64Var(&fl.keys, "keys", 0, "expected number of keys `N` (with --fp-rate): sized for 2N entries, as add stores a key under each of its encodings (an EC key under both point forms)")
	c.Uint64Var(&fl.entries, "entries", 0, "expected number of entries `N` (with --fp-rate): encodings, not keys; an EC key is two (see --keys)")
	c.Float64Var(&fl.rate, "fp-rate", 0, "target false-positive rate `P`, between 0 and 1 (with --keys or --entries)")
	c.alias("k", "hashes")
	c.alias("l", "length")
	c.alias("n", "entries")
	c.alias("p", "fp-rate")
	return c
}

func runCreate(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var fl createFlags
	c := fl.command(stdout, stderr)
	if ok, code := c.parse(args, 1, 1); !ok {
		return code
	}
	set := map[string]bool{}
	c.Visit(func(f *flag.Flag) { set[c.longName(f.Name)] = true })
	byParams, bySize := set["hashes"] || set["length"], set["keys"] || set["entries"] || set["fp-rate"]
	switch {
	case byParams && bySize:
		return c.fail("give either --hashes and --length or --keys (or --entries) and --fp-rate, not both")
	case byParams && !(set["hashes"] && set["length"]):
		return c.fail("--hashes and --length go together")
	case set["keys"] && set["entries"]:
		return c.fail("give --keys or --entries, not both: an entry is one encoding of a key, and --keys counts each key as 2")
	case bySize && !((set["keys"] || set["entries"]) && set["fp-rate"]):
		return c.fail("--keys (or --entries) and --fp-rate go together")
	case !byParams && !bySize:
		return c.fail("give --keys and --fp-rate, or --hashes and --length")
	}
	n := fl.entries
	if set["keys"] {
		if fl.keys > math.MaxUint64/entriesPerKey {
			return c.fail(fmt.Sprintf("--keys %d is too many", fl.keys))
		}
		n = fl.keys * entriesPerKey
	}
	k, l := fl.hashes, fl.length
	if bySize {
		var err error
		if k, l, err = pkbf.Parameters(n, fl.rate); err != nil {
			return trouble(stderr, err)
		}
	}
	path := c.Arg(0)
	if err := pkbf.Create(path, k, l); err != nil {
		return trouble(stderr, err)
	}
	h := pkbf.Header{HashCount: uint8(k), HashLength: uint8(l)}
	fmt.Fprintf(stdout, "created %s: hash count %d, hash length %d (%d bits, %s)", path, k, l, h.Bits(), sizeText(h.FileSize()))
	switch {
	case set["keys"]:
		fmt.Fprintf(stdout, ", chosen for %d keys (%d entries) at a false-positive rate of %g", fl.keys, n, fl.rate)
	case bySize:
		fmt.Fprintf(stdout, ", chosen for %d entries at a false-positive rate of %g", n, fl.rate)
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
