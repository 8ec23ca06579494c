package mapfile

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"runtime/debug"
	"testing"
	"testing/iotest"
)

func TestReadDeclared(t *testing.T) {
	src := make([]byte, 3<<20+5)
	for i := range src {
		src[i] = byte(i * 7)
	}
	for _, size := range []int{0, 1, 5, 1 << 20, 1<<20 + 1, 3<<20 + 5} {
		// One byte at a time, as a slow pipe would give it.
		got, n, err := ReadDeclared(iotest.HalfReader(bytes.NewReader(src[:size])), size, nil)
		if err != nil || n != size || !bytes.Equal(got, src[:size]) {
			t.Errorf("size %d: got %d bytes, n %d, err %v", size, len(got), n, err)
		}
	}
}

func TestReadDeclaredShort(t *testing.T) {
	for _, tc := range []struct {
		name      string
		have, say int
		want      error
	}{
		{"empty", 0, 100, io.EOF},
		{"short in the first quarter", 10, 8 << 20, io.ErrUnexpectedEOF},
		{"short after the first quarter", 5 << 20, 8 << 20, io.ErrUnexpectedEOF},
		{"one byte short", 8<<20 - 1, 8 << 20, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, n, err := ReadDeclared(bytes.NewReader(make([]byte, tc.have)), tc.say, nil)
			if !errors.Is(err, tc.want) || n != tc.have || data != nil {
				t.Errorf("got %d bytes, n %d, err %v; want n %d, %v", len(data), n, err, tc.have, tc.want)
			}
		})
	}
	boom := errors.New("boom")
	if _, n, err := ReadDeclared(io.MultiReader(bytes.NewReader(make([]byte, 7)), iotest.ErrReader(boom)), 100, nil); err != boom || n != 7 {
		t.Errorf("reader error: n %d, err %v", n, err)
	}
}

// TestReadPeakMemory measures the heap Read takes for 64 MiB arriving in
// small reads: at most 1.25 times the data, plus slack for the runtime.
func TestReadPeakMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 80 MiB")
	}
	const size = 64 << 20
	peak := peakHeap(t, func() {
		data, _, err := ReadDeclared(io.LimitReader(zeros{}, size), size, nil)
		if err != nil || len(data) != size {
			t.Fatal(err)
		}
		runtime.KeepAlive(data)
	})
	if limit := uint64(size) * 5 / 4 * 105 / 100; peak > limit {
		t.Errorf("peak heap %d bytes for %d of data: %.2f×, want at most 1.25×", peak, size, float64(peak)/size)
	}
	t.Logf("peak heap %.2f× the data", float64(peak)/size)
}

// peakHeap returns the most heap in use, above what was in use before,
// while fn ran: TotalAlloc less what the collector has freed is not
// enough (a collection may not run), so it counts every allocation as
// live, which overstates; fn runs with the collector off.
func peakHeap(t *testing.T, fn func()) uint64 {
	t.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	old := setGCPercent(-1)
	defer setGCPercent(old)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	n := min(len(p), 4096)
	clear(p[:n])
	return n, nil
}

func setGCPercent(p int) int { return debug.SetGCPercent(p) }
