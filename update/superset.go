package update

import (
	"fmt"
	"strings"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/perr"
)

// The superset rule: without a pin (or where keys were added in place),
// a new filter holds every bit the installed one has set. See "What
// Update trusts" in the package doc.

// ErrDropsBits is wrapped by the error Update returns when the superset
// rule holds (no pin vouches for the filter, or keys were added to the
// installed one in place) and the server's filter lacks bits the
// installed one has set, compared in place or folded onto its hash
// length, and neither Options.AcceptRebuild nor Force is set: keys it
// reports would stop being reported.
var ErrDropsBits = perr.New("the server's filter lacks bits the installed one has set")

// ErrWeaker is wrapped by the error Update returns when the superset rule
// holds and the server's filter has fewer hashes (k) or a shorter hash
// length (L) than the installed one, and neither Options.AcceptRebuild
// nor Force is set. Such a filter cannot be checked against the installed
// one's bits (its first k' probes are a subset of the installed k, and
// its positions mod 2^L' merge the installed ones), and a genuine newer
// revision never has it. A lower entry count is no refusal: the count
// cannot be verified, the bits can.
var ErrWeaker = perr.New("the server's filter is weaker than the installed one")

// ErrUnverifiable is wrapped by the error Update returns when the server's
// filter has more hashes or a longer hash length than the installed one,
// no pin vouches for it, and neither
// Options.AcceptRebuild nor Force is set: the installed bits check only
// part of each key's new probes, so a server could leave a key out.
var ErrUnverifiable = perr.New("the server's filter cannot be checked against the installed one")

// supersetRule reports whether the filter must hold the installed one's
// bits: no pin vouches for it, or keys may have been added to the
// installed one in place (which no pin vouches for leaving out).
func (up *updater) supersetRule() bool {
	return !up.pinnedElsewhere() || up.inPlace() != ""
}

// inPlace says why keys may have been added to the installed filter in
// place, or is "" when the installed filter is, header and file, the one
// Update installed and recorded. What Update cannot tell (no record, a
// file rewritten) counts as edited: a pin vouches for the publisher's
// keys, not for leaving out the operator's.
func (up *updater) inPlace() string {
	switch {
	case up.old == nil:
		return ""
	case up.changedMeanwhile:
		return "keys were added to it in place while this update ran"
	case up.state.Header == "":
		return fmt.Sprintf("update has no record of installing it (%s is missing or unreadable), so keys may have been added to it in place", up.statePath)
	case up.state.Header != headerHex(*up.old):
		return "keys were added to it in place since update installed it"
	case up.state.File != fileID(up.oldInfo):
		return "its file changed since update installed it (another size or modification time), so keys may have been added to it in place"
	}
	return ""
}

// checkWeaker refuses a filter h with fewer hashes or a shorter hash
// length than the installed filter old, or, without a pin, with more
// hashes or a longer hash length. Its entry count is no matter: an
// installed count raised by a server (as far as its fill check allows)
// must not keep the publisher's filters out.
func (up *updater) checkWeaker(old, h pkbf.Header) error {
	var what []string
	if h.HashCount < old.HashCount {
		what = append(what, fmt.Sprintf("hash count %d -> %d", old.HashCount, h.HashCount))
	}
	if h.HashLength < old.HashLength {
		what = append(what, fmt.Sprintf("hash length %d -> %d", old.HashLength, h.HashLength))
	}
	if len(what) > 0 {
		why := "a genuine newer revision has as many hashes and bits, and fewer cannot be checked against the installed bits"
		if up.pinnedElsewhere() { // pinned, the rule holds for keys added in place
			why = "fewer cannot be checked against the installed bits, and " + up.inPlace()
		}
		return perr.Kind(ErrWeaker, up.errorf("the filter is weaker than the installed filter %s (revision %d -> %d): %s; %s; not installed (accept-rebuild installs it)",
			up.path, old.Revision, h.Revision, strings.Join(what, ", "), why))
	}
	if up.pinnedElsewhere() || h.HashCount == old.HashCount && h.HashLength == old.HashLength {
		return nil // compared in place, or folded: a pin vouches for the new probes
	}
	// More hashes or a longer length: the installed bits vouch only for
	// the new filter's first probes of each key, folded; a server that
	// knows the keys can leave a later probe clear and pass every check.
	return perr.Kind(ErrUnverifiable, up.errorf("the filter has other parameters than the installed filter %s (hash count %d -> %d, hash length %d -> %d): its bits cannot all be checked against the installed ones; pin it (a signature, or a digest from another source); not installed (accept-rebuild installs it)",
		up.path, old.HashCount, h.HashCount, old.HashLength, h.HashLength))
}

// dropsBitsError refuses a filter that lacks dropped bits the installed
// filter has set.
func (up *updater) dropsBitsError(h pkbf.Header, dropped uint64) error {
	what := "keys it reports would stop being reported"
	if why := up.inPlace(); why != "" {
		what += "; " + why + ", and no pin vouches for leaving them out (the new filter is never merged with them)"
	}
	return perr.Kind(ErrDropsBits, up.errorf("the filter lacks %d of the bits set in the installed filter %s (revision %d -> %d): %s; not installed (accept-rebuild installs it)",
		dropped, up.path, up.old.Revision, h.Revision, what))
}
