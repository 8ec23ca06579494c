// Package pkbftls refuses TLS peers whose certificates hold a key a pkbf
// filter says is probably compromised, in the handshake, on either side of
// a crypto/tls connection: a server refuses such a client, a client such a
// server. The handshake fails with a bad_certificate alert to the peer and,
// on this side, a [*KeyError] naming the certificate and its key's
// fingerprint.
//
// Make the tls.Config a server or a client uses with [Config], from the
// one you built, once it is complete, and with a [keycheck.KeyChecker]
// over a filter that follows its file as new ones are renamed over it:
//
//	filter, err := pkbf.OpenLive("/var/lib/pkbf/pwnedkeys.pkbf", pkbf.LiveOptions{})
//	if err != nil {
//		return err
//	}
//	srv.TLSConfig = pkbftls.Config(cfg, keycheck.New(filter, keycheck.Options{}))
//
// The check lives in the config's VerifyConnection (and, on a server, in
// the configs its GetConfigForClient returns): setting either of them
// afterwards replaces it, silently. Config returns a copy, so that later
// changes to cfg cannot reach it; do not change the copy. [Install]
// changes cfg in place, and must then be the last change to it.
//
// The check is a [tls.Config.VerifyConnection] hook ([VerifyConnection]
// returns it alone). It runs after crypto/tls has verified the peer's
// chain, on every handshake, resumed ones included (a session resumed
// after the filter learned its key is refused), and also where that
// verification is off or replaced (InsecureSkipVerify, a
// VerifyPeerCertificate of one's own), where a VerifyPeerCertificate hook
// would be given no verified chains.
//
// # Which certificates
//
// Those that certify the peer. When crypto/tls verified the peer's chain
// (ConnectionState.VerifiedChains), every certificate of every verified
// chain but its last, the local trust anchor: the peer's own, the
// intermediates it sent that the chains use, and those the platforms'
// verifiers (Windows, macOS, iOS: used when RootCAs, or a server's
// ClientCAs, is nil) added from their caches. A compromised
// intermediate's key signs certificates for anyone who holds it, so it is
// as bad as a compromised leaf's. Each of these must have a key the filter
// lacks, and one pkbf can read.
//
// The other certificates the peer presented certify nothing in this
// handshake: one of them is refused only when the filter probably holds
// its key (a peer handing out a compromised key's certificate deals in
// compromised keys, and another verifier may build its chain through it),
// not when pkbf cannot read it, so that an extra certificate of an
// algorithm pkbf does not know does not fail a good handshake.
//
// Every certificate's key is looked up as given and, where pkbf's strict
// parse refuses the SPKI but crypto/x509 read a key from it (a NULL after
// the BIT STRING, say), as crypto/x509 read it, the key crypto/tls uses: a
// compromised key is refused whatever the oddity of its encoding.
//
// Where verification is off or the caller's own (InsecureSkipVerify, a
// VerifyPeerCertificate that decides), there are no verified chains, and
// any certificate presented may be the one the caller trusts: each must
// have a key the filter lacks, and one pkbf can read.
//
// The local trust anchors are not checked: the operator chose them, and a
// compromised root is found once with pkbf check on the CA bundle, not on
// every handshake. A peer that presents no certificate is not this hook's
// business: whether one is required is tls.Config.ClientAuth's.
//
// # Failing closed
//
// A key the filter probably holds refuses the handshake; so does one it
// cannot answer for: a filter file cut short under it ([pkbf.ErrFileChanged]),
// or a key pkbf cannot read in a certificate that certifies the peer (see
// above). The filter is a Bloom filter: a clean key is
// refused with the filter's false-positive rate (see pkbf check --confirm
// to tell the two apart by asking the pwnedkeys API).
//
// # Cost
//
// A key the filter lacks costs what [keycheck.Checker.Contains] costs:
// one to three queries, with no allocation; docs/performance.md has the
// figures against a whole handshake.
package pkbftls

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
)

// ErrCompromised is wrapped by the error of a handshake refused because a
// certificate's key is probably compromised (a [*KeyError] whose verdict
// is Probably).
var ErrCompromised = perr.New("probably compromised key")

// ErrWeak is wrapped by the error of a handshake refused because the
// weak-key checks (keycheck.Options.Weak) found a reason to refuse a
// certificate's key that the filter does not hold (a [*KeyError] whose
// verdict has Findings).
var ErrWeak = perr.New("weak key")

