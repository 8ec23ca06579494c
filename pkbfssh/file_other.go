//go:build !unix

package pkbfssh

import (
	"os/user"

	"github.com/pkbf/pkbf/internal/perr"
)

// readFile: sshd's checks are Unix ownership and modes.
func readFile(path string, u *user.User, opts Options) ([]byte, error) {
	return nil, perr.Errorf("reading %s: reading authorized_keys files as sshd does needs Unix file ownership", path)
}
