package doctest_test

import (
	"os"
	"path/filepath"
	"slices"
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
	if testing.Short() {
		t.Skip("builds pkbf and runs the documents' commands")
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
