package pkbfssh

import "github.com/pkbf/pkbf/internal/perr"

// ErrNoKey is wrapped by the errors of [ParseLine] and [ParseKey] (and
// [Line].Err): the text holds no key that sshd would read.
var ErrNoKey = perr.New("no OpenSSH key")

func noKeyf(format string, args ...any) error {
	return perr.Kind(ErrNoKey, perr.Errorf(format, args...))
}
