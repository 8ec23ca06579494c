package pkbflint

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zmap/zcrypto/x509"
	"github.com/zmap/zlint/v3/lint"
	"github.com/zmap/zlint/v3/util"

	"github.com/pkbf/pkbf/weakkeys"
)

// The Baseline Requirements' rules on subscriber keys (6.1.1.3, 6.1.5,
// 6.1.6) as lints, one for each family of package weakkeys' rules: each
// checks the certificate's SubjectPublicKeyInfo with a weakkeys.Checker,
// as pkbf's other gates do, and reports its family's findings, with
// their reasons, as an Error. A key the Checker cannot read is an Error
// in every one (the certificate's key is not one the BR allow, and a CA
// must not issue it); what keeps a lint from checking (its configuration,
// the Debian weak-key file) is Fatal. docs/zlint.md says which of zlint's
// own lints cover the same ground, and why these are added beside them.

// sc073Date is when ballot SC-073's weak-key requirements (Debian weak
// keys, ROCA, Fermat's method within 100 rounds) took effect.
var sc073Date = time.Date(2024, time.November, 15, 0, 0, 0, 0, time.UTC)

// maxCheckedRSABits is the largest RSA modulus a weakkeys.Checker
// examines: a larger one gets a RuleRSASize finding and no other.
const maxCheckedRSABits = 16384

// brLint is one family of rules and its lint's metadata.
type brLint struct {
	name, description, citation string
	effective                   time.Time
	rules                       []weakkeys.Rule
	// checkedBeyond: the family is checked on RSA moduli past
	// maxCheckedRSABits, so such a key was not checked for it.
	checkedBeyond bool
	// what the family is, in "was not checked for ...".
	what string
}

var (
	brDebian = brLint{
		name:        "e_br_debian_weak_key",
		description: "The subject public key must not be a Debian weak key (CVE-2008-0166), and must be of a type and size the configured Debian weak-key lists cover",
		citation:    "BRs: 6.1.1.3 (ballot SC-073)", effective: sc073Date,
		rules: []weakkeys.Rule{weakkeys.RuleDebian, weakkeys.RuleDebianNotCovered},
		what:  "Debian weak keys",
	}
	brROCA = brLint{
		name:        "e_br_roca_key",
		description: "The subject public key must not be an RSA key with the ROCA flaw (CVE-2017-15361)",
		citation:    "BRs: 6.1.1.3 (ballot SC-073)", effective: sc073Date,
		rules: []weakkeys.Rule{weakkeys.RuleROCA}, checkedBeyond: true, what: "the ROCA flaw",
	}
	brFermat = brLint{
		name:        "e_br_fermat_factorable_key",
		description: "The subject public key must not be an RSA key whose modulus Fermat's method factors within 100 rounds",
		citation:    "BRs: 6.1.1.3 (ballot SC-073)", effective: sc073Date,
		rules: []weakkeys.Rule{weakkeys.RuleFermat}, checkedBeyond: true, what: "Fermat's method",
	}
	brSmallFactor = brLint{
		name:        "e_br_rsa_small_factor",
		description: "The RSA modulus must be odd and have no factor smaller than 752 (a SHOULD, which a CA refusing weak keys enforces)",
		citation:    "BRs: 6.1.6", effective: util.CABV113Date,
		rules: []weakkeys.Rule{weakkeys.RuleSmallFactor}, checkedBeyond: true, what: "small factors",
	}
	brExponent = brLint{
		name:        "e_br_rsa_exponent",
		description: "The RSA public exponent must be odd and 3 or more, and in 2^16+1 to 2^256-1 (the range a SHOULD gives, which a CA refusing weak keys enforces)",
		citation:    "BRs: 6.1.6", effective: util.CABV113Date,
		rules: []weakkeys.Rule{weakkeys.RuleRSAExponent, weakkeys.RuleRSAExponentRange}, checkedBeyond: true, what: "its exponent",
	}
	brKeySize = brLint{
		name:        "e_br_rsa_key_size",
		description: "The RSA modulus must be at least 2048 bits and a multiple of 8 bits, and of a size the CA allows",
		citation:    "BRs: 6.1.5", effective: util.CABFBRs_2_0_0_Date,
		rules: []weakkeys.Rule{weakkeys.RuleRSASize},
	}
	brECKey = brLint{
		name:        "e_br_ec_key",
		description: "An EC key must be on P-256, P-384 or P-521 (a curve the CA allows), and a valid point of it",
		citation:    "BRs: 6.1.5, 6.1.6", effective: util.CABFBRs_2_0_0_Date,
		rules: []weakkeys.Rule{weakkeys.RuleECCurve, weakkeys.RuleECPoint},
	}
	brAlgorithm = brLint{
		name:        "e_br_key_algorithm",
		description: "The subject public key must be an RSA or ECDSA key: no other algorithm is permitted",
		citation:    "BRs: 6.1.5", effective: util.CABFBRs_2_0_0_Date,
		rules: []weakkeys.Rule{weakkeys.RuleAlgorithm},
	}
)

