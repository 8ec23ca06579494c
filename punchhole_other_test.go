//go:build unix && !linux

package pkbf

import (
	"errors"
	"os"
)

// punchHole is Linux's fallocate(2): elsewhere the case is skipped.
func punchHole(*os.File, int64) error { return errors.ErrUnsupported }
