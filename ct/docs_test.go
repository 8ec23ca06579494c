package ct_test

import (
	"testing"

	"github.com/pkbf/pkbf/internal/doctest"
)

// TestDocs runs the blocks of docs/ct.md marked for this module (pkbf-ct
// built from this directory), as the main module's TestDocs runs the
// others. The harness is the main module's, reached as pkbflint's and
// examples/beam's tests reach it: from a checkout, in a test only; no
// package of this module imports an internal package (TestNoInternalPackages).
func TestDocs(t *testing.T) {
	doctest.Run(t, doctest.Config{Root: "..", Module: "ct", Files: []string{"docs/ct.md"}})
}
