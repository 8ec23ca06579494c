// Package cli is what pkbf's commands read and do that no library has
// reason to: numbers of bytes as people type them on a command line (1024,
// 64KiB, 1M, 64 GiB), what a mistyped name was probably meant to be, and
// how a first and a second Ctrl-C end a run.
package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// units are the suffixes ParseSize reads, longest first, with their powers of
// two; the first four are those FormatSize writes.
var units = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}, {"k", 10}, {"B", 0}}

// errNotASize is ParseSize's error. It has no "pkbf: " prefix: the flag
// package shows it after the flag and value it refused.
var errNotASize = errors.New("not a size: give bytes, or a number with KiB, MiB, GiB or TiB")

// ParseSize reads a number of bytes: a decimal integer (negative too: the
// caller decides what it accepts), optionally followed, after optional
// spaces, by a binary unit (KiB, MiB, GiB, TiB, their one-letter forms K,
// k, M, G, T, or B). It refuses anything else, and values past int64.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	shift := uint(0)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, shift = strings.TrimSpace(rest), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > math.MaxInt64>>shift || n < math.MinInt64>>shift {
		return 0, errNotASize
	}
	return n << shift, nil
}

// FormatSize writes n in the largest binary unit that divides it (64GiB),
// or as plain bytes; ParseSize reads it back.
func FormatSize(n int64) string {
	for _, u := range units[:4] {
		if n != 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.suffix)
		}
	}
	return strconv.FormatInt(n, 10)
}

// Group writes n with a space between groups of three digits, as a
// count of bytes reads best: "268 435 480".
func Group(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && c != '-' && s[i-1] != '-' && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}
