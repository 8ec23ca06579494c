package main

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/doctest"
	"github.com/pkbf/pkbf/internal/testkit"
)

// docBlocks returns the fenced blocks of docs/NAME whose text contains
// each of marks, failing unless there are want of them.
func docBlocks(t *testing.T, name string, want int, marks ...string) []doctest.Block {
	t.Helper()
	blocks, err := doctest.Parse("docs/"+name, testkit.ReadFile(t, filepath.Join("../../docs", name)))
	if err != nil {
		t.Fatal(err)
	}
	var found []doctest.Block
	for _, b := range blocks {
		text := strings.Join(b.Text, "\n")
		all := true
		for _, m := range marks {
			all = all && strings.Contains(text, m)
		}
		if all {
			found = append(found, b)
		}
	}
	if len(found) != want {
		t.Fatalf("docs/%s has %d blocks with %q, want %d", name, len(found), marks, want)
	}
	return found
}

var (
	longFlag = regexp.MustCompile(`--[a-z][a-z0-9-]*`)
	// "  --max-size SIZE", "  -f, --force": a line of a command's flag list.
	flagLine = regexp.MustCompile(`^  (?:-[a-z], )?(--[a-z][a-z0-9-]*)`)
)

// TestDocsOperatorsSynopses: the synopses of pkbf update and pkbf serve
// in docs/operators.md name every flag of the command, and only those.
func TestDocsOperatorsSynopses(t *testing.T) {
	for _, command := range []string{"update", "serve"} {
		b := docBlocks(t, "operators.md", 1, "pkbf "+command+" [")[0]
		shown := longFlag.FindAllString(strings.Join(b.Text, "\n"), -1)
		r := runWith(t, nil, command, "--help")
		var flags []string
		for _, l := range strings.Split(r.stdout+r.stderr, "\n") {
			if m := flagLine.FindStringSubmatch(l); m != nil {
				flags = append(flags, m[1])
			}
		}
		if len(flags) == 0 {
			t.Fatalf("pkbf %s --help lists no flags:\n%s%s", command, r.stdout, r.stderr)
		}
		for _, f := range shown {
			if !slices.Contains(flags, f) {
				t.Errorf("%s: the synopsis of pkbf %s shows %s, which it does not have", b.Where(), command, f)
			}
		}
		for _, f := range flags {
			if !slices.Contains(shown, f) {
				t.Errorf("%s: the synopsis of pkbf %s lacks %s", b.Where(), command, f)
			}
		}
	}
}
