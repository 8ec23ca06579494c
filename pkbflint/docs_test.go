package pkbflint_test

import (
	"testing"

	"github.com/pkbf/pkbf/internal/doctest"
)

// TestDocs runs the blocks of docs/zlint.md marked for this module (the
// zlint command built with the lint, the Go program), as the main
// module's TestDocs runs the others.
func TestDocs(t *testing.T) {
	doctest.Run(t, doctest.Config{Root: "..", Module: "pkbflint", Files: []string{"docs/zlint.md"}})
}
