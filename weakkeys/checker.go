package weakkeys

import (
	"fmt"
	"math/big"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pkbf/pkbf/internal/der"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keys"
)

// Rule identifies what a [Finding] reports. Its values are stable: print
// them, match them, store them.
type Rule string

// The rules, the section of the Baseline Requirements each comes from, and
// what a Finding's Detail holds for it.
const (
	// RuleDebian: a Debian weak key, CVE-2008-0166 (6.1.1.3). Detail:
	// the name of the list that holds it (one finding per list).
	RuleDebian Rule = "debian-weak"
	// RuleDebianNotCovered: no Debian list of the Checker covers the
	// key's type and size, so it was not checked against one: not
	// "clean" (6.1.1.3 asks it for every allowed size but RSA keys over
	// 8192 bits, which are not reported). Detail: the key, "RSA-3072".
	RuleDebianNotCovered Rule = "debian-not-covered"
	// RuleROCA: an RSA modulus made by Infineon's vulnerable library,
	// CVE-2017-15361 (6.1.1.3). Detail: empty.
	RuleROCA Rule = "roca"
	// RuleFermat: an RSA modulus that Fermat's method factors within the
	// Checker's rounds (6.1.1.3: 100). Detail: the round, "57".
	RuleFermat Rule = "fermat"
	// RuleSmallFactor: an RSA modulus divisible by a prime below 752, 2
	// (an even modulus) included (6.1.6). Detail: the prime (one finding
	// per prime).
	RuleSmallFactor Rule = "small-factor"
	// RuleRSASize: an RSA modulus below 2048 bits, not a multiple of 8
	// bits (6.1.5), not among the sizes the Checker allows, or over the
	// 16384 bits it examines (then it is checked no further). Detail: the
	// size in bits.
	RuleRSASize Rule = "rsa-size"
	// RuleRSAExponent: an RSA public exponent that is even or below 3,
	// which 6.1.6 forbids. Detail: the exponent in decimal (over 1024
	// bits, its size: "a 2000-bit number").
	RuleRSAExponent Rule = "rsa-exponent"
	// RuleRSAExponentRange: an RSA public exponent outside 2^16+1 to
	// 2^256-1, the range 6.1.6 says it SHOULD be in. Detail: as for
	// RuleRSAExponent.
	RuleRSAExponentRange Rule = "rsa-exponent-range"
	// RuleECCurve: an EC key on a curve other than P-256, P-384 and P-521
	// (6.1.5), or one the Checker does not allow. Detail: the curve's name
	// or OID.
	RuleECCurve Rule = "ec-curve"
	// RuleECPoint: an EC public key that is not a valid point of its
	// curve (6.1.5, 6.1.6). Detail: the curve's name.
	RuleECPoint Rule = "ec-point"
	// RuleAlgorithm: a key that is neither RSA nor EC (6.1.5: "no other
	// algorithms ... are permitted"). Detail: the algorithm's name or OID.
	RuleAlgorithm Rule = "algorithm"
)

// A Finding is one reason to refuse a key.
type Finding struct {
	Rule Rule
	// Detail is the rule's datum, for programs: see each Rule.
	Detail string
	// Reason says it in a sentence, for people, with the requirement's
	// section.
	Reason string
}

// String returns the rule and the reason.
func (f Finding) String() string { return string(f.Rule) + ": " + f.Reason }

// Result is what [Checker.Check] finds in a key. A key passes when it has
// no Findings.
type Result struct {
	// Findings are in a fixed order: size, algorithm or curve, point or
	// exponent, small factors, ROCA, Fermat, the Debian lists.
	Findings []Finding
}

func (r *Result) add(rule Rule, detail, format string, args ...any) {
	r.Findings = append(r.Findings, Finding{Rule: rule, Detail: detail, Reason: fmt.Sprintf(format, args...)})
}

// The Baseline Requirements' bounds.
const (
	minRSABits      = 2048
	debianMaxRSA    = 8192  // 6.1.1.3: Debian keys of larger RSA sizes need no check
	maxRSABits      = 16384 // the largest modulus a Checker examines
	defaultRounds   = 100
	maxExponentBits = 256 // 6.1.6: e SHOULD be at most 2^256-1
)

