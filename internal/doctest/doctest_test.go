package doctest

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		want, got string
		ok        bool
	}{
		{"same", "a\nb", "a\nb", true},
		{"nothing shown, nothing printed", "", "", true},
		{"nothing shown, something printed", "", "a", false},
		{"a line differs", "a\nb", "a\nc", false},
		{"a line more", "a", "a\nb", false},
		{"a line fewer", "a\nb", "a", false},
		{"… in a line", "took …ms", "took 12ms", true},
		{"… in a line, empty", "took …ms", "took ms", true},
		{"… in a line, the rest differs", "took …ms", "took 12s", false},
		{"… alone, no line", "a\n…\nb", "a\nb", true},
		{"… alone, lines", "a\n…\nb", "a\nx\ny\nb", true},
		{"… alone, at the end", "a\n…", "a\nx", true},
		{"… alone, the last line differs", "a\n…\nb", "a\nx\nc", false},
		{"regexp characters are plain", "a.b (c)", "axb (c)", false},
	} {
		if got := Match(split(tc.want), split(tc.got)); got != tc.ok {
			t.Errorf("%s: Match = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestParse(t *testing.T) {
	doc := "# Title\n\n" +
		"<!-- doctest: exit 1 -->\n" +
		"```console\n$ pkbf check f k\nprobably\tx\n\n$ echo a \\\n  b\na b\n```\n\n" +
		"<!-- doctest: prelude\nvar x []byte\n-->\n<!-- doctest: run f k\nline\n-->\n" +
		"```go\nfmt.Println(x)\n```\n\n" +
		"1. A step:\n\n   ```console\n   $ ls\n   ```\n\n" +
		"<!-- doctest: skip needs the network -->\n\n" +
		"```toml\nA = 1\n```\n" +
		"<!-- doctest: module examples/beam -->\ntext between\n```text\nout\n```\n"
	blocks, err := Parse("d.md", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 5 {
		t.Fatalf("%d blocks, want 5", len(blocks))
	}
	s := blocks[0]
	if !s.Session() || s.Exit != 1 || len(s.Commands) != 2 || s.Commands[0].Text != "pkbf check f k" ||
		strings.Join(s.Commands[0].Want, "|") != "probably\tx" || s.Commands[1].Text != "echo a \\\n  b" || s.Commands[0].Line != 5 {
		t.Errorf("session: %+v", s)
	}
	g := blocks[1]
	if g.Session() || g.Info != "go" || g.Prelude != "var x []byte" || !g.Ran || strings.Join(g.Run, " ") != "f k" || strings.Join(g.RunWant, "|") != "line" {
		t.Errorf("go block: %+v", g)
	}
	if l := blocks[2]; !l.Session() || l.Commands[0].Text != "ls" {
		t.Errorf("indented block in a list: %+v", l)
	}
	if blank := blocks[3]; blank.Skip != "needs the network" || blank.Info != "toml" {
		t.Errorf("a directive and a blank line before a block: %+v", blank)
	}
	if toml := blocks[3]; toml.WriteFile != "" {
		t.Errorf("a block without the file directive is saved as %q", toml.WriteFile)
	}
	if text := blocks[4]; text.Module != "" {
		t.Errorf("a directive before text, then a block: the directive reached the block: %+v", text)
	}

	for _, tc := range []struct {
		name, doc, err string
	}{
		{"no info string, no prompt", "```\npkbf check f k\n```\n", ErrUnmarked.Error()},
		{"fence never closed", "```console\n$ ls\n", "never closed"},
		{"unknown directive", "<!-- doctest: skipp reason -->\n```console\n$ ls\n```\n", `unknown directive "skipp"`},
		{"skip without a reason", "<!-- doctest: skip -->\n```console\n$ ls\n```\n", "skip without a reason"},
		{"exit without a number", "<!-- doctest: exit one -->\n```console\n$ ls\n```\n", "exit wants one number"},
		{"file without a name", "<!-- doctest: file -->\n```json\n{}\n```\n", "file wants one file name"},
		{"file on a session", "<!-- doctest: file x.sh -->\n```console\n$ ls\n```\n", "file on a shell session"},
	} {
		_, err := Parse("d.md", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: Parse = %v, want an error containing %q", tc.name, err, tc.err)
		}
		if tc.name == "no info string, no prompt" && !errors.Is(err, ErrUnmarked) {
			t.Errorf("%s: not ErrUnmarked: %v", tc.name, err)
		}
	}
}

func TestGoFile(t *testing.T) {
	for _, tc := range []struct {
		name, block, prelude string
		want, notWant        []string
	}{
		{"whole file", "package main\n\nfunc main() {}", "", []string{"package main\n\nfunc main() {}"}, []string{"import"}},
		// docs/tls.md's programs open with their package comment.
		{"whole file after its package comment", "// Command x does y.\n/* more */\npackage main\n\nfunc main() { fmt.Println() }", "",
			[]string{"// Command x does y.\n/* more */\npackage main\n"}, []string{"import", "func main() {\n"}},
		{"fragment: imports by name, not in comments or strings", "// errors.Is\nfmt.Println(\"os.Args\", pkbf.Fingerprint(nil))", "",
			[]string{`import "fmt"`, `import "github.com/pkbf/pkbf"`, "func main() {\n// errors.Is"}, []string{`"errors"`, `"os"`}},
		{"fragment with its own imports", "import (\n\t\"fmt\"\n\tz \"github.com/zmap/zlint/v3\"\n)\n\nfmt.Println(z.Version)\nlog.Print()", "",
			[]string{"import (\n\t\"fmt\"", `import "log"`, "func main() {\n\nfmt.Println"}, []string{`import "fmt"`}},
		{"prelude", "fmt.Println(ctx)", "var ctx = context.Background()", []string{`import "context"`, "var ctx = context.Background()\n\nfunc main()"}, nil},
	} {
		b := &Block{Info: "go", Text: strings.Split(tc.block, "\n"), Prelude: tc.prelude}
		src, err := GoFile(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(src), w) {
				t.Errorf("%s: no %q in\n%s", tc.name, w, src)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(string(src), w) {
				t.Errorf("%s: %q in\n%s", tc.name, w, src)
			}
		}
	}
}

// Issue 43, items 8-9: the benchmark commands a document names in its
// text (docs/performance.md quotes every figure with one, in prose and in
// table cells) are commands it tells a user to run: Parse finds them, as
// blocks with the bench directive, and reads a table cell's "\|" as "|".
func TestInlineBenchmarks(t *testing.T) {
	doc := "# Figures\n\n" +
		"Measured with `go test -run '^$' -bench BenchmarkA -benchtime 300x\n" +
		"-count 3 ./x`, and `go test ./...` runs the tests.\n\n" +
		"| case | figure |\n| --- | --- |\n" +
		"| b (`go test -run '^$' -bench 'BenchmarkB\\|BenchmarkC' -count 3 .`) | 1 ns |\n\n" +
		"<!-- doctest: bench -->\n```console\n$ go test -run '^$' -bench BenchmarkD -benchtime 20x ./y\n```\n\n" +
		"```console\n$ echo `go test -bench X` is not a span of the text\n```\n"
	blocks, err := Parse("perf.md", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	type cmd struct {
		line int
		text string
	}
	var got []cmd
	for _, b := range blocks {
		if !b.Bench {
			continue
		}
		if !b.NoCompare || len(b.Commands) != 1 {
			t.Errorf("%s: %+v: want one command, not compared", b.Where(), b)
		}
		got = append(got, cmd{b.Commands[0].Line, b.Commands[0].Text})
	}
	want := []cmd{
		{3, "go test -run '^$' -bench BenchmarkA -benchtime 300x -count 3 ./x"},
		{8, "go test -run '^$' -bench 'BenchmarkB|BenchmarkC' -count 3 ."},
		{12, "go test -run '^$' -bench BenchmarkD -benchtime 20x ./y"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("benchmark commands:\n%v\nwant\n%v", got, want)
	}
	if _, err := Parse("d.md", []byte("<!-- doctest: bench -->\n```text\nnot a command\n```\n")); err == nil {
		t.Error("bench on a block with no command: no error")
	}
}

func TestBenchOnce(t *testing.T) {
	for _, tc := range []struct{ name, cmd, want string }{
		{"benchtime and count", "go test -run '^$' -bench X -benchtime 300x -count 3 ./x", "go test -benchtime 1x -count 1 -run '^$' -bench X ./x"},
		{"with =", "go test -bench=X -benchtime=2s -count=2 .", "go test -benchtime 1x -count 1 -bench=X ."},
		{"neither", "go test ./update/ -run '^$' -bench 'A|B'", "go test -benchtime 1x -count 1 ./update/ -run '^$' -bench 'A|B'"},
		{"an environment first", "GOMAXPROCS=1 go test -bench X -count 5 .", "GOMAXPROCS=1 go test -benchtime 1x -count 1 -bench X ."},
	} {
		if got := BenchOnce(tc.cmd); got != tc.want {
			t.Errorf("%s: BenchOnce(%q) = %q, want %q", tc.name, tc.cmd, got, tc.want)
		}
	}
}

func TestBenchmarksRun(t *testing.T) {
	procs := fmt.Sprintf("-%d", runtime.GOMAXPROCS(0))
	if runtime.GOMAXPROCS(0) == 1 {
		procs = ""
	}
	out := []string{
		"goos: linux",
		"BenchmarkBatch/128KiB/HalfSet/Probably" + procs + "  \t       1\t  9724 ns/op",
		"BenchmarkBatch/256MiB/AllSet/Probably" + procs + "  \t       1\t  9724 ns/op",
		"BenchmarkCheck" + procs + " \t 1\t 5 ns/op",
		"BenchmarkHandler/clean_P-256" + procs + " \t 1\t 5 ns/op",
		"--- SKIP: BenchmarkServe",
		"    serve_test.go:12: no step-ca here",
		"PASS",
	}
	for _, tc := range []struct {
		name, cmd       string
		missing, skiped []string
		err             bool
	}{
		{"every level", "go test -bench 'BenchmarkBatch$/(128KiB|256MiB)/(HalfSet|AllSet)$' .", nil, nil, false},
		{"anchored, no sub-benchmarks", "go test -bench 'BenchmarkCheck$' .", nil, nil, false},
		{"a name with a dash", "go test -bench BenchmarkHandler/P-256$ .", nil, nil, false},
		{"a renamed benchmark", "go test -bench 'BenchmarkCheck$|BenchmarkGone' .", []string{"BenchmarkGone"}, nil, false},
		{"a sub-benchmark that is gone", "go test -bench 'BenchmarkBatch$/(128KiB|1GiB)' .", []string{"1GiB"}, nil, false},
		{"a level that is gone", "go test -bench 'BenchmarkCheck$/Sub' .", []string{"Sub"}, nil, false},
		{"skipped counts, below it too", "go test -bench BenchmarkServe/X .", nil, []string{"BenchmarkServe"}, false},
		{"an escaped pipe stays one alternative", `go test -bench 'BenchmarkCheck\|BenchmarkHandler' .`, []string{`BenchmarkCheck\|BenchmarkHandler`}, []string{"BenchmarkServe"}, false},
		{"no -bench", "go test -run X .", nil, nil, true},
		{"a pattern that does not compile", "go test -bench 'Benchmark(' .", nil, nil, true},
	} {
		missing, skipped, err := BenchmarksRun(tc.cmd, out)
		if (err != nil) != tc.err || !slices.Equal(missing, tc.missing) {
			t.Errorf("%s: missing %q, error %v; want %q, error %v", tc.name, missing, err, tc.missing, tc.err)
		}
		if tc.skiped != nil && !slices.Equal(skipped, tc.skiped) {
			t.Errorf("%s: skipped %q, want %q", tc.name, skipped, tc.skiped)
		}
	}
}
