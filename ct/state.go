package ct

import (
	"io"

	"github.com/pkbf/pkbf/internal/mapfile"
)

// writeAtomic replaces the file at path with b in one step, as pkbf writes
// every file it replaces (mapfile.WriteAtomic): b goes to a new file in
// the same directory, which is synced and renamed over path, and the
// directory synced, so that a crash at any moment leaves the old state or
// the new one. A symbolic link at path stays, and the file it leads to is
// replaced; anything but a regular file there is refused. The file keeps
// its mode, or gets 0644.
func writeAtomic(path string, b []byte) error {
	return mapfile.WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}, nil)
}
