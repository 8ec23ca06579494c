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
// [KeyChecker]: a *Checker, or a test's fake.
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
	"github.com/pkbf/pkbf/keys"
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

// Options adjust a [Checker]'s [Checker.Check] and [AddKeys]; CheckKey and
// Contains use none of them. The zero value is ready to use.
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

	// (The checks run beside the filter, such as the weak-key checks,
	// belong here: which to run, and what they need.)
}

// A Checker checks keys against one filter. It is safe for concurrent
// use.
type Checker struct {
	q    Querier
	opts Options
}

// New returns a Checker of keys against q, with opts for its Check. It
// panics if q is nil, or a nil *pkbf.Filter, *pkbf.Writable or *pkbf.Live
// (a filter whose open failed): a gate with no filter must not start.
func New(q Querier, opts Options) *Checker {
	var missing bool
	switch f := q.(type) {
	case nil:
		missing = true
	case *pkbf.Filter:
		missing = f == nil
	case *pkbf.Writable:
		missing = f == nil
	case *pkbf.Live:
		missing = f == nil
	}
	if missing {
		panic("keycheck: New without a filter")
	}
	return &Checker{q: q, opts: opts}
}

// Contains reports whether the filter probably holds the key of spki, a
// DER SubjectPublicKeyInfo, under any of the encodings a filter may hold
// it in: spki as given, its canonical re-encoding ([keys.Canonical]), and
// the other forms [keys.Forms] gives (both point forms of an EC key). An
// spki that cannot be parsed is looked up as given only. False is
// definite for all of them.
//
// Contains allocates nothing for a key in DER in its canonical form. It
// panics as the filter's Probably does on a file cut short, where
// [Checker.CheckKey] returns an error.
func (c *Checker) Contains(spki []byte) bool {
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
// [pkbf.ErrFileChanged]).
//
// A hit carries the Key's names that a gate logs when it refuses a key:
// its fingerprints (as [Checker.Check] reports them) and, for an SSH key,
// SSHFingerprint and Comment. A "no" carries nothing else, so that it
// costs and allocates what Contains does; its Source is zero. CheckKey
// does no I/O: confirm a hit with package pwnedkeys.
func (c *Checker) CheckKey(data []byte) Verdict {
	k := keys.ParseKey(data)
	l := lookups.Get().(*lookup)
	defer l.put()
	spki, canonical, other, formsErr := k.Forms(l.room[:0])
	switch {
	case spki == nil:
		return Verdict{Err: formsErr}
	case formsErr != nil:
		canonical, other = spki, nil // looked up as given only
	}
	hit, err := l.anyOrFault(c.q, spki, canonical, other)
	switch {
	case err != nil:
		return Verdict{Err: err}
	case !hit && formsErr != nil:
		// Not as given, and its other encodings unknown: no "no".
		return Verdict{Err: formsErr}
	case !hit:
		return Verdict{}
	}
	v := Verdict{Probably: true}
	both, label := appendFingerprints(make([]byte, 0, 2*fingerprintSize), spki, canonical)
	all := string(both)
	v.Key.Fingerprint = all[:fingerprintSize]
	if label != "" {
		v.Key.OtherFingerprint, v.Key.OtherLabel = all[fingerprintSize:], label
	}
	v.Key.SSHFingerprint, v.Key.Comment = k.SSHFingerprint()
	return v
}

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