// brLints are the lints, in the order of docs/zlint.md's table.
var brLints = []*brLint{&brDebian, &brROCA, &brFermat, &brSmallFactor, &brExponent, &brKeySize, &brECKey, &brAlgorithm}

func init() {
	for _, l := range brLints {
		var newLint func() lint.CertificateLintInterface
		switch l {
		case &brDebian:
			newLint = func() lint.CertificateLintInterface { return &debianLint{} }
		case &brFermat:
			newLint = func() lint.CertificateLintInterface { return &fermatLint{Rounds: 100} }
		case &brKeySize:
			newLint = func() lint.CertificateLintInterface { return &keySizeLint{} }
		case &brECKey:
			newLint = func() lint.CertificateLintInterface { return &ecKeyLint{} }
		default:
			newLint = func() lint.CertificateLintInterface { return &plainLint{l} }
		}
		lint.RegisterCertificateLint(&lint.CertificateLint{
			LintMetadata: lint.LintMetadata{
				Name:          l.name,
				Description:   l.description,
				Citation:      l.citation,
				Source:        lint.CABFBaselineRequirements,
				EffectiveDate: l.effective,
			},
			Lint: newLint,
		})
	}
}

// plainLint is a lint without configuration: ROCA, small factors, the
// exponent, the algorithm.
type plainLint struct{ *brLint }

func (l *plainLint) CheckApplies(*x509.Certificate) bool { return true }

func (l *plainLint) Execute(c *x509.Certificate) *lint.LintResult {
	checker, err := checkerFor("")
	if err != nil {
		return fatal("%v", err)
	}
	return l.report(c, "", checker, false)
}

// fermatLint is e_br_fermat_factorable_key and its configuration.
type fermatLint struct {
	Rounds int `comment:"The rounds of Fermat's method, 100 (what BR 6.1.1.3 requires) to 1048576."`
}

func (l *fermatLint) Configure() any                      { return l }
func (l *fermatLint) CheckApplies(*x509.Certificate) bool { return true }

func (l *fermatLint) Execute(c *x509.Certificate) *lint.LintResult {
	if l.Rounds < 100 {
		return fatal("Rounds = %d in [%s]: BR 6.1.1.3 requires at least 100 rounds of Fermat's method", l.Rounds, brFermat.name)
	}
	key := ""
	if l.Rounds != 100 {
		key = "rounds " + strconv.Itoa(l.Rounds)
	}
	checker, err := checkerFor(key, weakkeys.WithFermatRounds(l.Rounds))
	if err != nil {
		return fatal("[%s]: %v", brFermat.name, err)
	}
	return brFermat.report(c, key, checker, false)
}

// keySizeLint is e_br_rsa_key_size and its configuration.
type keySizeLint struct {
	RSASizes []int `comment:"The RSA modulus sizes the CA allows, in bits (say [2048, 3072, 4096]): each a multiple of 8 from 2048 to 16384. Empty: any size BR 6.1.5 allows."`
}

func (l *keySizeLint) Configure() any                      { return l }
func (l *keySizeLint) CheckApplies(*x509.Certificate) bool { return true }

