// Package keycheck checks keys against a pkbfv1 filter: it reads keys,
// certificates and requests in every form package keys reads, looks each
// key up under every encoding a filter may hold it in, and says what it
// found in a [Verdict].
//
// Make a [Checker] over a filter ([*pkbf.Filter], [*pkbf.Writable] or
// [*pkbf.Live]: any [Querier]), then ask it about one key, or about every
// key of many inputs:
//
//	f, err := pkbf.Open("pwnedkeys.pkbf")
//	...
//	c := keycheck.New(f, keycheck.Options{})
//	v := c.CheckKey(pemOrDERorOpenSSH) // one key: v.Probably, v.Err
//	for v := range c.Check(ctx, keycheck.Files("certs/")) {
//		fmt.Println(v.Status(), v.Key.Fingerprint, v.Source)
//	}
//
// # Weak keys
//
// With [Options].Weak, a [weakkeys.Checker], a Checker also makes the
// checks the CA/Browser Forum's Baseline Requirements ask of a CA before it
// issues (Debian weak keys, ROCA, Fermat's method, small factors, sizes,
// exponents and curves), in the same call and the same parse: a verdict
// carries every [weakkeys.Finding] beside Probably, and [Verdict.Refuse]
// says whether either is a reason to refuse the key. The filter is then
// optional: New(nil, Options{Weak: w}) makes the weak-key checks alone.
//
// # Every encoding
//
// One key has many DER encodings (an EC point compressed or not, an RSA
// key with or without NULL parameters, explicit curve parameters), and a
// filter holds whichever was added. A Checker looks a key up as given,
// in its canonical encoding, and in the other forms [keys.Forms] gives;
// [pkbf.Filter.Probably] tests only the bytes it is given.
//
// # Guarantees
//
// A "no" from a Checker is definite for the key: it was never added under
// any encoding a filter may hold it in. A "probably" means the key is in
// the filter or is a false positive; confirm it online with package
// github.com/pkbf/pkbf/pwnedkeys ([Options].Confirm). A key pkbf cannot
// re-encode, absent as given, and a filter whose file was cut short under
// it ([pkbf.ErrFileChanged]) get an error, never a "no": a gate refuses
// what it cannot check.
//
// # Integrations
//
// The packages that check keys for another program (pkbftls, pkbfssh,
// stepca, pwnedkeys, the zlint lint and the CT scanner) take a
// [KeyChecker]: a *Checker, or a test's fake. They refuse a key whose
// verdict's [Verdict.Refuse] is true, saying [Verdict.Reason], and one
// whose verdict has an Err.
//
// # Concurrency
//
// A Checker is safe for concurrent use, as the filter under it is.
package keycheck

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/weakkeys"
)

// A Querier is the query of a pkbfv1 filter, as [*pkbf.Filter],
// [*pkbf.Writable] and [*pkbf.Live] have it: Probably tests exactly the
// bytes it is given, and ProbablyBatch sets out[i] to Probably(spkis[i]).
// Its methods must be safe for concurrent use and must not keep the
// slices they are given. A query on a filter whose file was cut short may
// panic with an error wrapping [pkbf.ErrFileChanged], which a Checker
// turns into the verdict's Err.
type Querier interface {
	Probably(spki []byte) bool
	ProbablyBatch(spkis [][]byte, out []bool)
}

// A KeyChecker gives the verdict on the one key in data: what the
// integrations take, so that one of them checks keys as the others do. A
// [*Checker] is one; a KeyChecker must be safe for concurrent use.
type KeyChecker interface {
	CheckKey(data []byte) Verdict
}

