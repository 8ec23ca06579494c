package pkbf

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Errors about a file that cannot be opened carry the package's prefix,
// name the file once, and stay fs.ErrNotExist; an empty path says so.
func TestOpenErrorsNameTheFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pkbf")
	open := map[string]func(string) error{
		"Open":     func(p string) error { _, err := Open(p); return err },
		"Edit":     func(p string) error { _, err := Edit(p); return err },
		"OpenLive": func(p string) error { _, err := OpenLive(p, LiveOptions{Interval: -1}); return err },
	}
	for name, fn := range open {
		for path, want := range map[string]string{
			"":      "pkbf: no filter file: the path is empty: ",
			missing: "pkbf: ",
		} {
			err := fn(path)
			if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, fs.ErrNotExist) || strings.Count(err.Error(), missing) > 1 {
				t.Errorf("%s(%q) = %v, want an error starting %q, wrapping fs.ErrNotExist, naming the file once", name, path, err, want)
			}
		}
	}
}
