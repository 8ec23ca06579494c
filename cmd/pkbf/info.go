package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/text"
)

type infoFlags struct{ json, scan bool }

func (fl *infoFlags) command(stdout, stderr io.Writer) *command {
	c := newCommand("info", "info [--json] [--scan] FILTER", stdout, stderr)
	c.BoolVar(&fl.json, "json", false, "print one JSON object")
	c.BoolVar(&fl.scan, "scan", false, "also count the bits set: reads the whole filter (with progress on a terminal)")
	c.alias("j", "json")
	return c
}

func runInfo(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var fl infoFlags
	c := fl.command(stdout, stderr)
	if ok, code := c.parse(args, 1, 1); !ok {
		return code
	}
	asJSON, scan := fl.json, fl.scan
	path := c.Arg(0)
	f, err := openFilter(path, stdin)
	if err != nil {
		return trouble(stderr, err)
	}
	defer f.Close()
	h := f.Header() // Open checked that the file is exactly h.FileSize() bytes
	var fill, distinct *float64
	if scan {
		fill, distinct, err = scanFill(f, newScreen(stdout, stderr))
	}
	if err == nil {
		err = f.FileChanged()
	}
	if err != nil {
		return trouble(stderr, err)
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
		EstimatedEntries  *float64 `json:"estimated_entries,omitempty"`
	}{path, h.Revision, text.Updated(h.Updated), h.EntryCount, h.HashCount, h.HashLength,
		h.Bits(), int64(h.FileSize()), h.FalsePositiveRate(), fill, distinct}
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
		fmt.Fprintf(stdout, "distinct keys:       %s (estimated from the bits set)\n", estimateText(*distinct))
	}
	return exitOK
}

// scanFill counts the bits set, with progress, and returns their share
// and the distinct keys they suggest. It reads the filter through WriteTo,
// which reports a filter file cut short as an error.
func scanFill(f *pkbf.Filter, scr *screen) (fill, distinct *float64, err error) {
	prog := startProgress(scr, nil, func(p *progress) { p.what = "MiB" })
	defer prog.stop()
	c := &bitCounter{skip: pkbf.HeaderSize, progress: func(done uint64) { prog.keys.Store(int64(done >> 20)) }}
	if _, err := f.WriteTo(c); err != nil {
		return nil, nil, err
	}
	h := f.Header()
	ratio, estimate := float64(c.set)/float64(h.Bits()), h.EstimateEntries(c.set)
	if math.IsInf(estimate, 1) { // every bit set: JSON has no infinity
		estimate = math.MaxFloat64
	}
	return &ratio, &estimate, nil
}

// estimateText words an estimate of distinct keys: about 1.23e+06, or
// "too many to tell" when every bit is set.
func estimateText(v float64) string {
	if v == math.MaxFloat64 {
		return "too many to tell (every bit is set)"
	}
	return fmt.Sprintf("about %.0f", v)
}

// fillChunk is how much a bitCounter counts between reports of progress:
// reading a large filter from disk takes seconds. Tests make it smaller.
var fillChunk = 16 << 20

// bitCounter is an io.Writer that counts the bits set in what it is given
// after the first skip bytes, calling progress with the bytes counted
// after every chunk.
type bitCounter struct {
	skip     int
	set      uint64
	done     uint64
	progress func(done uint64)
}

func (c *bitCounter) Write(b []byte) (int, error) {
	n := len(b)
	skip := min(c.skip, len(b))
	c.skip -= skip
	for b = b[skip:]; len(b) > 0; {
		chunk := b[:min(len(b), fillChunk)]
		b = b[len(chunk):]
		c.done += uint64(len(chunk))
		for len(chunk) >= 8 {
			c.set += uint64(bits.OnesCount64(binary.LittleEndian.Uint64(chunk)))
			chunk = chunk[8:]
		}
		for _, x := range chunk {
			c.set += uint64(bits.OnesCount8(x))
		}
		c.progress(c.done)
	}
	return n, nil
}