func (l *keySizeLint) Execute(c *x509.Certificate) *lint.LintResult {
	var opts []weakkeys.Option
	key := ""
	if len(l.RSASizes) > 0 {
		opts, key = append(opts, weakkeys.WithRSASizes(l.RSASizes...)), fmt.Sprint("sizes ", l.RSASizes)
	}
	checker, err := checkerFor(key, opts...)
	if err != nil {
		return fatal("[%s]: %v", brKeySize.name, err)
	}
	return brKeySize.report(c, key, checker, false)
}

// ecKeyLint is e_br_ec_key and its configuration.
type ecKeyLint struct {
	Curves []string `comment:"The curves the CA allows, among \"P-256\", \"P-384\" and \"P-521\". Empty: all three."`
}

func (l *ecKeyLint) Configure() any                      { return l }
func (l *ecKeyLint) CheckApplies(*x509.Certificate) bool { return true }

func (l *ecKeyLint) Execute(c *x509.Certificate) *lint.LintResult {
	var opts []weakkeys.Option
	key := ""
	if len(l.Curves) > 0 {
		opts, key = append(opts, weakkeys.WithCurves(l.Curves...)), fmt.Sprintf("curves %q", l.Curves)
	}
	checker, err := checkerFor(key, opts...)
	if err != nil {
		return fatal("[%s]: %v", brECKey.name, err)
	}
	return brECKey.report(c, key, checker, false)
}

// debianLint is e_br_debian_weak_key and its configuration.
type debianLint struct {
	DebianFile string `comment:"The path of the Debian weak-key file (pkbf weak build writes it from the published lists). Required: without it the lint is Fatal."`
}

func (l *debianLint) Configure() any                      { return l }
func (l *debianLint) CheckApplies(*x509.Certificate) bool { return true }

func (l *debianLint) Execute(c *x509.Certificate) *lint.LintResult {
	if l.DebianFile == "" {
		return fatal("no Debian weak-key file configured: set DebianFile, the path of a file pkbf weak build writes, in the [%s] section of zlint's configuration", brDebian.name)
	}
	f, err := debianFiles.acquire(l.DebianFile)
	if err != nil {
		return fatal("%v", err)
	}
	defer debianFiles.release(f)
	return brDebian.report(c, "", f.checker, true)
}

// report checks the certificate's key with checker, a Checker of the
// options key describes ("" for the defaults), anew when fresh (see
// checkCache), and reports the findings of the lint's family.
func (l *brLint) report(c *x509.Certificate, key string, checker *weakkeys.Checker, fresh bool) *lint.LintResult {
	res, err := checks.check(c.RawSubjectPublicKeyInfo, key, checker, fresh)
	switch {
	case errors.Is(err, weakkeys.ErrInvalidFile):
		return fatal("%v", err)
	case err != nil:
		return errorf("the subject public key cannot be read, so it cannot be shown to meet BR 6.1.1.3, 6.1.5 and 6.1.6: %v", err)
	}
	var reasons []string
	for _, f := range res.Findings {
		switch {
		case slices.Contains(l.rules, f.Rule):
			reasons = append(reasons, f.Reason)
		case l.checkedBeyond && f.Rule == weakkeys.RuleRSASize && overCheckedSize(f.Detail):
			reasons = append(reasons, fmt.Sprintf("the RSA modulus of %s bits is over the %d bits pkbf examines: it was not checked for %s", f.Detail, maxCheckedRSABits, l.what))
		}
	}
	if len(reasons) == 0 {
		return &lint.LintResult{Status: lint.Pass}
	}
	return errorf("%s", strings.Join(reasons, "; "))
}

// overCheckedSize reports whether an rsa-size finding's Detail, the
// modulus's bits, is past what a Checker examines.
func overCheckedSize(detail string) bool {
	bits, err := strconv.Atoi(detail)
	return err == nil && bits > maxCheckedRSABits
}

