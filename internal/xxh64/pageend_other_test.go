//go:build !unix

package xxh64

import "testing"

func pageEndOS(t *testing.T, n int) []byte { return make([]byte, n) }