// A Checker checks keys against the Baseline Requirements' rules on
// subscriber keys (6.1.1.3, 6.1.5, 6.1.6). Make one with [New]; it is safe
// for concurrent use.
type Checker struct {
	debian   *Debian
	rounds   int
	rsaSizes []int    // allowed sizes, or nil: any that 6.1.5 allows
	curves   []*curve // allowed curves
}

// An Option configures a Checker.
type Option func(*Checker) error

// WithDebian looks keys up in the Debian weak-key lists of d. Without it,
// every RSA and EC key gets a [RuleDebianNotCovered] finding.
func WithDebian(d *Debian) Option {
	return func(c *Checker) error {
		if d == nil {
			return perr.Errorf("WithDebian: no Debian lists (nil)")
		}
		c.debian = d
		return nil
	}
}

// WithFermatRounds sets the rounds of Fermat's method, 1 to 1048576; the
// default, 100, is what BR 6.1.1.3 asks for.
func WithFermatRounds(n int) Option {
	return func(c *Checker) error {
		if n < 1 || n > maxFermatRounds {
			return perr.Errorf("WithFermatRounds: %d rounds, want 1 to %d", n, maxFermatRounds)
		}
		c.rounds = n
		return nil
	}
}

// WithRSASizes allows only the given RSA modulus sizes, in bits (each a
// multiple of 8 from 2048 to 16384), as a CA that issues for 2048, 3072
// and 4096 only does. By default any size BR 6.1.5 allows is.
func WithRSASizes(bits ...int) Option {
	return func(c *Checker) error {
		if len(bits) == 0 {
			return perr.Errorf("WithRSASizes: no sizes")
		}
		for _, b := range bits {
			if b < minRSABits || b > maxRSABits || b%8 != 0 {
				return perr.Errorf("WithRSASizes: %d bits is not a multiple of 8 from %d to %d", b, minRSABits, maxRSABits)
			}
		}
		c.rsaSizes = slices.Sorted(slices.Values(bits))
		return nil
	}
}

// WithCurves allows only the named curves, among "P-256", "P-384" and
// "P-521" (all three by default).
func WithCurves(names ...string) Option {
	return func(c *Checker) error {
		if len(names) == 0 {
			return perr.Errorf("WithCurves: no curves")
		}
		c.curves = nil
		for _, name := range names {
			cv := curveByName(name)
			if cv == nil {
				return perr.Errorf("WithCurves: curve %q is not P-256, P-384 or P-521", name)
			}
			c.curves = append(c.curves, cv)
		}
		return nil
	}
}

