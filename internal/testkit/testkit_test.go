package testkit

import (
	"errors"
	"fmt"
	"testing"
)

var errSentinel = errors.New("pkbf: sentinel")

func TestCheckErr(t *testing.T) {
	CheckErr(t, fmt.Errorf("pkbf: wrapped: %w", errSentinel), errSentinel)
	for _, bad := range []error{errors.New("pkbf: other"), fmt.Errorf("no prefix: %w", errSentinel)} {
		ft := &fakeT{TB: t}
		func() {
			defer func() { recover() }()
			CheckErr(ft, bad, errSentinel)
		}()
		if !ft.failed {
			t.Errorf("CheckErr(%v) passed", bad)
		}
	}
}

// fakeT records a Fatalf instead of ending the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}
