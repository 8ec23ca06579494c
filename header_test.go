package pkbf

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// rawHeader builds header bytes field by field, independently of
// AppendBinary, for the tests.
func rawHeader(magicText string, revision uint32, secs uint64, count uint32, k, l byte) []byte {
	b := []byte(magicText)
	b = append(b, byte(revision>>24), byte(revision>>16), byte(revision>>8), byte(revision))
	for i := 7; i >= 0; i-- {
		b = append(b, byte(secs>>(8*i)))
	}
	b = append(b, byte(count>>24), byte(count>>16), byte(count>>8), byte(count))
	return append(b, k, l)
}

func TestParseHeaderKnownBytes(t *testing.T) {
	// The header of the publisher's 12_18 example, as printed by
	// xxd -l 24 -p 12_18_filter_example.pkbf.
	b, _ := hex.DecodeString("706b626676310000000100000000" + "5cbb9f6d" + "00000003" + "0c12")
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Header{Revision: 1, Updated: time.Date(2019, 4, 20, 22, 38, 37, 0, time.UTC), EntryCount: 3, HashCount: 12, HashLength: 18}
	if h != want {
		t.Fatalf("ParseHeader = %+v, want %+v", h, want)
	}
	if h.Bits() != 262144 || h.dataSize() != 32768 || h.FileSize() != 32792 {
		t.Errorf("sizes = %d bits, %d data bytes, %d file bytes; want 262144, 32768, 32792", h.Bits(), h.dataSize(), h.FileSize())
	}
	again, err := h.AppendBinary(nil)
	if err != nil || !bytes.Equal(again, b) {
		t.Errorf("AppendBinary = %x, %v; want %x", again, err, b)
	}
}

func TestParseHeaderLimits(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		err  string // "" for valid
	}{
		{"smallest valid (k 1, L 3)", rawHeader("pkbfv1", 0, 0, 0, 1, 3), ""},
		{"largest valid (k 255, L 63)", rawHeader("pkbfv1", 1<<32-1, 1<<63-1, 1<<32-1, 255, 63), ""},
		{"empty", nil, "header is 0 bytes, need 24"},
		{"truncated header", rawHeader("pkbfv1", 0, 0, 0, 1, 3)[:23], "header is 23 bytes, need 24"},
		{"wrong magic", rawHeader("pkbfv2", 0, 0, 0, 1, 3), `magic is "pkbfv2"`},
		{"magic case", rawHeader("PKBFV1", 0, 0, 0, 1, 3), `magic is "PKBFV1"`},
		{"hash count 0", rawHeader("pkbfv1", 0, 0, 0, 0, 10), "hash count is 0"},
		{"hash length 2", rawHeader("pkbfv1", 0, 0, 0, 1, 2), "hash length is 2, must be 3 to 63"},
		{"hash length 0", rawHeader("pkbfv1", 0, 0, 0, 1, 0), "hash length is 0"},
		{"hash length 64", rawHeader("pkbfv1", 0, 0, 0, 1, 64), "hash length is 64"},
		{"hash length 255", rawHeader("pkbfv1", 0, 0, 0, 1, 255), "hash length is 255"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ParseHeader(tt.b)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("ParseHeader: %v", err)
				}
				out, err := h.AppendBinary(nil)
				if err != nil || !bytes.Equal(out, tt.b) {
					t.Fatalf("round trip = %x, %v; want %x", out, err, tt.b)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("ParseHeader error = %v, want ErrInvalidFile containing %q", err, tt.err)
			}
			if h != (Header{}) {
				t.Errorf("failed ParseHeader returned %+v, want the zero Header", h)
			}
			if len(tt.b) < headerSize && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("short header error %v does not wrap io.ErrUnexpectedEOF", err)
			}
		})
	}
}

func TestHeaderEncoding(t *testing.T) {
	// A never-updated file has the Unix epoch, and the zero time encodes as 0.
	h, err := ParseHeader(rawHeader("pkbfv1", 0, 0, 0, 3, 14))
	if err != nil {
		t.Fatal(err)
	}
	if !h.Updated.Equal(time.Unix(0, 0)) || h.Updated.Location() != time.UTC {
		t.Errorf("Updated = %v, want the Unix epoch in UTC", h.Updated)
	}
	zero := Header{HashCount: 3, HashLength: 14}
	b, err := zero.AppendBinary([]byte("prefix"))
	if err != nil || !bytes.Equal(b, append([]byte("prefix"), rawHeader("pkbfv1", 0, 0, 0, 3, 14)...)) {
		t.Errorf("AppendBinary of zero time = %x, %v", b, err)
	}
	// Invalid parameters are refused on the way out too.
	for _, bad := range []Header{{HashCount: 0, HashLength: 10}, {HashCount: 1, HashLength: 2}, {HashCount: 1, HashLength: 64}} {
		if _, err := bad.AppendBinary(nil); !errors.Is(err, ErrInvalidFile) {
			t.Errorf("AppendBinary(%+v) error = %v, want ErrInvalidFile", bad, err)
		}
	}
}
