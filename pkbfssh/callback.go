package pkbfssh

import (
	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf/internal/perr"
)

// ErrCompromised is wrapped by the error [PublicKeyCallback] returns for a
// key the filter probably holds, and by [FilterLines]'s for such a key
// offered.
var ErrCompromised = perr.New("probably compromised key")

// PublicKeyCallback returns a callback for ssh.ServerConfig that refuses,
// before next runs, a key the filter f probably holds and, for an OpenSSH
// certificate, one whose certified key or signing CA key f probably holds;
// next decides on every other key. A key it cannot read is refused too, and
// so is every key while the filter's file is cut short. Its errors wrap
// [ErrCompromised], [ErrNoKey] or pkbf.ErrFileChanged; it is safe for
// concurrent use if next is.
func PublicKeyCallback(f Filter, next func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error)) func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) {
	return func(conn ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		k, _, err := parseBlob(key.Marshal(), true)
		if err != nil {
			return nil, perr.Kind(ErrNoKey, perr.Errorf("user %s offered a key pkbf cannot read: %w", conn.User(), err))
		}
		switch held, err := k.CompromisedKey(f); {
		case err != nil:
			return nil, err
		case held == k:
			return nil, perr.Kind(ErrCompromised, perr.Errorf("user %s offered %s key %s: probably compromised", conn.User(), k.Type, k.Fingerprint))
		case held != nil:
			return nil, perr.Kind(ErrCompromised, perr.Errorf("user %s offered %s key %s: its CA key %s is probably compromised", conn.User(), k.Type, k.Fingerprint, held.Fingerprint))
		}
		return next(conn, key)
	}
}
