package doctest

import (
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

var (
	benchRunsRE    = regexp.MustCompile(`\s-(?:test\.)?(?:benchtime|count)(?:=|\s+)\S+`)
	benchPatternRE = regexp.MustCompile(`\s-(?:test\.)?bench(?:=|\s+)(?:'([^']*)'|"([^"]*)"|([^\s'"]+))`)
	benchResultRE  = regexp.MustCompile(`^(Benchmark\S*)\s+\d+\s`)
	benchSkipRE    = regexp.MustCompile(`^\s*--- SKIP: (Benchmark\S*)`)
)

// BenchOnce returns cmd, a "go test ... -bench" command, run once: its
// -benchtime and -count left out, "-benchtime 1x -count 1" put after
// "go test".
func BenchOnce(cmd string) string {
	cmd = benchRunsRE.ReplaceAllString(cmd, "")
	before, after, ok := strings.Cut(cmd, "go test ")
	if !ok {
		return cmd
	}
	return before + "go test -benchtime 1x -count 1 " + after
}

// BenchmarksRun reads the output of cmd, a "go test ... -bench PATTERN"
// command, and returns the alternatives of PATTERN (split at "|" and, for
// sub-benchmarks, at "/", as go test splits it) that no benchmark printed
// matches, and the benchmarks that were skipped. A skipped benchmark
// counts as present for its own level and those below it. The error is
// for a command with no -bench pattern, or one that does not compile.
func BenchmarksRun(cmd string, output []string) (missing, skipped []string, err error) {
	m := benchPatternRE.FindStringSubmatch(" " + cmd)
	if m == nil {
		return nil, nil, errors.New("doctest: a benchmark command without -bench PATTERN")
	}
	pattern := m[1] + m[2] + m[3]
	type result struct {
		elems   []string
		skipped bool
	}
	var results []result
	procs := "-" + strconv.Itoa(runtime.GOMAXPROCS(0))
	for _, l := range output {
		if r := benchResultRE.FindStringSubmatch(l); r != nil {
			name := r[1]
			if runtime.GOMAXPROCS(0) > 1 {
				name = strings.TrimSuffix(name, procs)
			}
			results = append(results, result{elems: strings.Split(name, "/")})
		} else if r := benchSkipRE.FindStringSubmatch(l); r != nil {
			results = append(results, result{elems: strings.Split(r[1], "/"), skipped: true})
			skipped = append(skipped, r[1])
		}
	}
	levels := splitTop(pattern, '/')
	var whole []*regexp.Regexp // each level's pattern, as go test matches it
	for _, elem := range levels {
		re, err := regexp.Compile(elem)
		if err != nil {
			return nil, nil, fmt.Errorf("doctest: -bench %q: %w", pattern, err)
		}
		whole = append(whole, re)
	}
	// matches: r matched the levels above level, and alt at level; a
	// skipped benchmark matches every level below its own.
	matches := func(r result, level int, alt *regexp.Regexp) bool {
		for j := 0; j <= level; j++ {
			re := whole[j]
			if j == level {
				re = alt
			}
			if j >= len(r.elems) {
				return r.skipped
			}
			if !re.MatchString(r.elems[j]) {
				return false
			}
		}
		return true
	}
	for level, elem := range levels {
		for _, alt := range alternatives(elem) {
			re, err := regexp.Compile(alt)
			if err != nil {
				return nil, nil, fmt.Errorf("doctest: -bench %q: %w", pattern, err)
			}
			if !slices.ContainsFunc(results, func(r result) bool { return matches(r, level, re) }) {
				missing = append(missing, alt)
			}
		}
	}
	return missing, skipped, nil
}

// alternatives splits one level of a -bench pattern at its top-level
// "|"; an alternative that is one group, "(a|b)" with perhaps a "$"
// after it, is split inside the group too.
func alternatives(elem string) []string {
	var alts []string
	for _, a := range splitTop(elem, '|') {
		inner, suffix := a, ""
		if strings.HasSuffix(inner, "$") {
			inner, suffix = inner[:len(inner)-1], "$"
		}
		if strings.HasPrefix(inner, "(") && strings.HasSuffix(inner, ")") && len(splitTop(inner[1:len(inner)-1], ')')) == 1 {
			for _, b := range splitTop(inner[1:len(inner)-1], '|') {
				alts = append(alts, b+suffix)
			}
			continue
		}
		alts = append(alts, a)
	}
	return alts
}

// splitTop splits s at each sep outside parentheses and brackets, and not
// escaped with a backslash.
func splitTop(s string, sep byte) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == '(' || c == '[':
			depth++
		case (c == ')' || c == ']') && depth > 0 && c != sep:
			depth--
		case c == sep && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}
