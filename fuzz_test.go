package pkbf

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/bitwords"
	"github.com/pkbf/pkbf/internal/testkit"
)

func FuzzParseHeader(f *testing.F) {
	testkit.SeedFiles(f, "testdata/*.pkbf")
	f.Add(rawHeader("pkbfv1", 1, 1555799917, 3, 12, 18))
	f.Add(rawHeader("pkbfv1", 1<<32-1, 1<<64-1, 1<<32-1, 255, 63))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			testkit.CheckErr(t, err, ErrInvalidFile)
			if h != (Header{}) {
				t.Fatalf("failed parse returned %+v", h)
			}
			return
		}
		again, err := h.AppendBinary(nil)
		if err != nil || !bytes.Equal(again, b[:HeaderSize]) {
			t.Fatalf("re-encoded %x, %v; want %x", again, err, b[:HeaderSize])
		}
	})
}

func FuzzParse(f *testing.F) {
	testkit.SeedFiles(f, "testdata/*.pkbf")
	f.Add(buildFilter(f, 3, 6, []byte("a"), []byte("b")))
	f.Add(buildFilter(f, 1, 3))
	half := buildFilter(f, 3, 9) // about half its bits set, for the batch check
	for i := HeaderSize; i < len(half); i++ {
		half[i] = byte(i*151) ^ 0x5a
	}
	f.Add(half)
	f.Fuzz(func(t *testing.T, b []byte) {
		flt, err := Parse(b)
		streamed, streamErr := ReadFilter(bytes.NewReader(b))
		if err != nil {
			testkit.CheckErr(t, err, ErrInvalidFile)
			if flt != nil {
				t.Fatal("failed Parse returned a filter")
			}
			if streamErr == nil && !strings.Contains(err.Error(), "trailing") {
				t.Fatalf("ReadFilter accepted what Parse refused: %v", err)
			}
			return
		}
		if streamErr != nil || !bytes.Equal(streamed.data, flt.data) || streamed.Header() != flt.Header() {
			t.Fatalf("ReadFilter disagrees with Parse: %v", streamErr)
		}
		var out bytes.Buffer
		hdr, _ := flt.Header().AppendBinary(nil)
		out.Write(hdr)
		out.Write(flt.data)
		if !bytes.Equal(out.Bytes(), b) {
			t.Fatal("header and data do not re-encode to the input")
		}
		if set := bitwords.Count(flt.data); set > flt.Header().Bits() {
			t.Fatalf("%d bits set of %d", set, flt.Header().Bits())
		}
		if r := flt.Header().FalsePositiveRate(); r < 0 || r > 1 {
			t.Fatalf("FalsePositiveRate = %v", r)
		}
		flt.Probably(b)
		// ProbablyBatch answers as Probably, at depth 1 and depth k on a large
		// filter, on keys cut from the input.
		var keys [][]byte
		for rest, n := b, 1; len(rest) > 0 && len(keys) < 64; n = n%23 + 1 {
			n := min(n, len(rest))
			keys, rest = append(keys, rest[:n]), rest[n:]
		}
		flt.large = true
		answers := make([]bool, len(keys))
		for _, mean := range []uint32{0, uint32(flt.k) * 32} { // depth 1, depth k
			flt.batchVisits.Store(mean)
			flt.ProbablyBatch(keys, answers)
			for i, key := range keys {
				if answers[i] != flt.Probably(key) {
					t.Fatalf("mean visits %d/16: ProbablyBatch says %v for key %d of %d, Probably the opposite", mean, answers[i], i, len(keys))
				}
			}
		}
	})
}

// quickInputs lowers the costs a hostile input may ask for (key derivation
// iterations, DSA and DH sizes) while fuzzing: an input that runs for a
// second at the end of a fuzz run fails it with "context deadline
// exceeded". The limits themselves are tested apart.
