package main

import (
	"bytes"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

// sources are the command's non-test Go files, by name.
func sources(t *testing.T) map[string][]byte {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[string][]byte{}
	for _, name := range files {
		if !strings.HasSuffix(name, "_test.go") {
			srcs[name] = testkit.ReadFile(t, name)
		}
	}
	return srcs
}

// The command only parses flags and prints (issue 43, item 1): each
// integration's logic lives in its package (pkbfhttp, pkbfssh, nixbloom,
// stepca, update, weakkeys), and cmd/pkbf stays at most 2,800 lines of
// non-test Go (3,644 before serve's service left it; 2,600 before weak
// build and weak info, whose flags, progress and printing take 200; help
// prose and completion scripts are in help/).
func TestCommandLineBudget(t *testing.T) {
	total := 0
	for _, b := range sources(t) {
		total += bytes.Count(b, []byte("\n")) // as wc -l counts
	}
	if total > 2800 {
		t.Errorf("cmd/pkbf is %d lines of non-test Go, more than 2,800: move the logic a Go program would reuse to its package", total)
	}
}

// Flags are declared one way (issue 43, item 6): each command's flags
// struct binds its fields with XxxVar in its command method, which the
// table names as it names the run function, with no adapter closure; no
// source reads a flag's value back by name.
func TestFlagsDeclaredOneWay(t *testing.T) {
	byName := regexp.MustCompile(`flag\.Getter|\.Get\(\)\.\(|Lookup\([^)]*\)\.Value`)
	for name, b := range sources(t) {
		for i, line := range strings.Split(string(b), "\n") {
			// alias makes a flag's Value another name's: it reads no value.
			if byName.MatchString(line) && !strings.Contains(line, "c.Var(c.Lookup(long).Value, short") {
				t.Errorf("%s:%d reads a flag by name: %s", name, i+1, strings.TrimSpace(line))
			}
		}
	}
	funcName := func(f any) string { return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name() }
	for _, s := range subcommands() {
		if run := funcName(s.run); !regexp.MustCompile(`^github\.com/pkbf/pkbf/cmd/pkbf\.run[A-Z]\w*$`).MatchString(run) {
			t.Errorf("%s: the table's run is %s, not a run function", s.name, run)
		}
		if s.flags == nil {
			continue
		}
		if flags := funcName(s.flags); !regexp.MustCompile(`^github\.com/pkbf/pkbf/cmd/pkbf\.\(\*\w+Flags\)\.command-fm$`).MatchString(flags) {
			t.Errorf("%s: the table's flags is %s, not a flags struct's command method", s.name, flags)
		}
	}
}
