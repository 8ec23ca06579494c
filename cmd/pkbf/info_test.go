package main

import (
	"bytes"
	"math/bits"
	"testing"

	"github.com/pkbf/pkbf"
)

// bitCounter skips the header however the writes split it, counts every
// bit after it, and reports progress in chunks.
func TestBitCounter(t *testing.T) {
	defer func(was int) { fillChunk = was }(fillChunk)
	fillChunk = 1000
	data := make([]byte, 2*fillChunk+13)
	var want uint64
	for i := range data {
		data[i] = byte(i * 7)
		want += uint64(bits.OnesCount8(data[i]))
	}
	head := bytes.Repeat([]byte{0xff}, pkbf.HeaderSize)
	for _, split := range []int{0, 5, pkbf.HeaderSize, pkbf.HeaderSize + 3} {
		var reports []uint64
		c := &bitCounter{skip: pkbf.HeaderSize, progress: func(done uint64) { reports = append(reports, done) }}
		all := append(append([]byte{}, head...), data...)
		for _, part := range [][]byte{all[:split], all[split:]} {
			if n, err := c.Write(part); n != len(part) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if c.set != want {
			t.Errorf("split at %d: %d bits counted, want %d", split, c.set, want)
		}
		if last := reports[len(reports)-1]; last != uint64(len(data)) || len(reports) < 3 {
			t.Errorf("split at %d: progress reports %v, want at least 3 ending at %d", split, reports, len(data))
		}
	}
}
