// Package pkbfssh keeps keys a pwnedkeys filter probably holds out of
// OpenSSH's authorized_keys, reading the files and their lines as sshd
// does, so that the key pkbf judges on a line is the key sshd would
// accept.
//
// The gate is [FilterLines]: it writes the lines of a file that may stay
// for the key sshd offers and reports those left out. [ReadFile] reads a
// user's file as sshd does, and [ExpandPath] turns an AuthorizedKeysFile
// pattern into its path. [ParseKey] reads the key sshd offers an
// AuthorizedKeysCommand (%t %k): nothing is printed when the filter
// probably holds it, and without it no cert-authority line is (its CA key
// lets in certificates of keys pkbf never sees).
//
// A Go SSH server (golang.org/x/crypto/ssh) wraps its config with
// [ServerConfig]: in every step of authentication, multi-step ones
// included, a compromised key, or a certificate of one or by a
// compromised CA, is refused before the server's own callback runs. There
// sshd's own limits on keys and certificates do not apply, only
// x/crypto/ssh's.
//
// # Failing closed
//
// A line is kept only when pkbfssh reads its key as sshd does and the
// filter lacks it, or when sshd skips it (blank lines and comments). A
// line whose key cannot be read is left out, never passed on: sshd's
// parser and this one might disagree on it. Keys are read by OpenSSH's
// rules (sshkey.c and auth2-pubkeyfile.c of OpenSSH 9.2): every type name
// sshd accepts, including the signature algorithm names rsa-sha2-256 and
// rsa-sha2-512, certificates and security keys; white space inside the
// base64; lines of any length; quoted options. A certificate is
// compromised when the filter holds the key it certifies or its CA key.
//
// Everything here is safe for concurrent use.
package pkbfssh
