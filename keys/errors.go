package keys

import "github.com/pkbf/pkbf/internal/perr"

func keyErrorf(format string, args ...any) error {
	return perr.Errorf("%w: "+format, append([]any{ErrInvalidKey}, args...)...)
}

// ErrInvalidKey is wrapped by every error that reports a key, certificate
// or CSR that could not be read: from [SPKI], [Canonical], [Encodings],
// [Forms] and [Key.SPKI].
var ErrInvalidKey = perr.New("invalid key")

// ErrUnsupportedKey is wrapped, beside [ErrInvalidKey], by the errors that
// report a key that is valid as far as pkbf can tell but that pkbf cannot
// give the SPKI of: an OpenSSH key type or an algorithm it does not know,
// a private key on a curve it cannot compute on that does not carry its
// public key, a container in a form it does not read.
var ErrUnsupportedKey = perr.New("unsupported key")

// ErrEncryptedKey is wrapped, beside [ErrInvalidKey], by the errors that
// report a key whose public key cannot be read without a passphrase: an
// encrypted PKCS#8 or PEM key, a PKCS#12 file without (or with the wrong)
// passphrase.
var ErrEncryptedKey = perr.New("encrypted key")

// ErrNoPassphrase is wrapped, beside [ErrEncryptedKey], by the errors
// that report an encrypted key that a passphrase given with
// [Scanner.SetPassphrases] could open: a PKCS#12 file, when none of the
// passphrases given opens it.
var ErrNoPassphrase = perr.New("no passphrase opens the key")

func unsupportedErrorf(format string, args ...any) error {
	return perr.Kind(ErrUnsupportedKey, keyErrorf(format, args...))
}

func encryptedErrorf(format string, args ...any) error {
	return perr.Kind(ErrEncryptedKey, keyErrorf(format, args...))
}

// passphraseErrorf reports an encrypted key that a passphrase could open.
func passphraseErrorf(format string, args ...any) error {
	return perr.Kind(ErrNoPassphrase, encryptedErrorf(format, args...))
}
