//go:build !unix

package pkbf

import (
	"errors"
	"fmt"
)

// inPlace is not available here: editing in place needs mmap and flock.
type inPlace struct{ err error }

func openInPlace(path string) (*Filter, error) {
	return nil, fmt.Errorf("pkbf: Edit %s: editing in place needs a Unix system: %w", path, errors.ErrUnsupported)
}

func (p *inPlace) fail(err error) bool     { return false }
func (p *inPlace) lock(*Filter, bool) bool { return false }
func (p *inPlace) unlock()                 {}
func (p *inPlace) writeHeader(Header)      {}
func (p *inPlace) sync(*Filter) error      { return p.err }
