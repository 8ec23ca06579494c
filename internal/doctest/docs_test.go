package doctest_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/doctest"
)

// notYetRun are the documents whose commands no test runs yet (TestDocs
// names them in its log). To have one run, delete its line and mark its
// blocks as the package documentation says. (docs/performance.md was
// one: its commands, benchmarks named in its text, are run once each.)
var notYetRun = []string{}

// A need is what a document runs that a machine with only Go may lack,
// and the variable that makes its absence fail the test instead of
// leaving the document out (.ci/run sets them).
type need struct {
	what    string
	missing func() bool
	require string
}

// tool is the need of a program on PATH.
func tool(name, require string) need {
	return need{name, func() bool { _, err := exec.LookPath(name); return err != nil }, require}
}

// stepCAVersion is the step-ca docs/stepca.md's recipe builds.
const stepCAVersion = "v0.30.2"

// needs are the documents' needs.
var needs = map[string][]need{
	"docs/nix.md":       {tool("nix-build", "PKBF_REQUIRE_NIX")},
	"docs/keys.md":      {tool("openssl", "PKBF_REQUIRE_TLS_PEERS")},
	"docs/tls.md":       {tool("openssl", "PKBF_REQUIRE_TLS_PEERS"), tool("curl", "PKBF_REQUIRE_TLS_PEERS")},
	"docs/operators.md": {tool("curl", "PKBF_REQUIRE_TLS_PEERS")},
	// The recipe makes the CA's certificates with openssl and builds
	// step-ca from the Go module proxy (or the module cache).
	"docs/stepca.md": {tool("openssl", "PKBF_REQUIRE_TLS_PEERS"), {
		"github.com/smallstep/certificates@" + stepCAVersion + " from the Go module proxy",
		func() bool {
			cmd := exec.Command("go", "mod", "download", "github.com/smallstep/certificates@"+stepCAVersion)
			cmd.Dir = os.TempDir() // outside any module
			cmd.Env = append(os.Environ(), "GOFLAGS=")
			return cmd.Run() != nil
		},
		"PKBF_REQUIRE_STEPCA",
	}},
}

// nestedModules are the repository's nested modules; a block marked
// "module DIR" is run by DIR's own test of the documents.
var nestedModules = []string{"ct", "examples/beam", "pkbflint"}

// documents are README.md, docs/*.md and the examples' READMEs.
func documents(t *testing.T) []string {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Glob("../../examples/*/README.md")
	files := []string{"README.md"}
	for _, d := range append(docs, examples...) {
		rel, _ := filepath.Rel("../..", d)
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

// missingNeed is the first need of document f this machine lacks, if
// any.
func missingNeed(f string) (need, bool) {
	for _, n := range needs[f] {
		if n.missing() {
			return n, true
		}
	}
	return need{}, false
}

// TestDocs runs every command README.md, docs/ and the examples' READMEs
// show and compares its output with theirs, and compiles their Go blocks.
func TestDocs(t *testing.T) {
	var run, notRun []string
	for _, f := range documents(t) {
		if n, missing := missingNeed(f); missing {
			if os.Getenv(n.require) != "" {
				t.Errorf("%s needs %s, which this machine lacks (%s is set)", f, n.what, n.require)
			}
			t.Logf("%s not run: it needs %s, which this machine lacks", f, n.what)
			notRun = append(notRun, f)
			continue
		}
		if slices.Contains(notYetRun, f) {
			notRun = append(notRun, f)
		} else {
			run = append(run, f)
		}
	}
	t.Logf("documents whose commands no test runs yet: %v", notRun)
	doctest.Run(t, doctest.Config{Root: "../..", Files: run, Modules: nestedModules})
}

// readmeBlocks returns the README's blocks, as TestDocs reads them.
func readmeBlocks(t *testing.T) []doctest.Block {
	t.Helper()
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := doctest.Parse("README.md", src)
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// TestReadmeTestsEveryModule: the README's test commands test every module
// of the repository, one "go test ./..." each, and .ci/run runs them as
// the README shows them (issue 43, item 12: the one command tested only
// the main module, and ct, pkbflint and examples/beam went untested
// silently).
func TestReadmeTestsEveryModule(t *testing.T) {
	blocks := readmeBlocks(t)
	var commands []string
	for _, b := range blocks {
		for _, c := range b.Commands {
			if strings.Contains(c.Text, "go test ./...") {
				commands = append(commands, c.Text)
			}
		}
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	ciLines := strings.Split(string(ci), "\n")
	for _, c := range commands {
		if !slices.Contains(ciLines, c) {
			t.Errorf(".ci/run does not run the README's %q", c)
		}
	}
	err = filepath.WalkDir("../..", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == "testdata" || strings.HasPrefix(e.Name(), ".")) && path != "../.." {
			return filepath.SkipDir
		}
		if e.Name() != "go.mod" {
			return nil
		}
		dir, _ := filepath.Rel("../..", filepath.Dir(path))
		want := "go test ./..."
		if dir != "." {
			want = fmt.Sprintf("(cd %s && go test ./...)", filepath.ToSlash(dir))
		}
		if !slices.Contains(commands, want) {
			t.Errorf("module %s: the README's test commands %q lack %q", dir, commands, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var linesClaim = regexp.MustCompile(`(?s)examples/check.{0,80}?\bin (\d+) lines|check --json in (\d+) lines`)

// TestExamplesCheckLineCount: what the README and the program itself say
// of examples/check's length is its length (issue 43, item 13: it said 30
// lines of 28).
func TestExamplesCheckLineCount(t *testing.T) {
	src, err := os.ReadFile("../../examples/check/main.go")
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(src), "\n")
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	claims := 0
	for name, text := range map[string][]byte{"README.md": readme, "examples/check/main.go": src} {
		for _, m := range linesClaim.FindAllSubmatch(text, -1) {
			claims++
			if got := string(m[1]) + string(m[2]); got != strconv.Itoa(n) {
				t.Errorf("%s: %q, but examples/check/main.go has %d lines", name, m[0], n)
			}
		}
	}
	if claims < 2 {
		t.Errorf("found %d claims of examples/check's length, want the README's and its own", claims)
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)\s]*)?\)`)

// TestDocsLinksResolve: every relative link of the documents names a file
// that is there (issue 43, item 13: examples/beam's README pointed to a
// README section that had moved to docs/beam.md).
func TestDocsLinksResolve(t *testing.T) {
	for _, f := range documents(t) {
		src, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(src), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join("../..", filepath.Dir(f), target)); err != nil {
				t.Errorf("%s links to %s: %v", f, target, err)
			}
		}
		if strings.Contains(strings.Join(strings.Fields(string(src)), " "), `"Beyond one machine" in the repository's README`) {
			t.Errorf("%s points to the README's \"Beyond one machine\", which is docs/beam.md", f)
		}
	}
}

// TestReadmeManyKeysMatchesCheck: the README's many-keys program writes
// as pkbf check does, buffered, flushed when the pipeline idles, the
// source appended without a string a verdict (issue 43, item 10: it wrote
// each verdict with fmt.Println on unbuffered stdout, one write call each,
// 1.4-1.9 times pkbf check's time, while the README said it matched).
// The speed itself is measured, not asserted: see the README.
func TestReadmeManyKeysMatchesCheck(t *testing.T) {
	blocks := readmeBlocks(t)
	found := false
	for _, b := range blocks {
		text := strings.Join(b.Text, "\n")
		if b.Info != "go" || !strings.Contains(text, "checker.Check(") {
			continue
		}
		found = true
		for _, want := range []string{"bufio.NewWriter", "Idle:", "Source.Append("} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the many-keys program lacks %s, which pkbf check has", b.Where(), want)
			}
		}
		if strings.Contains(text, "fmt.Print") {
			t.Errorf("%s: the many-keys program prints with fmt, a write call a verdict", b.Where())
		}
		if !b.Ran {
			t.Errorf("%s: the many-keys program is not run by TestDocs (no run directive)", b.Where())
		}
	}
	if !found {
		t.Error("no Go block of the README calls checker.Check")
	}
}

