package text

import (
	"fmt"
	"time"
)

// lastDate is 9999-12-31T23:59:59Z in Unix seconds: the last time RFC
// 3339's four-digit year can show.
const lastDate = 253402300799

// Updated words a pkbfv1 header's update time, one way for every command
// and service that prints it: RFC 3339 in UTC, or the seconds
// where no RFC 3339 date can show them (past the year 9999, or 2^63
// seconds or more, which a time.Time holds as a negative Unix time). The
// words are the same on every platform: 32-bit ones format no year past
// 2^31.
func Updated(t time.Time) string {
	if secs := t.Unix(); (secs < 0 || secs > lastDate) && !t.IsZero() {
		return fmt.Sprintf("%d seconds after 1970 (past any date)", uint64(secs))
	}
	return t.UTC().Format(time.RFC3339)
}
