package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/pkbf/pkbf"
)

func runInfo(args []string, stdout, stderr io.Writer) int {
	c := newCommand("info", "info [-json] FILTER", stdout, stderr)
	asJSON := c.Bool("json", false, "print one JSON object")
	if ok, code := c.parse(args, 1, 1); !ok {
		return code
	}
	path := c.Arg(0)
	f, err := pkbf.Open(path)
	if err != nil {
		errorf(stderr, "%v", err)
		return exitTrouble
	}
	defer f.Close()
	h := f.Header() // Open checked that the file is exactly h.FileSize() bytes
	var fill float64
	it := []item{{}}
	guardFilter(func([]item) { fill = f.FillRatio() })(it)
	if err = it[0].filterErr; err == nil {
		err = f.Check()
	}
	if err != nil {
		errorf(stderr, "%s", displayErr(err))
		return exitTrouble
	}
	info := struct {
		File              string  `json:"file"`
		Revision          uint32  `json:"revision"`
		Updated           string  `json:"updated"`
		Entries           uint32  `json:"entries"`
		HashCount         uint8   `json:"hash_count"`
		HashLength        uint8   `json:"hash_length"`
		Bits              uint64  `json:"bits"`
		Size              int64   `json:"size"`
		FalsePositiveRate float64 `json:"false_positive_rate"`
		FillRatio         float64 `json:"fill_ratio"`
	}{path, h.Revision, h.Updated.UTC().Format(time.RFC3339), h.EntryCount, h.HashCount, h.HashLength,
		h.Bits(), int64(h.FileSize()), f.FalsePositiveRate(), fill}
	if *asJSON {
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
size:                %d bytes
false-positive rate: %.3g (estimated from the header)
fill ratio:          %.4f (bits set)
`, info.File, info.Revision, info.Updated, info.Entries, info.HashCount, info.HashLength,
		info.Bits, info.Size, info.FalsePositiveRate, info.FillRatio)
	return exitOK
}