// zlint runs the eight lints on a certificate one after another, each a
// lint of its own, and each needs the same check of its key: the whole
// weak-key check (a modulus's small factors, ROCA, Fermat) costs
// microseconds, eight times as much were each to make it. checks keeps
// the last checks made, by SPKI and options, for the lints after the
// first. Every family of findings depends on its own option alone (the
// Debian lists, the rounds, the sizes, the curves), so a check with the
// default options serves every lint left at its defaults, one with a
// Debian file too. The Debian lint, which zlint runs first (the order of
// registration), checks anew each time: its file may have failed since.
type checkCache struct {
	mu      sync.Mutex
	entries map[checkKey]*checked
	order   []checkKey   // the oldest first
	made    atomic.Int64 // checks made, for the tests
}

// checkKey names a check: the SPKI, and the options but the Debian file.
type checkKey struct{ spki, options string }

type checked struct {
	res weakkeys.Result
	err error
}

// checksKept bounds the checks kept: a few certificates' worth, for
// zlint runs in parallel.
const checksKept = 64

var checks = checkCache{entries: map[checkKey]*checked{}}

// check returns checker's result on spki, made by an earlier lint of the
// same options, or now; when fresh (the Debian lint), always now.
func (s *checkCache) check(spki []byte, options string, checker *weakkeys.Checker, fresh bool) (weakkeys.Result, error) {
	k := checkKey{string(spki), options}
	s.mu.Lock()
	e := s.entries[k]
	s.mu.Unlock()
	if e != nil && !fresh {
		return e.res, e.err
	}
	s.made.Add(1)
	res, err := checker.Check(spki)
	if errors.Is(err, weakkeys.ErrInvalidFile) {
		return res, err // the file failed: nothing to keep
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[k]; !ok {
		if len(s.order) == checksKept {
			delete(s.entries, s.order[0])
			s.order = s.order[1:]
		}
		s.order = append(s.order, k)
	}
	s.entries[k] = &checked{res, err}
	return res, err
}

// The Checkers of the process, by their options' description ("" for the
// defaults): zlint makes a lint, and configures it, for each certificate.
var (
	checkersMu sync.Mutex
	checkers   = map[string]*weakkeys.Checker{}
)

// checkerFor returns the Checker of the options that key describes.
func checkerFor(key string, opts ...weakkeys.Option) (*weakkeys.Checker, error) {
	checkersMu.Lock()
	defer checkersMu.Unlock()
	if c, ok := checkers[key]; ok {
		return c, nil
	}
	c, err := weakkeys.New(opts...)
	if err != nil {
		return nil, err
	}
	checkers[key] = c
	return c, nil
}

// debianFile is an open Debian weak-key file, the Checker that reads it,
// and the checks using it.
type debianFile struct {
	debian  *weakkeys.Debian
	checker *weakkeys.Checker
	info    os.FileInfo // the file opened, to tell when another is renamed over it
	users   int
	retired bool // another file took its path: close it when unused
}

// debianFileSet holds the process's Debian weak-key files by path. A file
// renamed over one (pkbf weak build rebuilding it) is used from the next
// certificate on; one that cannot be opened is tried again at the next:
// it may be being installed.
type debianFileSet struct {
	mu    sync.Mutex
	files map[string]*debianFile
}

var debianFiles = debianFileSet{files: map[string]*debianFile{}}

// acquire returns the file at path, opened (again, if the path now names
// another file), for one check; release it after.
func (s *debianFileSet) acquire(path string) (*debianFile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[path]
	if fi, err := os.Stat(path); f != nil && (err != nil || !os.SameFile(fi, f.info)) {
		// Gone or replaced: the file is opened again below, and the one
		// open closed once no check uses it.
		f.retired = true
		if f.users == 0 {
			f.debian.Close()
		}
		delete(s.files, path)
		f = nil
	}
	if f == nil {
		// The path's file before it is opened: one renamed over it
		// between the two is the one opened, and opened again next time.
		info, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		d, err := weakkeys.OpenDebian(path)
		if err != nil {
			return nil, err
		}
		checker, err := weakkeys.New(weakkeys.WithDebian(d))
		if err != nil {
			d.Close()
			return nil, err
		}
		f = &debianFile{debian: d, checker: checker, info: info}
		s.files[path] = f
	}
	f.users++
	return f, nil
}

func (s *debianFileSet) release(f *debianFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.users--
	if f.retired && f.users == 0 {
		f.debian.Close()
	}
}