// New returns a Checker with the Baseline Requirements' defaults changed
// by opts. It returns an error for an option out of its range.
func New(opts ...Option) (*Checker, error) {
	c := &Checker{rounds: defaultRounds, curves: curves}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// scratch is one check's working memory, kept between checks.
type scratch struct {
	n, q, r, a, v, w big.Int
	sqrt             sqrtScratch
	groupRem         [133]uint64 // one per modulus of smallPrimeSet, fewer than the primes
	primeRem         [133]uint32
	hashes           keyHashes
	found            []int
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Check checks the key of a DER SubjectPublicKeyInfo (use package keys to
// read keys, certificates and requests in other forms) and returns every
// finding. It returns an error, wrapping keys.ErrInvalidKey, for what it
// cannot read as a key (never an empty Result), and one wrapping
// [ErrInvalidFile] when the Debian file fails under it.
func (c *Checker) Check(spki []byte) (Result, error) {
	k, err := parseSPKI(spki)
	if err != nil {
		return Result{}, err
	}
	var res Result
	switch {
	case k.rsa:
		err = c.checkRSA(&res, k.n, k.e)
	case k.ec:
		err = c.checkEC(&res, k, spki)
	default:
		name := algorithmName(k.alg)
		res.add(RuleAlgorithm, name, "%s keys are not allowed (BR 6.1.5 allows RSA and ECDSA keys)", name)
	}
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// CheckModulus checks a bare RSA modulus, big-endian (leading zeros are
// ignored), as [Checker.Check] checks an RSA key's: all but the exponent.
// It returns an error wrapping keys.ErrInvalidKey for a zero modulus.
func (c *Checker) CheckModulus(n []byte) (Result, error) {
	n = trimZeros(n)
	if len(n) == 0 {
		return Result{}, keyErrorf("RSA modulus is zero")
	}
	var res Result
	if err := c.checkRSA(&res, n, nil); err != nil {
		return Result{}, err
	}
	return res, nil
}

// checkRSA adds the findings of an RSA key: modulus n and exponent e
// (nil for a bare modulus), magnitudes without leading zeros.
func (c *Checker) checkRSA(res *Result, n, e []byte) error {
	nBits := 8*len(n) - leadingZeros(n[0])
	switch {
	case nBits > maxRSABits:
		res.add(RuleRSASize, strconv.Itoa(nBits), "RSA modulus of %d bits is over the %d bits this checker examines: it was not checked further", nBits, maxRSABits)
		return nil
	case nBits < minRSABits:
		res.add(RuleRSASize, strconv.Itoa(nBits), "RSA modulus of %d bits is below the %d bits BR 6.1.5 requires", nBits, minRSABits)
	case nBits%8 != 0:
		res.add(RuleRSASize, strconv.Itoa(nBits), "RSA modulus of %d bits is not a multiple of 8 bits, as BR 6.1.5 requires", nBits)
	case c.rsaSizes != nil && !slices.Contains(c.rsaSizes, nBits):
		res.add(RuleRSASize, strconv.Itoa(nBits), "RSA-%d is not among the sizes this checker allows (%s)", nBits, joinInts(c.rsaSizes))
	}
	if e != nil {
		checkExponent(res, e)
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	s.n.SetBytes(n)
	c.checkModulus(res, &s.n, s)
	return c.checkDebian(res, coverage{typeRSA, nBits}, n, s)
}

// checkExponent adds the findings of an RSA public exponent e.
func checkExponent(res *Result, e []byte) {
	odd := len(e) > 0 && e[len(e)-1]&1 == 1
	eBits := 0
	if len(e) > 0 {
		eBits = 8*len(e) - leadingZeros(e[0])
	}
	switch {
	case !odd:
		v := exponentString(e, eBits)
		res.add(RuleRSAExponent, v, "RSA public exponent %s is even: BR 6.1.6 requires an odd number, 3 or more", v)
	case eBits == 1:
		res.add(RuleRSAExponent, "1", "RSA public exponent 1 is below 3: BR 6.1.6 requires an odd number, 3 or more")
	case eBits < 17 || eBits > maxExponentBits: // odd: 17 bits is 2^16+1 or more
		v := exponentString(e, eBits)
		res.add(RuleRSAExponentRange, v, "RSA public exponent %s is outside 2^16+1 to 2^256-1, the range BR 6.1.6 says it SHOULD be in", v)
	}
}

// exponentString is an exponent in decimal, or its size when it is too
// large to print (converting a huge number costs time a key must not
// buy).
func exponentString(e []byte, eBits int) string {
	if eBits > maxPrintedBits {
		return "a " + strconv.Itoa(eBits) + "-bit number"
	}
	return new(big.Int).SetBytes(e).String()
}

// maxPrintedBits bounds the exponents a Finding gives in decimal.
const maxPrintedBits = 1024

// checkModulus adds the findings about an RSA modulus's factors: small
// primes, ROCA, Fermat.
func (c *Checker) checkModulus(res *Result, n *big.Int, s *scratch) {
	rem := smallPrimeRemainders(n, s)
	for i, r := range rem {
		if r == 0 {
			p := strconv.Itoa(int(smallPrimes[i]))
			if p == "2" {
				res.add(RuleSmallFactor, p, "RSA modulus is even: BR 6.1.6 says it SHOULD be odd, with no factors smaller than 752")
			} else {
				res.add(RuleSmallFactor, p, "RSA modulus is divisible by %s: BR 6.1.6 says it SHOULD have no factors smaller than 752", p)
			}
		}
	}
	if isROCA(rem[:rocaPrimes]) {
		res.add(RuleROCA, "", "RSA modulus has the ROCA fingerprint of Infineon's vulnerable key generation (CVE-2017-15361), which BR 6.1.1.3 requires a CA to reject")
	}
	if round := fermatRound(n, c.rounds, s); round > 0 {
		res.add(RuleFermat, strconv.Itoa(round), "RSA modulus is factored by Fermat's method in round %d: its primes are too close (BR 6.1.1.3 requires rejecting keys factored within 100 rounds)", round)
	}
}

// smallPrimeRemainders returns n's remainders by the small primes, in
// s.primeRem: n is reduced by products of them, then each of those
// remainders by its primes.
func smallPrimeRemainders(n *big.Int, s *scratch) []uint32 {
	smallPrimeSet.remainders(s.groupRem[:], n.Bits())
	for i, m := range smallPrimeRems {
		s.primeRem[i] = uint32(m.reduce(s.groupRem[smallPrimeGroup[i]]))
	}
	return s.primeRem[:]
}

// checkEC adds the findings of an EC key.
func (c *Checker) checkEC(res *Result, k publicKey, spki []byte) error {
	var cv *curve
	switch k.ecParams {
	case der.TagOID:
		cv = curveByOID(k.curve)
		if cv == nil {
			name := "curve " + oidString(k.curve)
			res.add(RuleECCurve, oidString(k.curve), "EC %s is not allowed (BR 6.1.5 allows P-256, P-384 and P-521)", name)
			return nil
		}
	case der.TagSequence: // explicit parameters: the curve they describe, if named
		var err error
		if cv, err = explicitCurve(spki, &k); err != nil {
			return err
		}
		if cv == nil {
			res.add(RuleECCurve, "explicit", "EC key's explicit curve parameters are not those of P-256, P-384 or P-521 (BR 6.1.5)")
			return nil
		}
	default:
		res.add(RuleECCurve, "implicit", "EC key does not name its curve (BR 6.1.5 allows P-256, P-384 and P-521)")
		return nil
	}
	if !slices.Contains(c.curves, cv) {
		res.add(RuleECCurve, cv.name, "EC curve %s is not among the curves this checker allows (%s)", cv.name, c.curveNames())
	}
	x, reason := cv.validate(k.point)
	if reason != "" {
		res.add(RuleECPoint, cv.name, "EC public key is not a valid point of %s: %s (BR 6.1.5, 6.1.6)", cv.name, reason)
		return nil
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	return c.checkDebian(res, coverage{typeEC, cv.bits}, x, s)
}

// checkDebian looks a key up in the Debian lists that cover it: material
// is its modulus or x-coordinate.
func (c *Checker) checkDebian(res *Result, cover coverage, material []byte, s *scratch) error {
	covered := false
	if c.debian != nil {
		s.hashes.reset(material)
		found, cov, err := c.debian.lookup(s.found[:0], cover, &s.hashes)
		if err != nil {
			return err
		}
		s.found, covered = found, cov
		for _, i := range found {
			l := &c.debian.lists[i]
			res.add(RuleDebian, l.Name, "Debian weak key (CVE-2008-0166), on the list %s (%s, %s), which BR 6.1.1.3 requires a CA to reject", l.Name, l.Key, l.Scheme)
		}
	}
	if !covered && !(cover.typ == typeRSA && cover.bits > debianMaxRSA) {
		res.add(RuleDebianNotCovered, cover.String(), "no Debian weak-key list of this checker covers %s keys: the key was not checked for CVE-2008-0166, as BR 6.1.1.3 requires", cover)
	}
	return nil
}

func (c *Checker) curveNames() string {
	names := make([]string, len(c.curves))
	for i, cv := range c.curves {
		names[i] = cv.name
	}
	return strings.Join(names, ", ")
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// leadingZeros counts the leading zero bits of a byte.
func leadingZeros(b byte) int {
	n := 0
	for b&0x80 == 0 && n < 8 {
		b <<= 1
		n++
	}
	return n
}

// Small primes: the 133 primes below 752 (BR 6.1.6: "no factors smaller
// than 752"), their groups and their remainders' moduli.
var (
	smallPrimes                     = primesBelow(752)
	smallPrimeMods, smallPrimeGroup = primeGroups(smallPrimes)
	smallPrimeRems                  = func() []wordMod {
		out := make([]wordMod, len(smallPrimes))
		for i, p := range smallPrimes {
			out[i] = newWordMod(uint64(p))
		}
		return out
	}()
	// smallPrimeSet reduces a modulus by the primes' groups.
	smallPrimeSet = newModSet(smallPrimeMods, maxRSABits/bits.UintSize)
)

// explicitCurve returns the allowed curve an EC key's explicit parameters
// describe, as package keys maps them to a named curve, or nil; k's point
// becomes the key's point in uncompressed form on it.
func explicitCurve(spki []byte, k *publicKey) (*curve, error) {
	canonical, err := keys.Canonical(spki)
	if err != nil {
		return nil, err
	}
	named, err := parseSPKI(canonical)
	if err != nil || named.ecParams != der.TagOID {
		return nil, err
	}
	k.point = named.point
	return curveByOID(named.curve), nil
}