// A KeyError is the error [VerifyConnection]'s hook returns, and the
// handshake with it: a certificate of the peer's has a key the filter
// probably holds (it wraps [ErrCompromised]), one the weak-key checks
// refuse (it wraps [ErrWeak]), or one that could not be checked (it wraps
// the verdict's Err: [pkbf.ErrFileChanged], or [keys.ErrInvalidKey]).
//
// [keys.ErrInvalidKey]: https://pkg.go.dev/github.com/pkbf/pkbf/keys#ErrInvalidKey
type KeyError struct {
	// Where names the certificate: "peer certificate 0" for the peer's
	// own, "peer certificate 1" for the first intermediate it sent, as in
	// ConnectionState.PeerCertificates; "certificate 1 of verified chain
	// 0" for one it did not send.
	Where string
	// Certificate is the certificate.
	Certificate *x509.Certificate
	// Verdict is the KeyChecker's on its key: one to refuse
	// ([keycheck.Verdict.Refuse]) with the Key's Fingerprint (the
	// lowercase hex SHA-256 of its canonical SPKI, as pwnedkeys and
	// openssl name keys), or Err.
	Verdict keycheck.Verdict
}

func (e *KeyError) Error() string {
	subject := subjectText(e.Certificate)
	v := &e.Verdict
	switch {
	case v.Probably && len(v.Findings) == 0:
		return fmt.Sprintf("%s%s (%s) has a %s (SHA-256 of its SPKI %s)", perr.Prefix, e.Where, subject, perr.Text(ErrCompromised), v.Key.Fingerprint)
	case v.Refuse():
		return fmt.Sprintf("%s%s (%s) has a key to refuse (SHA-256 of its SPKI %s): %s", perr.Prefix, e.Where, subject, v.Key.Fingerprint, v.Reason())
	}
	return fmt.Sprintf("%s%s (%s): the key could not be checked, so the peer is refused: %s", perr.Prefix, e.Where, subject, perr.Text(v.Err))
}

// Unwrap returns ErrCompromised for a key the filter probably holds,
// ErrWeak for one the weak-key checks refuse, and the verdict's Err
// otherwise.
func (e *KeyError) Unwrap() error {
	switch {
	case e.Verdict.Probably:
		return ErrCompromised
	case e.Verdict.Refuse():
		return ErrWeak
	}
	return e.Verdict.Err
}

// maxSubject bounds the subject a KeyError quotes: it is the peer's text.
const maxSubject = 256

// subjectText is the certificate's subject as an error shows it: in
// RFC 4514 form, cut at maxSubject bytes on a character boundary, and
// quoted when the whole subject holds anything but printable UTF-8 (the
// peer wrote it, and it goes to logs).
func subjectText(c *x509.Certificate) string {
	s := c.Subject.String()
	if s == "" {
		return "empty subject"
	}
	quote := !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0
	cut := len(s) > maxSubject
	if cut {
		i := maxSubject
		for i > maxSubject-utf8.UTFMax && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i]
	}
	if quote {
		s = strconv.Quote(s)
	}
	if cut {
		s += "..."
	}
	return s
}

// VerifyConnection returns a function for [tls.Config.VerifyConnection],
// on a server or a client, that refuses the handshake with a [*KeyError]
// when a certificate of the peer's has a key kc finds probably
// compromised, or, in a certificate that certifies the peer, one kc
// cannot answer for (the package documentation says which certificates).
// It returns nil for a peer that presented no certificate. The function
// is safe for concurrent use; for a peer whose keys a
// [*keycheck.Checker] finds clean it allocates nothing.
//
// kc is called from concurrent handshakes, with a certificate's DER
// SubjectPublicKeyInfo; a [*keycheck.Checker] over a [*pkbf.Live] follows
// a filter file as new ones are renamed over it, as a server that runs for
// months needs. Close the filter only once the configs that use it are
// done with. VerifyConnection panics if kc is nil: a TLS config without
// its check must not be made.
//
// It replaces a VerifyConnection of the config's own: [Install] keeps it.
func VerifyConnection(kc keycheck.KeyChecker) func(tls.ConnectionState) error {
	if c, ok := kc.(*keycheck.Checker); kc == nil || ok && c == nil {
		panic("pkbftls: no KeyChecker: every peer's keys would go unchecked")
	}
	return func(cs tls.ConnectionState) error { return check(kc, &cs) }
}