// Options adjust a [Checker]'s [Checker.Check] and [AddKeys]; CheckKey
// uses Weak alone, Contains none of them. The zero value is ready to use.
type Options struct {
	// Passphrases are tried, after the empty one, on encrypted PKCS#12
	// files (keys.Scanner.SetPassphrases).
	Passphrases []string
	// KDFWork, if set, is asked before each key derivation of a PKCS#12
	// file the inputs hold, from the goroutine that reads them
	// (keys.Scanner.SetKDFWork): a server bounds a request's work with it.
	KDFWork func(iterations int) error
	// Workers is how many goroutines decode and look up keys: 0 means
	// GOMAXPROCS, and with Confirm at least 8, as they wait on the
	// network. With 1, all the work runs in the caller's goroutine, with
	// no other: for short inputs, or a caller already running checks in
	// parallel (a server, one per request).
	Workers int
	// Confirm, if set, is asked about every key the filter probably
	// holds, with the key's canonical SPKI ([keys.Canonical]), from the
	// workers: pwned when it verified that the key is compromised, an
	// error when it has no usable answer. Verdicts then carry its
	// Confirmation, and a Status of "compromised", "false-positive" or
	// "unconfirmed" for those keys. A pwnedkeys.Checker's Confirm fits,
	// and bounds the requests in flight. AddKeys does not use it.
	Confirm func(ctx context.Context, canonical []byte) (pwned bool, err error)
	// Idle, if set, is called between verdicts whenever every key read so
	// far has had its verdict: the input is slower than the lookups (a
	// pipe, a terminal), so a caller that buffers its output should flush
	// it. It runs in the caller's goroutine.
	Idle func()
	// FingerprintHitsOnly leaves Key's fingerprints empty in the verdicts
	// of keys the filter does not hold, saving a SHA-256 a key: for a scan
	// that reports only hits (a CT log's entries, by the million).
	// AddKeys ignores it.
	FingerprintHitsOnly bool
	// Weak, if set, checks every key against the Baseline Requirements'
	// rules on weak keys, in CheckKey and Check (on the workers): verdicts
	// carry its Findings, and a bare RSA modulus ([keys.Key.Modulus]) is
	// checked as well, though it cannot be looked up in a filter. AddKeys
	// does not use it.
	Weak *weakkeys.Checker
}

// A Checker checks keys against one filter, and against the weak-key
// rules with Options.Weak. It is safe for concurrent use.
type Checker struct {
	q    Querier // nil: the weak-key checks alone
	opts Options
}

// New returns a Checker of keys against q, with opts for its Check. q may
// be nil when opts.Weak is set: the Checker then makes the weak-key checks
// alone, and finds no key Probably. It panics if q is nil without
// opts.Weak, or is a nil *pkbf.Filter, *pkbf.Writable or *pkbf.Live (a
// filter whose open failed): a gate with no check must not start.
func New(q Querier, opts Options) *Checker {
	var missing bool
	switch f := q.(type) {
	case nil:
		missing = opts.Weak == nil
	case *pkbf.Filter:
		missing = f == nil
	case *pkbf.Writable:
		missing = f == nil
	case *pkbf.Live:
		missing = f == nil
	}
	if missing {
		panic("keycheck: New without a filter or weak-key checks")
	}
	return &Checker{q: q, opts: opts}
}

// Contains reports whether the filter probably holds the key of spki, a
// DER SubjectPublicKeyInfo, under any of the encodings a filter may hold
// it in: spki as given, its canonical re-encoding ([keys.Canonical]), and
// the other forms [keys.Forms] gives (both point forms of an EC key). An
// spki that cannot be parsed is looked up as given only. False is
// definite for all of them. A Checker without a filter contains nothing.
//
// Contains allocates nothing for a key in DER in its canonical form. It
// panics as the filter's Probably does on a file cut short, where
// [Checker.CheckKey] returns an error.
func (c *Checker) Contains(spki []byte) bool {
	if c.q == nil {
		return false
	}
	l := lookups.Get().(*lookup)
	defer l.put()
	canonical, other, err := keys.Forms(l.room[:0], spki)
	if err != nil {
		canonical, other = spki, nil // looked up as given only
	}
	return l.any(c.q, spki, canonical, other)
}

