package pkbfssh

import (
	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keycheck"
)

// ErrCompromised is wrapped by the error [PublicKeyCallback] returns for a
// key the filter probably holds, and by [FilterLines]'s for such a key
// offered.
var ErrCompromised = perr.New("probably compromised key")

// ServerConfig returns a copy of base (a new config when base is nil) on
// which no authentication path lets in a key f finds probably
// compromised: its public key callback is wrapped as [PublicKeyCallback]
// wraps it, and the callbacks of every later step that a callback names
// in an *ssh.PartialSuccessError (password, keyboard-interactive, none,
// GSSAPI, verified public key) are wrapped in turn. Call it once base is
// complete (host keys added) and use the copy as it is: a callback set on
// it afterwards is not checked. It is safe for concurrent use if base's
// callbacks are. It panics if f is nil: a config that checks no key must
// not be made.
func ServerConfig(base *ssh.ServerConfig, f keycheck.KeyChecker) *ssh.ServerConfig {
	var c ssh.ServerConfig
	if base != nil {
		c = *base
	}
	g := newGuard(f)
	next := g.callbacks(ssh.ServerAuthCallbacks{
		PasswordCallback:            c.PasswordCallback,
		PublicKeyCallback:           c.PublicKeyCallback,
		KeyboardInteractiveCallback: c.KeyboardInteractiveCallback,
		GSSAPIWithMICConfig:         c.GSSAPIWithMICConfig,
	})
	c.PasswordCallback, c.PublicKeyCallback = next.PasswordCallback, next.PublicKeyCallback
	c.KeyboardInteractiveCallback, c.GSSAPIWithMICConfig = next.KeyboardInteractiveCallback, next.GSSAPIWithMICConfig
	if none := c.NoClientAuthCallback; none != nil {
		c.NoClientAuthCallback = func(conn ssh.ConnMetadata) (*ssh.Permissions, error) {
			return g.after(none(conn))
		}
	}
	if verified := c.VerifiedPublicKeyCallback; verified != nil {
		c.VerifiedPublicKeyCallback = func(conn ssh.ConnMetadata, key ssh.PublicKey, p *ssh.Permissions, alg string) (*ssh.Permissions, error) {
			return g.after(verified(conn, key, p, alg))
		}
	}
	return &c
}

// PublicKeyCallback returns a callback for ssh.ServerConfig that refuses,
// before next runs, a key f finds probably compromised and, for an OpenSSH
// certificate, one whose certified key or signing CA key it does;
// next decides on every other key. A key it cannot read is refused too, and
// so is every key while the filter's file is cut short. When next answers
// with an *ssh.PartialSuccessError, the callbacks it names for the next
// step are wrapped as [ServerConfig] wraps them, so that a key offered
// there is checked too; the config's other callbacks are not: wrap the
// whole config with ServerConfig. Its errors wrap [ErrCompromised],
// [ErrNoKey] or pkbf.ErrFileChanged; it is safe for concurrent use if
// next is. It panics if f is nil, as ServerConfig does.
func PublicKeyCallback(f keycheck.KeyChecker, next func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error)) func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) {
	return newGuard(f).publicKey(next)
}

// A guard wraps a server's authentication callbacks so that no step lets
// in a key its filter probably holds.
//
// x/crypto/ssh (v0.58, server.go) moves to the callbacks of a
// PartialSuccessError's Next when a callback returns one, whichever
// method it was, and calls them directly: a callback that is not wrapped
// there would see a compromised key unchecked. It tells a partial success
// by the error's dynamic type alone (an error wrapping one is a failure),
// and so does the guard.
type guard struct{ f keycheck.KeyChecker }

// newGuard returns the guard of f, which must be a KeyChecker.
func newGuard(f keycheck.KeyChecker) guard {
	if c, ok := f.(*keycheck.Checker); f == nil || ok && c == nil {
		panic("pkbfssh: no KeyChecker: every key offered would go unchecked")
	}
	return guard{f}
}

