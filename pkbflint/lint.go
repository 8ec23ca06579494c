// Package pkbflint is a zlint lint that reports a certificate whose
// subject public key a pkbf filter says is probably compromised:
// e_pkbf_compromised_key; and the Baseline Requirements' weak-key checks
// (6.1.1.3, 6.1.5, 6.1.6) as eight lints, e_br_debian_weak_key and the
// others docs/zlint.md lists (e_br_debian_weak_key is Fatal until its
// Debian weak-key file is configured). A certificate authority runs them
// with zlint's other lints before issuing, and over what it issued.
//
// Importing the package registers the lints in zlint's global registry,
// as zlint's own lints are:
//
//	import _ "github.com/pkbf/pkbf/pkbflint"
//
// It is configured through zlint's configuration file (zlint -config, or
// lint.NewConfigFromFile and Registry.SetConfiguration):
//
//	[e_pkbf_compromised_key]
//	Filter = "/var/lib/pkbf/pwnedkeys.pkbf"
//	Confirm = false
//	API = "https://v1.pwnedkeys.com"
//
// (zlint matches the keys without regard to case; zlint -exampleConfig
// prints them.)
//
// Its results: Pass when the filter does not hold the key, under any
// encoding it may hold it in; Error when it probably does, with the key's
// fingerprint; Fatal when no filter is configured or the filter cannot be
// read, so that a pipeline that stops on Fatal never issues unchecked.
// With confirm, a key the filter holds is asked about on the pwnedkeys API:
// a key it does not know (the filter's false positive) passes, and one it
// cannot answer about stays an Error.
//
// The answer is that of pkbf check on the certificate: the lint hands the
// certificate's DER to keycheck's Checker.CheckKey. A filter is opened
// once a process (pkbf.OpenLive: a file renamed over it is picked up).
package pkbflint

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zmap/zcrypto/x509"
	"github.com/zmap/zlint/v3/lint"
	"github.com/zmap/zlint/v3/util"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/pwnedkeys"
)

// Name is the lint's name, and the section of zlint's configuration it
// reads.
const Name = "e_pkbf_compromised_key"

func init() {
	lint.RegisterCertificateLint(&lint.CertificateLint{
		LintMetadata: lint.LintMetadata{
			Name:        Name,
			Description: "The subject public key must not be one a pkbf filter of compromised keys (pwnedkeys.com's, or the CA's own) holds",
			Citation:    "CA/B Forum Baseline Requirements 6.1.1.3 (reject a request whose key is known to be compromised)",
			Source:      lint.Community,
			// Every certificate, whatever its date.
			EffectiveDate: util.ZeroDate,
		},
		Lint: func() lint.CertificateLintInterface { return &compromisedKey{API: pwnedkeys.DefaultBaseURL} },
	})
}

// compromisedKey is the lint, and its configuration.
type compromisedKey struct {
	Filter  string `comment:"The path of the pkbfv1 filter of compromised keys. Required: without it the lint is Fatal."`
	Confirm bool   `comment:"Ask the pwnedkeys API about every key the filter holds: a key it does not know (a false positive of the filter) passes."`
	API     string `comment:"The pwnedkeys API's base URL, for confirm."`
}

func (l *compromisedKey) Configure() any { return l }

func (l *compromisedKey) CheckApplies(*x509.Certificate) bool { return true }

// confirmTimeout bounds one certificate's question to the API.
const confirmTimeout = 30 * time.Second

func (l *compromisedKey) Execute(c *x509.Certificate) *lint.LintResult {
	if l.Filter == "" {
		return fatal("no filter configured: set Filter, the path of a pkbfv1 filter file, in the [%s] section of zlint's configuration", Name)
	}
	checker, err := openFilter(l.Filter)
	if err != nil {
		return fatal("%v", err)
	}
	v := checker.CheckKey(c.Raw)
	switch {
	case v.Err != nil:
		return fatal("%v", v.Err)
	case !v.Probably:
		return &lint.LintResult{Status: lint.Pass}
	case !l.Confirm:
		return errorf("the subject public key is probably compromised: filter %s holds it (SHA-256 of its SPKI %s; %s/%s confirms or denies it)", l.Filter, v.Key.Fingerprint, l.API, v.Key.Fingerprint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), confirmTimeout)
	defer cancel()
	canonical, err := keys.Canonical(c.RawSubjectPublicKeyInfo) // as pwnedkeys names keys
	if err != nil {
		canonical = c.RawSubjectPublicKeyInfo
	}
	res, err := client(l.API).Check(ctx, canonical)
	switch {
	case err != nil:
		return errorf("the subject public key is probably compromised: filter %s holds it (SHA-256 of its SPKI %s), and the pwnedkeys API could not confirm it: %v", l.Filter, v.Key.Fingerprint, err)
	case res.Pwned:
		return errorf("the subject public key is compromised: filter %s holds it, and the pwnedkeys API proved it with a signature made by its private key (SHA-256 of its SPKI %s)", l.Filter, v.Key.Fingerprint)
	}
	return &lint.LintResult{Status: lint.Pass} // the filter's false positive
}

func fatal(format string, args ...any) *lint.LintResult {
	return &lint.LintResult{Status: lint.Fatal, Details: fmt.Sprintf(format, args...)}
}

func errorf(format string, args ...any) *lint.LintResult {
	return &lint.LintResult{Status: lint.Error, Details: fmt.Sprintf(format, args...)}
}

// The filters and API clients of the process, by path and by URL. A
// filter that cannot be opened is tried again at the next certificate:
// it may be being installed.
var (
	mu      sync.Mutex
	filters = map[string]*keycheck.Checker{}
	clients = map[string]*pwnedkeys.Client{}
)

// openFilter returns the checker of the filter at path, a Live filter
// that follows the file as new ones replace it.
func openFilter(path string) (*keycheck.Checker, error) {
	mu.Lock()
	defer mu.Unlock()
	if c, ok := filters[path]; ok {
		return c, nil
	}
	l, err := pkbf.OpenLive(path, pkbf.LiveOptions{})
	if err != nil {
		return nil, err
	}
	c := keycheck.New(l, keycheck.Options{})
	filters[path] = c
	return c, nil
}

func client(url string) *pwnedkeys.Client {
	mu.Lock()
	defer mu.Unlock()
	c, ok := clients[url]
	if !ok {
		c = &pwnedkeys.Client{BaseURL: url}
		clients[url] = c
	}
	return c
}
