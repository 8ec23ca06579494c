package cli

import "strings"

// Nearest returns, for "did you mean ...?" in a command's errors, the
// candidate nearest to s in edit distance (a candidate s begins, s two
// characters or more, counts as distance 1), if it is near enough to be a
// typo of s: at most a third of s's length away, and 1 for short names.
// Ties go to the first in byte order; "" when none is near enough.
func Nearest(s string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		d := distance(s, c)
		if strings.HasPrefix(c, s) && len(s) >= 2 {
			d = min(d, 1)
		}
		if d < bestDist || d == bestDist && best != "" && c < best {
			best, bestDist = c, d
		}
	}
	if bestDist > max(1, len(s)/3) {
		return ""
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
