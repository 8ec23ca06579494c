package text

import (
	"testing"
	"time"
)

// Updated words every time the same way on every platform: RFC 3339 up to
// the year 9999, seconds past it (linux/386 printed the year of 2^63-1
// seconds as 219250468, amd64 as 292277026596).
func TestUpdated(t *testing.T) {
	for _, tt := range []struct {
		unix uint64
		want string
	}{
		{0, "1970-01-01T00:00:00Z"},
		{1700000000, "2023-11-14T22:13:20Z"},
		{253402300799, "9999-12-31T23:59:59Z"},
		{253402300800, "253402300800 seconds after 1970 (past any date)"},
		{1<<63 - 1, "9223372036854775807 seconds after 1970 (past any date)"},
		{1 << 63, "9223372036854775808 seconds after 1970 (past any date)"},
		{1<<64 - 1, "18446744073709551615 seconds after 1970 (past any date)"},
	} {
		if got := Updated(time.Unix(int64(tt.unix), 0)); got != tt.want {
			t.Errorf("Updated(%d) = %q, want %q", tt.unix, got, tt.want)
		}
	}
}
