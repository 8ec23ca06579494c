package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/pkbf/pkbf"
)

func infoCommand(stdout, stderr io.Writer) *command {
	c := newCommand("info", "info [--json] [--scan] FILTER", stdout, stderr)
	c.Bool("json", false, "print one JSON object")
	c.Bool("scan", false, "also count the bits set: reads the whole filter (with progress on a terminal)")
	c.alias("j", "json")
	return c
}

func runInfo(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := infoCommand(stdout, stderr)
	if ok, code := c.parse(args, 1, 1); !ok {
		return code
	}
	asJSON, scan := c.Lookup("json").Value.(flag.Getter).Get().(bool), c.Lookup("scan").Value.(flag.Getter).Get().(bool)
	path := c.Arg(0)
	f, err := openFilter(path, stdin)
	if err != nil {
		errorf(stderr, "%s", displayErr(err))
		return exitTrouble
	}
	defer f.Close()
	h := f.Header() // Open checked that the file is exactly h.FileSize() bytes
	var fill *float64
	if scan {
		fill, err = scanFill(f, newScreen(stdout, stderr))
	}
	if err == nil {
		err = f.FileChanged()
	}
	if err != nil {
		errorf(stderr, "%s", displayErr(err))
		return exitTrouble
	}
	info := struct {
		File              string   `json:"file"`
		Revision          uint32   `json:"revision"`
		Updated           string   `json:"updated"`
		Entries           uint32   `json:"entries"`
		HashCount         uint8    `json:"hash_count"`
		HashLength        uint8    `json:"hash_length"`
		Bits              uint64   `json:"bits"`
		Size              int64    `json:"size"`
		FalsePositiveRate float64  `json:"false_positive_rate"`
		FillRatio         *float64 `json:"fill_ratio,omitempty"`
	}{path, h.Revision, h.Updated.UTC().Format(time.RFC3339), h.EntryCount, h.HashCount, h.HashLength,
		h.Bits(), int64(h.FileSize()), f.FalsePositiveRate(), fill}
	if asJSON {
		b, _ := json.Marshal(info)
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	fmt.Fprintf(stdout, `file:                %s
revision:            %d
updated:             %s
entries:             %d
hash count (k):      %d
hash length (L):     %d
bits (m = 2^L):      %d
size:                %s
false-positive rate: %.3g (estimated from the header)
`, info.File, info.Revision, info.Updated, info.Entries, info.HashCount, info.HashLength,
		info.Bits, sizeText(h.FileSize()), info.FalsePositiveRate)
	if fill != nil {
		fmt.Fprintf(stdout, "fill ratio:          %.4f (bits set)\n", *fill)
	}
	return exitOK
}

// scanFill counts the bits set, a chunk at a time with progress, and
// returns their share; a filter file cut short is an error.
func scanFill(f *pkbf.Filter, scr *screen) (fill *float64, err error) {
	prog := startProgress(scr, nil)
	prog.what = "MiB"
	defer prog.stop()
	it := []item{{}}
	var ratio float64
	guardFilter(func([]item) {
		ratio = f.FillRatioProgress(func(done uint64) { prog.keys.Store(int64(done >> 20)) })
	})(it)
	if it[0].filterErr != nil {
		return nil, it[0].filterErr
	}
	return &ratio, nil
}
