package pkbfbeam_test

import (
	"testing"

	"github.com/pkbf/pkbf/internal/doctest"
)

// TestDocs runs the blocks of docs/beam.md and this module's README marked
// for it (the pipelines on the local runner, compared with the pkbf
// command), as the main module's TestDocs runs the others.
func TestDocs(t *testing.T) {
	doctest.Run(t, doctest.Config{Root: "../..", Module: "examples/beam", Files: []string{"docs/beam.md", "examples/beam/README.md"}})
}
