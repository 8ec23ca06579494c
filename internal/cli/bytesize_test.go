package cli

import (
	"math"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int64
	}{
		{"bytes", "1024", 1024},
		{"KiB", "1KiB", 1024},
		{"space before the unit", "64 GiB", 64 << 30},
		{"one letter", "1M", 1 << 20},
		{"lower-case k", "2k", 2048},
		{"B", "7B", 7},
		{"negative", "-1", -1},
		{"largest TiB", "8388607TiB", 8388607 << 40},
		{"largest", "9223372036854775807", math.MaxInt64},
	} {
		if got, err := ParseSize(tc.in); err != nil || got != tc.want {
			t.Errorf("%s: ParseSize(%q) = %d, %v; want %d", tc.name, tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"unit alone", "KiB"},
		{"fraction", "1.5MiB"},
		{"past int64 in TiB", "8388608TiB"},
		{"past int64", "9223372036854775808"},
		{"unknown unit", "1 PiB"},
		{"two units", "1KiBKiB"},
	} {
		if got, err := ParseSize(tc.in); err == nil || got != 0 {
			t.Errorf("%s: ParseSize(%q) = %d, %v; want an error", tc.name, tc.in, got, err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 1024: "1KiB", 1536: "1536", 64 << 30: "64GiB", 1 << 40: "1TiB", -1 << 20: "-1MiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", n, back, err)
		}
	}
}

func TestGroup(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 7: "7", 999: "999", 1000: "1 000", 268435480: "268 435 480",
		-1000: "-1 000", -999: "-999", math.MaxInt64: "9 223 372 036 854 775 807",
	} {
		if got := Group(n); got != want {
			t.Errorf("Group(%d) = %q, want %q", n, got, want)
		}
	}
}
