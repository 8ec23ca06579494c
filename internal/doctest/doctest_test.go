package doctest

import (
	"errors"
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
