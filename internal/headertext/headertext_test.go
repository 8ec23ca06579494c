package headertext

import (
	"testing"
	"time"
)

func TestUpdated(t *testing.T) {
	for _, tt := range []struct {
		unix uint64
		want string
	}{
		{0, "1970-01-01T00:00:00Z"},
		{1700000000, "2023-11-14T22:13:20Z"},
		{1<<63 - 1, "292277026596-12-04T15:30:07Z"},
		{1 << 63, "9223372036854775808 seconds after 1970 (past any date)"},
		{1<<64 - 1, "18446744073709551615 seconds after 1970 (past any date)"},
	} {
		if got := Updated(time.Unix(int64(tt.unix), 0)); got != tt.want {
			t.Errorf("Updated(%d) = %q, want %q", tt.unix, got, tt.want)
		}
	}
}