// CheckKey returns the verdict on the one key in data, anything
// [keys.SPKI] reads: Probably when the filter probably holds it under any
// encoding it may hold it in (the answer [Checker.Contains] gives), or
// Err, wrapping [keys.ErrInvalidKey], when data holds no key it can read.
// A key the filter lacks as given, whose other encodings pkbf cannot
// derive (an algorithm it does not know, a malformed key), gets Err, not
// a "no"; so does a filter whose file was cut short (an error wrapping
// [pkbf.ErrFileChanged]). With Options.Weak, the verdict also carries the
// weak-key checks' Findings (or their error, in Err), and a bare RSA
// modulus is checked as [Checker.Check] checks it.
//
// A key to refuse ([Verdict.Refuse]) carries the Key's names that a gate
// logs when it refuses it: its fingerprints (as [Checker.Check] reports
// them) and, for an SSH key, SSHFingerprint and Comment. Another carries
// nothing else, so that it costs and allocates what Contains does (and
// the weak-key checks); its Source is zero. CheckKey does no I/O: confirm
// a hit with package pwnedkeys.
func (c *Checker) CheckKey(data []byte) Verdict {
	k := keys.ParseKey(data)
	v := Verdict{checks: c.checks()}
	if n, ok := k.Modulus(); ok {
		c.checkModulus(&v, n, k.SPKI)
		return v
	}
	l := lookups.Get().(*lookup)
	defer l.put()
	spki, canonical, other, formsErr := k.Forms(l.room[:0])
	switch {
	case spki == nil:
		v.Err = formsErr
		return v
	case formsErr != nil:
		canonical, other = spki, nil // looked up as given only
	}
	if c.q != nil {
		hit, err := l.anyOrFault(c.q, spki, canonical, other)
		switch {
		case err != nil:
			v.Err = err
			return v
		case !hit && formsErr != nil:
			// Not as given, and its other encodings unknown: no "no".
			v.Err = formsErr
		}
		v.Probably, v.lookedUp = hit, v.Err == nil
	}
	c.checkWeak(&v, spki)
	if !v.Refuse() {
		return v
	}
	both, label := appendFingerprints(make([]byte, 0, 2*fingerprintSize), spki, canonical)
	all := string(both)
	v.Key.Fingerprint = all[:fingerprintSize]
	if label != "" {
		v.Key.OtherFingerprint, v.Key.OtherLabel = all[fingerprintSize:], label
	}
	v.Key.SSHFingerprint, v.Key.Comment = k.SSHFingerprint()
	return v
}

// checkWeak adds the findings of the weak-key checks, when the Checker
// makes them, to v: a key whose SPKI is spki.
func (c *Checker) checkWeak(v *Verdict, spki []byte) {
	w := c.opts.Weak
	if w == nil {
		return
	}
	v.weakChecked = true
	res, err := w.Check(spki)
	if err != nil && v.Err == nil {
		v.Err = perr.Errorf("weak-key checks: %w", err)
	}
	if len(res.Findings) > 0 {
		v.Findings = res.Findings
	}
}

// checkModulus makes v the verdict on a bare RSA modulus n: the weak-key
// checks' findings, and that the filter could not look it up (it has no
// SPKI); without the weak-key checks, the error of spki, what keys gives
// for its SPKI.
func (c *Checker) checkModulus(v *Verdict, n []byte, spki func() ([]byte, error)) {
	w := c.opts.Weak
	if w == nil {
		_, v.Err = spki()
		return
	}
	v.weakChecked = true
	res, err := w.CheckModulus(n)
	switch {
	case err != nil:
		v.Err = perr.Errorf("weak-key checks: %w", err)
	case c.q != nil:
		v.Err = errNotLookedUp
	}
	if len(res.Findings) > 0 {
		v.Findings = res.Findings
	}
}

// errNotLookedUp is the filter's part of the verdict on a bare modulus.
var errNotLookedUp = perr.Kind(keys.ErrUnsupportedKey, perr.Errorf("%w: not looked up in the filter: a bare RSA modulus has no SPKI", keys.ErrInvalidKey))

// fingerprintSize is the length of a fingerprint: a SHA-256 in hex.
const fingerprintSize = 64

// A lookup is the memory Contains and CheckKey look a key up with: the
// encodings keys.Forms builds, and the filter's answers. It is pooled, on
// the heap: what a Querier is given, the compiler cannot keep on the
// caller's stack.
type lookup struct {
	room [512]byte // the encodings of most keys
	encs [3][]byte
	out  [3]bool
}

