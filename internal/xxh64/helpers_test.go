package xxh64

import (
	"testing"
	"time"
)

func nanotime() int64 { return time.Now().UnixNano() }

// pageEnd returns n bytes that end where a page ends, with no page after
// it (mapped, then the next page unmapped), where the system allows.
func pageEnd(t *testing.T, n int) []byte { return pageEndOS(t, n) }
