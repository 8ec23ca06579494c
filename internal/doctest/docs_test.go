package doctest_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/doctest"
)

// notYetRun are the documents whose commands no test runs yet; each is
// still checked to parse. To have one run, delete its line (and mark its
// blocks as the package documentation says).
var notYetRun = []string{
	"docs/ct.md",
	"docs/nix.md",
	"docs/operators.md",
	"docs/performance.md",
	"docs/sshd.md",
	"docs/stepca.md",
	"docs/tls.md",
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

// TestDocs runs every command README.md, docs/ and the examples' READMEs
// show and compares its output with theirs, and compiles their Go blocks.
func TestDocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("builds pkbf and runs the documents' commands (not again under -short or -race: the race detector sees none of it)")
	}
	var run []string
	for _, f := range documents(t) {
		if !slices.Contains(notYetRun, f) {
			run = append(run, f)
		}
	}
	doctest.Run(t, doctest.Config{Root: "../..", Files: run, Modules: nestedModules})
}

// TestDocsNotYetRunParse: the documents no test runs yet still parse, so
// that joining them is a matter of marking blocks.
func TestDocsNotYetRunParse(t *testing.T) {
	for _, f := range notYetRun {
		src, err := os.ReadFile(filepath.Join("../..", f))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := doctest.Parse(f, src); err != nil {
			t.Logf("%s is not ready to join TestDocs: %v", f, err)
		}
	}
}

// TestReadmeTestsEveryModule: the README's test commands test every module
// of the repository, one "go test ./..." each, and .ci/run runs them as
// the README shows them (issue 43, item 12: the one command tested only
// the main module, and ct, pkbflint and examples/beam went untested
// silently).
func TestReadmeTestsEveryModule(t *testing.T) {
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := doctest.Parse("README.md", src)
	if err != nil {
		t.Fatal(err)
	}
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
