package keycheck

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pkbf/pkbf/keys"
)

// A Tally counts verdicts by what they say, for the summary a check of
// many keys ends with (pkbf check's). The zero value is ready to use; a
// Tally is not safe for concurrent use.
type Tally struct {
	// Keys counts the verdicts with an answer: Err nil, or a key to
	// refuse beside an error. Of them, Probably counts the keys the
	// filter probably holds, Weak the others with findings, and
	// Unconfirmed those Options.Confirm had no usable answer for.
	Keys, Probably, Weak, Unconfirmed int
	// Unreadable, Unsupported and Encrypted count the verdicts with Err
	// (objects and inputs not checked), by why: keys.ErrUnsupportedKey,
	// keys.ErrEncryptedKey, or anything else.
	Unreadable, Unsupported, Encrypted int

	noFilter, weak bool // a Checker without a filter, with the weak-key checks
}

// Add counts v.
func (t *Tally) Add(v *Verdict) {
	t.noFilter = t.noFilter || v.checks&checksNoFilter != 0
	t.weak = t.weak || v.checks&checksWeak != 0
	switch {
	case v.Err == nil:
	case errors.Is(v.Err, keys.ErrUnsupportedKey):
		t.Unsupported++
	case errors.Is(v.Err, keys.ErrEncryptedKey):
		t.Encrypted++
	default:
		t.Unreadable++
	}
	if v.Err != nil && !v.Refuse() {
		return
	}
	t.Keys++
	switch {
	case v.Probably:
		t.Probably++
	case len(v.Findings) > 0:
		t.Weak++
	}
	if v.Confirmation.Err != nil {
		t.Unconfirmed++
	}
}

// NotChecked is the number of verdicts with Err.
func (t *Tally) NotChecked() int { return t.Unreadable + t.Unsupported + t.Encrypted }

// String says what was counted: "12 keys: 1 probably, 2 weak, 9 no
// (1 unconfirmed); 2 objects not checked: 1 unreadable, 1 unsupported",
// naming weak keys when the weak-key checks ran, and "probably" unless
// there was no filter.
func (t *Tally) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", count(t.Keys, "key", "keys"))
	if !t.noFilter {
		fmt.Fprintf(&b, "%d probably, ", t.Probably)
	}
	if t.weak {
		fmt.Fprintf(&b, "%d weak, ", t.Weak)
	}
	fmt.Fprintf(&b, "%d no", t.Keys-t.Probably-t.Weak)
	if t.Unconfirmed > 0 {
		fmt.Fprintf(&b, " (%d unconfirmed)", t.Unconfirmed)
	}
	if n := t.NotChecked(); n > 0 {
		fmt.Fprintf(&b, "; %s not checked: ", count(n, "object", "objects"))
		sep := ""
		for _, k := range []struct {
			n    int
			what string
		}{{t.Unreadable, "unreadable"}, {t.Unsupported, "unsupported"}, {t.Encrypted, "encrypted"}} {
			if k.n > 0 {
				fmt.Fprintf(&b, "%s%d %s", sep, k.n, k.what)
				sep = ", "
			}
		}
	}
	return b.String()
}

// count gives "1 key", "2 keys".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