var lookups = sync.Pool{New: func() any { return new(lookup) }}

func (l *lookup) put() {
	l.encs = [3][]byte{} // the caller's bytes are not kept
	lookups.Put(l)
}

// any reports whether q probably holds any of a key's encodings (see
// encodings), asked in one call: a Live answers all of them from one
// file.
func (l *lookup) any(q Querier, spki, canonical, other []byte) bool {
	n := encodings(&l.encs, spki, canonical, other)
	if n == 1 {
		return q.Probably(spki)
	}
	out := l.out[:n]
	q.ProbablyBatch(l.encs[:n], out)
	for _, o := range out {
		if o {
			return true
		}
	}
	return false
}

// anyOrFault is any, with the panic of a filter whose file was cut short
// returned as its error.
func (l *lookup) anyOrFault(q Querier, spki, canonical, other []byte) (hit bool, err error) {
	defer recoverFileChanged(&err)
	return l.any(q, spki, canonical, other), nil
}

// recoverFileChanged, deferred, turns a panic with an error wrapping
// pkbf.ErrFileChanged (a query on a file cut short) into *err; any other
// panic goes on.
func recoverFileChanged(err *error) {
	if r := recover(); r != nil {
		if e, ok := r.(error); ok && errors.Is(e, pkbf.ErrFileChanged) {
			*err = e
			return
		}
		panic(r)
	}
}

// encodings sets e to the encodings under which a key is looked up and
// returns how many: as given, canonical where it differs, and the other
// form (an EC key's other point form, an RSA-PSS key as plain RSA), as
// keys.Forms gives them.
func encodings(e *[3][]byte, spki, canonical, other []byte) int {
	e[0] = spki
	n := 1
	if canonical != nil && !bytes.Equal(canonical, spki) { // the same memory, mostly: memequal's first test
		e[n], n = canonical, n+1
	}
	if other != nil {
		e[n], n = other, n+1
	}
	return n
}

// appendFingerprints appends the fingerprint reported for a key and,
// where a second is reported beside it, that one, and returns the
// second's label ("" for none). The first is the canonical encoding's
// (what the reference implementation stores, and pwnedkeys names), with
// the bytes as given beside it ("as given") where they differ; but for a
// key with explicit EC parameters (a certificate's SPKI, which the
// reference hashes as it stands), openssl (x509 -pubkey, pkey -pubin)
// keeps the parameters and fingerprints the bytes as given: that is
// first, and the canonical one "named curve".
func appendFingerprints(dst, spki, canonical []byte) ([]byte, string) {
	switch {
	case bytes.Equal(spki, canonical):
		return keys.AppendFingerprint(dst, canonical), ""
	case keys.ExplicitCurve(spki):
		return keys.AppendFingerprint(keys.AppendFingerprint(dst, spki), canonical), "named curve"
	}
	return keys.AppendFingerprint(keys.AppendFingerprint(dst, canonical), spki), "as given"
}

// AddKey adds the key of data, anything [keys.SPKI] reads, to w under
// every encoding [keys.Encodings] lists: as given, canonical, and an EC
// key under both point forms, as the publisher does, so that a Checker
// finds it in any of them. It returns how many of those encodings were
// new; errors wrap [keys.ErrInvalidKey], or are [pkbf.Writable.Add]'s.
func AddKey(w *pkbf.Writable, data []byte) (int, error) {
	spki, err := keys.SPKI(data)
	if err != nil {
		return 0, err
	}
	encs, err := keys.Encodings(spki)
	if err != nil {
		return 0, err
	}
	return addEncodings(w, encs)
}

// addEncodings adds each of a key's encodings to w, and returns how many
// were new.
func addEncodings(w *pkbf.Writable, encs [][]byte) (int, error) {
	added := 0
	for _, e := range encs {
		ok, err := w.Add(e)
		if err != nil {
			return added, err
		}
		if ok {
			added++
		}
	}
	return added, nil
}
