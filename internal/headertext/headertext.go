// Package headertext words a pkbfv1 header's fields for people, one way for
// every command and service that prints them.
package headertext

import (
	"fmt"
	"time"
)

// Updated words a header's update time: RFC 3339 in UTC, or the seconds
// where no date can show them (a stored time of 2^63 seconds or more, which
// a time.Time holds as a negative Unix time).
func Updated(t time.Time) string {
	if secs := t.Unix(); secs < 0 && !t.IsZero() {
		return fmt.Sprintf("%d seconds after 1970 (past any date)", uint64(secs))
	}
	return t.UTC().Format(time.RFC3339)
}
