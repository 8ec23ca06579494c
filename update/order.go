package update

import (
	"fmt"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/internal/text"
)

// Ordering: which of two filters is newer, and the times no filter may
// have. See "What Update trusts" in the package doc.

// ErrOlder is wrapped by the error Update returns when the server's filter
// is not newer than the installed one (an earlier update time, or the
// same time and a revision no higher) and neither Options.AcceptRebuild
// nor Force is set: a replay of an older filter.
var ErrOlder = perr.New("the server's filter is older than the installed one")

// ErrSameHeader is wrapped by the error Update returns when the server's
// filter has the installed one's header but other bits (or the header
// Update recorded of an installed filter with keys added in place since,
// and bits it lacks), and neither Options.AcceptRebuild nor Force is
// set: one of them was changed without a new revision, or the installed
// one, not yet confirmed, came from someone on the path.
var ErrSameHeader = perr.New("the server's filter has the installed one's header but other bits")

// ErrLockIn is wrapped by the error Update returns when the server's
// filter has an update time more than MaxClockSkew after this machine's
// clock, and Options.Force is not set: installed, it would make every
// later genuine filter look older ([ErrOlder]).
var ErrLockIn = perr.New("the server's filter has an update time no later filter could follow")

// MaxClockSkew is how far past this machine's clock a filter's update
// time may be: a publisher's clock a little ahead. It bounds how long a
// filter can keep the publisher's next one out.
const MaxClockSkew = time.Hour

// ErrStale is wrapped by the error Update returns when the server's
// filter was last updated more than Options.MaxAge ago.
var ErrStale = perr.New("the server's filter is older than the maximum age")

// refusalsLifted reports whether the ordering and superset rules are off
// for this call.
func (up *updater) refusalsLifted() bool { return up.opts.AcceptRebuild || up.opts.Force }

// unixTime is a header's update time as the file stores it: unsigned, so
// that times past 2^63 seconds order after the others.
func unixTime(h pkbf.Header) uint64 { return uint64(h.Updated.Unix()) }

// newer reports whether h orders after old: a later update time, or the
// same time and a higher revision.
func newer(h, old pkbf.Header) bool {
	t, o := unixTime(h), unixTime(old)
	return t > o || t == o && h.Revision > old.Revision
}

// inFuture reports whether h's update time is more than MaxClockSkew
// after now.
func inFuture(h pkbf.Header) bool {
	return unixTime(h) > uint64(time.Now().Add(MaxClockSkew).Unix())
}

// checkOrder refuses a filter h that is not newer than the installed old.
// An installed filter whose time is in the future orders nothing: its
// time is not the publisher's.
func (up *updater) checkOrder(old, h pkbf.Header) error {
	if newer(h, old) {
		return nil
	}
	if inFuture(old) {
		up.logf("the installed filter %s has an update time in the future (%s): it does not order the server's", up.path, text.Updated(old.Updated))
		return nil
	}
	return perr.Kind(ErrOlder, up.errorf("the filter is not newer than the installed filter %s: updated %s (revision %d), the installed one %s (revision %d); a replay of an older filter, or a publisher whose clock went back; not installed (accept-rebuild installs it)",
		up.path, text.Updated(h.Updated), h.Revision, text.Updated(old.Updated), old.Revision))
}

// checkFuture refuses a filter whose update time is in the future.
func (up *updater) checkFuture(h pkbf.Header) error {
	if !inFuture(h) {
		return nil
	}
	return perr.Kind(ErrLockIn, up.errorf("its update time %s is more than %s after this machine's clock (%s): installed, it would make every later filter look older; not installed (force installs it)",
		text.Updated(h.Updated), MaxClockSkew, time.Now().UTC().Format(time.RFC3339)))
}

// sameHeaderError refuses a filter with the installed header (or the
// header Update recorded of a filter with keys added in place since) and
// other bits.
func (up *updater) sameHeaderError(h pkbf.Header) error {
	what := "the header of the installed filter " + up.path
	bits := "other bits"
	if *up.old != h {
		what = "the header update recorded of the installed filter " + up.path
		bits = "bits the installed filter lacks (keys were added to it in place since)"
	}
	why := "one was changed without a new revision"
	if up.state.Header == headerHex(h) && !up.state.Confirmed {
		why += ", or the installed one came from someone on the path to the server (no pin vouches for it, and no later download had confirmed it)"
	}
	return perr.Kind(ErrSameHeader, up.errorf("the filter has %s (revision %d updated %s) and %s: %s; not installed (accept-rebuild installs it)",
		what, h.Revision, text.Updated(h.Updated), bits, why))
}

// checkAge refuses a header updated more than Options.MaxAge ago; what
// names the filter.
func (up *updater) checkAge(h pkbf.Header, what string) error {
	if up.opts.MaxAge == 0 {
		return nil
	}
	age := time.Since(h.Updated)
	if unixTime(h) <= uint64(time.Now().Unix()) && age > up.opts.MaxAge {
		ago := age.Round(time.Second).String()
		if age >= 48*time.Hour {
			ago = fmt.Sprintf("%d days", age/(24*time.Hour))
		}
		return perr.Kind(ErrStale, up.errorf("%s was updated %s (revision %d), %s ago, more than the maximum age of %s: the publisher has stopped, or the server keeps an old filter", what, text.Updated(h.Updated), h.Revision, ago, up.opts.MaxAge))
	}
	return nil
}
