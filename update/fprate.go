package update

import (
	"math"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/perr"
)

// The false-positive ceilings: no filter answers "probably" for most keys,
// and one no pin vouches for stays near the installed filter's rate. See
// "What Update trusts" in the package doc.

// ErrSaturated is wrapped by the error Update returns when the server's
// filter answers "probably" for too many of the keys it does not hold (its
// fill ratio to the power of its hash count), and Options.Force is not
// set: more than MaxFalseYes, or, without a pin that vouches for it, more
// than Options.MaxFPRate and twice the installed filter's rate. Every gate
// that reads it would refuse keys for nothing.
var ErrSaturated = perr.New("the server's filter answers yes for too many keys")

// MaxFalseYes is the highest false-positive rate Update installs without
// Options.Force, pinned or not.
const MaxFalseYes = 0.5

// falseYes is the false-positive rate of a filter with header h and set
// bits set: its fill ratio to the power of its hash count.
func falseYes(h pkbf.Header, set uint64) float64 {
	return math.Pow(float64(set)/float64(h.Bits()), float64(h.HashCount))
}

// checkSaturated refuses a filter whose false-positive rate, with set of
// its bits set, is above MaxFalseYes.
func (up *updater) checkSaturated(h pkbf.Header, set uint64) error {
	rate := falseYes(h, set)
	if rate <= MaxFalseYes {
		return nil
	}
	return perr.Kind(ErrSaturated, up.errorf("the filter has %d of %d bits set: with %d hashes it answers \"probably\" for %.0f%% of the keys it does not hold, above %.0f%%; not installed (force installs it)",
		set, h.Bits(), h.HashCount, 100*rate, 100*MaxFalseYes))
}

// checkFPRate refuses a filter no pin vouches for whose false-positive
// rate, with set of its bits set, is above Options.MaxFPRate and twice the
// installed filter's: one interception may not flood the filter with
// bits. The installed filter's bits are counted only when the rate is
// over MaxFPRate.
func (up *updater) checkFPRate(h pkbf.Header, set uint64) error {
	rate, ceiling, installed := falseYes(h, set), up.opts.MaxFPRate, 0.0
	if rate <= ceiling {
		return nil
	}
	if up.old != nil {
		oldSet, err := countSet(up.installed, up.old.Bits()/8)
		if err != nil {
			return err
		}
		installed = falseYes(*up.old, oldSet)
		ceiling = max(ceiling, 2*installed)
	}
	if rate <= ceiling {
		return nil
	}
	return perr.Kind(ErrSaturated, up.errorf("the filter has %d of %d bits set: with %d hashes it answers \"probably\" for %.3g of the keys it does not hold, above %.3g, the most for a filter no pin vouches for (the larger of max-fp-rate %v and twice the installed filter's %.3g); not installed (a higher max-fp-rate allows it)",
		set, h.Bits(), h.HashCount, rate, ceiling, up.opts.MaxFPRate, installed))
}