// callbacks returns c with each callback set wrapped.
func (g guard) callbacks(c ssh.ServerAuthCallbacks) ssh.ServerAuthCallbacks {
	c.PublicKeyCallback = g.publicKey(c.PublicKeyCallback)
	if pw := c.PasswordCallback; pw != nil {
		c.PasswordCallback = func(conn ssh.ConnMetadata, password []byte) (*ssh.Permissions, error) {
			return g.after(pw(conn, password))
		}
	}
	if ki := c.KeyboardInteractiveCallback; ki != nil {
		c.KeyboardInteractiveCallback = func(conn ssh.ConnMetadata, client ssh.KeyboardInteractiveChallenge) (*ssh.Permissions, error) {
			return g.after(ki(conn, client))
		}
	}
	if gss := c.GSSAPIWithMICConfig; gss != nil && gss.AllowLogin != nil {
		allow := gss.AllowLogin
		wrapped := *gss
		wrapped.AllowLogin = func(conn ssh.ConnMetadata, srcName string) (*ssh.Permissions, error) {
			return g.after(allow(conn, srcName))
		}
		c.GSSAPIWithMICConfig = &wrapped
	}
	return c
}

// after passes on a callback's answer, with the callbacks of a partial
// success's next step wrapped: in a new PartialSuccessError, as the
// callback may return the same one to every connection.
func (g guard) after(p *ssh.Permissions, err error) (*ssh.Permissions, error) {
	if ps, ok := err.(*ssh.PartialSuccessError); ok && ps != nil {
		return p, &ssh.PartialSuccessError{Next: g.callbacks(ps.Next)}
	}
	return p, err
}

// publicKey wraps a public key callback (nil stays nil: the method is not
// offered).
func (g guard) publicKey(next func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error)) func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) {
	if next == nil {
		return nil
	}
	return func(conn ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		if err := g.check(conn, key); err != nil {
			return nil, err
		}
		return g.after(next(conn, key))
	}
}

// check refuses a key the filter probably holds, or cannot answer for.
func (g guard) check(conn ssh.ConnMetadata, key ssh.PublicKey) error {
	k, err := goKey(key)
	if err != nil {
		return perr.Kind(ErrNoKey, perr.Errorf("user %s offered a key pkbf cannot read: %w", conn.User(), err))
	}
	switch held, err := k.CompromisedKey(g.f); {
	case err != nil:
		return err
	case held == k:
		return perr.Kind(ErrCompromised, perr.Errorf("user %s offered %s key %s: probably compromised", conn.User(), k.Type, k.Fingerprint))
	case held != nil:
		return perr.Kind(ErrCompromised, perr.Errorf("user %s offered %s key %s: its CA key %s is probably compromised", conn.User(), k.Type, k.Fingerprint, held.Fingerprint))
	}
	return nil
}

// goKey reads a key x/crypto/ssh has parsed, under its limits, not sshd's:
// a certificate's principals, which sshd bounds and x/crypto/ssh does not,
// are not read, and the certified key and the CA key come from what
// x/crypto/ssh made of the certificate (it refuses a CA key that is itself
// a certificate).
func goKey(key ssh.PublicKey) (*Key, error) {
	cert, ok := key.(*ssh.Certificate)
	if !ok {
		k, _, err := parseBlob(key.Marshal(), false, false)
		return k, err
	}
	if cert.Key == nil || cert.SignatureKey == nil {
		return nil, noKeyf("certificate has no key or no CA key")
	}
	k, _, err := parseBlob(cert.Key.Marshal(), false, false)
	if err != nil {
		return nil, err
	}
	ca, _, err := parseBlob(cert.SignatureKey.Marshal(), false, false)
	if err != nil {
		return nil, perr.Kind(ErrNoKey, perr.Errorf("certificate's CA key: %w", err))
	}
	k.Type, k.CA = cert.Type(), ca
	return k, nil
}