// check looks up the keys of the certificates of cs in f: with verified
// chains, those of the chains (but their anchors), which must be clean and
// readable, then the other certificates the peer presented, which must
// not be compromised; without, every certificate presented, which must be
// clean and readable.
func check(f keycheck.KeyChecker, cs *tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 && len(cs.VerifiedChains) == 0 {
		return nil
	}
	if len(cs.VerifiedChains) == 0 {
		for i, c := range cs.PeerCertificates {
			if err := checkKey(f, cs, c, -1, i, true); err != nil {
				return err
			}
		}
		return nil
	}
	for n, chain := range cs.VerifiedChains {
		for i, c := range certifying(chain) {
			if !inChains(cs.VerifiedChains[:n], c) && !in(chain[:i], c) {
				if err := checkKey(f, cs, c, n, i, true); err != nil {
					return err
				}
			}
		}
	}
	for i, c := range cs.PeerCertificates {
		if !inChains(cs.VerifiedChains, c) {
			if err := checkKey(f, cs, c, -1, i, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// certifying returns the certificates of a verified chain that certify
// the peer: all but the last, the local trust anchor.
func certifying(chain []*x509.Certificate) []*x509.Certificate {
	if len(chain) == 0 {
		return nil
	}
	return chain[:len(chain)-1]
}

// inChains reports whether c certifies the peer in one of chains.
func inChains(chains [][]*x509.Certificate, c *x509.Certificate) bool {
	for _, chain := range chains {
		if in(certifying(chain), c) {
			return true
		}
	}
	return false
}

// checkKey looks up the key of c, certificate i of verified chain n, or of
// the peer's certificates when n is -1. Unless strict, a key pkbf cannot
// read passes: the certificate certifies nothing in this handshake.
func checkKey(f keycheck.KeyChecker, cs *tls.ConnectionState, c *x509.Certificate, n, i int, strict bool) error {
	v := verdict(f, c)
	if !v.Refuse() && (v.Err == nil || !strict && errors.Is(v.Err, keys.ErrInvalidKey)) {
		return nil
	}
	if n >= 0 {
		if j := index(cs.PeerCertificates, c); j >= 0 {
			n, i = -1, j
		}
	}
	where := "peer certificate " + strconv.Itoa(i)
	if n >= 0 {
		where = fmt.Sprintf("certificate %d of verified chain %d", i, n)
	}
	return &KeyError{Where: where, Certificate: c, Verdict: v}
}

// verdict is f's on the key of c, as the certificate gives it or, where
// pkbf's strict parse refuses those bytes, as crypto/x509 read them: it
// reads SPKIs with a NULL after the BIT STRING or after the algorithm's
// parameters, bytes after an RSA or DSA key, or more than a DSA key's p,
// q and g in its parameters, and crypto/tls and other Go
// verifiers use the key it yields. A compromised key is refused whatever
// the oddity of its bytes; a clean one keeps the first verdict, so that an
// SPKI pkbf cannot read still refuses a certificate that certifies the
// peer.
func verdict(f keycheck.KeyChecker, c *x509.Certificate) keycheck.Verdict {
	v := f.CheckKey(c.RawSubjectPublicKeyInfo)
	if v.Err == nil || !errors.Is(v.Err, keys.ErrInvalidKey) || c.PublicKey == nil {
		return v
	}
	der, err := keys.MarshalPublicKey(c.PublicKey)
	if err != nil || bytes.Equal(der, c.RawSubjectPublicKeyInfo) {
		return v
	}
	if read := f.CheckKey(der); read.Refuse() || read.Err != nil && !errors.Is(read.Err, keys.ErrInvalidKey) {
		return read // compromised or weak, or the checker could not answer
	}
	return v
}

// index returns the place of c among certs, or -1: crypto/tls puts the
// peer's certificates themselves in its chains, the platforms' verifiers
// copies of them.
func index(certs []*x509.Certificate, c *x509.Certificate) int {
	for i, p := range certs {
		if p == c || bytes.Equal(p.Raw, c.Raw) {
			return i
		}
	}
	return -1
}

// in reports whether c is among certs.
func in(certs []*x509.Certificate, c *x509.Certificate) bool { return index(certs, c) >= 0 }

// Config returns a copy of base (a new config when base is nil) with kc's
// check installed as [Install] does. Call it once base is complete, and
// use the copy as it is: a VerifyConnection or GetConfigForClient set on
// the copy afterwards replaces the check; one set on base afterwards does
// not reach the copy.
func Config(base *tls.Config, kc keycheck.KeyChecker) *tls.Config {
	cfg := base.Clone()
	if cfg == nil {
		cfg = &tls.Config{}
	}
	Install(cfg, kc)
	return cfg
}

// Install adds kc's check ([VerifyConnection]) to cfg, a server's or a
// client's: cfg's own VerifyConnection, if it has one, runs first and
// both must pass. Install must be the last change to cfg: a
// VerifyConnection or GetConfigForClient set afterwards replaces the
// check, and nothing then refuses a compromised key. [Config], which
// returns a copy, keeps later changes to cfg from reaching it. The configs a server's GetConfigForClient returns are
// given the check as well (a shallow copy of each, made per handshake,
// so the check cannot be bypassed by one of them), but for cfg itself.
// Call Install before cfg is used, once for each filter. It panics if kc
// is nil, as VerifyConnection does.
func Install(cfg *tls.Config, kc keycheck.KeyChecker) {
	hook := VerifyConnection(kc)
	cfg.VerifyConnection = both(cfg.VerifyConnection, hook)
	get := cfg.GetConfigForClient
	if get == nil {
		return
	}
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		c, err := get(hello)
		if c == nil || err != nil || c == cfg {
			return c, err
		}
		c = c.Clone()
		c.VerifyConnection = both(c.VerifyConnection, hook)
		return c, nil
	}
}

// both returns a VerifyConnection that runs own, if not nil, then hook.
func both(own, hook func(tls.ConnectionState) error) func(tls.ConnectionState) error {
	if own == nil {
		return hook
	}
	return func(cs tls.ConnectionState) error {
		if err := own(cs); err != nil {
			return err
		}
		return hook(cs)
	}
}