var benchCommandRE = regexp.MustCompile("(?m)`go test [^`]*-bench[^`]*`|^\\s*\\$ go test .*-bench")

// TestEveryBenchmarkCommandIsRun: every benchmark command of every
// document, in the text or in a block, is one TestDocs runs (once, with
// the bench directive) or skips for a reason it logs, and no document is
// left out (issue 43, items 8-9: docs/performance.md, whose commands are
// all benchmarks named in its text, was not run at all, and the benchmark
// blocks of docs/sshd.md and docs/stepca.md were skipped as timings).
func TestEveryBenchmarkCommandIsRun(t *testing.T) {
	if len(notYetRun) > 0 {
		t.Errorf("documents no test runs: %v", notYetRun)
	}
	total := 0
	for _, f := range documents(t) {
		src, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		want := len(benchCommandRE.FindAllString(string(src), -1))
		total += want
		blocks, err := doctest.Parse(f, src)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, b := range blocks {
			for _, c := range b.Commands {
				if strings.HasPrefix(c.Text, "go test ") && strings.Contains(c.Text, "-bench") {
					got++
					if !b.Bench {
						t.Errorf("%s:%d: %s: not run as a benchmark (skip %q)", f, c.Line, c.Text, b.Skip)
					}
				}
			}
		}
		if got != want {
			t.Errorf("%s: %d benchmark commands in the text, %d found by doctest.Parse", f, want, got)
		}
	}
	if total == 0 {
		t.Error("no benchmark command in any document")
	}
}

var skipCommandRE = regexp.MustCompile("`(go test -v [^`]*--- SKIP[^`]*)`")

// TestReadmeSkipCommandShowsReasons: the README's command that lists the
// skipped tests "with their reasons" shows them, run as written on a
// module whose tests skip (issue 43, item 12: with -v, go test prints a
// skip's reason before its "--- SKIP" line, and the README's grep -A1
// showed the line after it instead).
func TestReadmeSkipCommandShowsReasons(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs a module's tests")
	}
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := skipCommandRE.FindStringSubmatch(string(src))
	if m == nil {
		t.Fatal("the README has no `go test -v ... --- SKIP` command")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/skips\n\ngo 1.21\n",
		"a_test.go": `package skips

import "testing"

func TestLogsThenSkips(t *testing.T) { t.Log("set up"); t.Skip("reason one: no widget here") }
func TestRuns(t *testing.T)          {}
func TestSub(t *testing.T) {
	t.Run("inner", func(t *testing.T) { t.Skipf("reason %s", "two") })
}
`,
		"b/b_test.go": "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) { t.Skip(\"reason three\") }\n",
	}
	for name, text := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "-c", m[1])
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", m[1], err, out)
	}
	for _, reason := range []string{"reason one: no widget here", "reason two", "reason three"} {
		if !strings.Contains(string(out), reason) {
			t.Errorf("%s prints no %q:\n%s", m[1], reason, out)
		}
	}
}
