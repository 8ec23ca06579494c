//go:build unix && !linux

package pkbfssh

import (
	"os"
)

// openAsUser opens path for the user id, name: as pkbf when pkbf runs as
// the user, else with pkbf's rights after checking the mode bits
// (openChecked): only Linux lets one thread take another user's rights.
func openAsUser(path string, id ids, name string) (*os.File, error) {
	if uint32(os.Geteuid()) == id.uid {
		return openRegular(path)
	}
	return openChecked(path, id, name)
}
