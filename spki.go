package pkbf

import (
	"runtime/debug"
	"sync"

	"github.com/pkbf/pkbf/internal/fingerprint"
	"github.com/pkbf/pkbf/internal/lookup"
	"github.com/pkbf/pkbf/keys"
)

// What a user holds, turned into the bytes a filter hashes: a thin facade
// over package keys, which reads keys, certificates, requests and
// containers in every form and knows the encodings of a key.

// SPKI returns the DER SubjectPublicKeyInfo of the key, certificate or
// certificate request in data, in any form [keys.SPKI] reads (PEM, DER,
// OpenSSH, PuTTY, PKCS#1/#8/#12). Errors wrap [keys.ErrInvalidKey]. Look
// the result up with [Filter.Contains], which finds the key under any of
// its encodings; [Filter.Probably] tests those exact bytes only.
func SPKI(data []byte) ([]byte, error) { return keys.SPKI(data) }

// Fingerprint returns the pwnedkeys fingerprint of a DER
// SubjectPublicKeyInfo: the lowercase hex SHA-256 of its bytes, as the
// pwnedkeys API names keys. Fingerprint the canonical encoding
// ([keys.Canonical]) to get the one the API knows a key by.
func Fingerprint(spki []byte) string { return keys.Fingerprint(spki) }

// Contains reports whether the filter probably holds the key of spki under
// any of the encodings a filter may hold it in: spki as given, its
// canonical re-encoding ([keys.Canonical]), and for EC keys both point
// forms. False is definite for all of them. spki as given is tried
// first, and is tried even when it cannot be parsed (then it is the only
// one). [Filter.Check] gives the same answers for many keys at once, and
// faster.
//
// For an RSA key already in canonical form this is one query, as
// [Filter.Probably], and allocates nothing; an EC key costs two, plus a
// square root when its point is compressed. Contains is safe for
// concurrent use and panics as Probably does.
func (f *Filter) Contains(spki []byte) bool {
	if f.Probably(spki) {
		return true
	}
	var buf [256]byte // room for the other forms of most keys
	e, n := lookupForms(buf[:0], spki)
	for _, enc := range e[1:n] { // e[0] is spki, tried above
		if f.Probably(enc) {
			return true
		}
	}
	return false
}

// Contains is [Filter.Contains] on the filter being written.
func (w *Writable) Contains(spki []byte) bool {
	if w.Probably(spki) {
		return true
	}
	var buf [256]byte
	e, n := lookupForms(buf[:0], spki)
	for _, enc := range e[1:n] { // e[0] is spki, tried above
		if w.Probably(enc) {
			return true
		}
	}
	return false
}

// lookupForms returns the encodings Contains looks spki up under, n of
// them, spki first, built in buf's spare capacity.
func lookupForms(buf, spki []byte) ([3][]byte, int) {
	canonical, other, err := keys.Forms(buf, spki)
	if err != nil {
		return [3][]byte{spki}, 1
	}
	return lookup.Encodings(spki, canonical, other)
}

// CheckKey returns the verdict on the one key in data, anything [SPKI]
// accepts: Probably when the filter probably holds it under any encoding
// it may hold it in (the answer [Filter.Contains] gives), or Err, wrapping
// [keys.ErrInvalidKey], when data holds no key it can read.
//
// A key the filter lacks as given, whose other encodings pkbf cannot
// derive (an algorithm it does not know, a malformed key), gets Err, not
// a "no": a gate refuses what it cannot check.
//
// A hit carries what a gate logs when it refuses a key: the fingerprints
// (as [Filter.Check] reports them) and, for an SSH key, SSHFingerprint and
// Comment. A "no" carries nothing else, so that it costs and allocates
// what Contains does (nothing, for a key in DER in its canonical form);
// name a clean key with [Fingerprint] if you must. Input and the positions are zero. CheckKey is
// safe for concurrent use and does no I/O: confirm a hit with package
// pwnedkeys.
func (f *Filter) CheckKey(data []byte) Verdict {
	var c keyCheck
	if v, done := c.start(data); done {
		return v
	}
	defer c.done()
	return c.finish(f.probablyAny(c.encodings()))
}

// CheckKey is [Filter.CheckKey] on the filter being written.
func (w *Writable) CheckKey(data []byte) Verdict {
	var c keyCheck
	if v, done := c.start(data); done {
		return v
	}
	defer c.done()
	return c.finish(w.probablyAny(c.encodings()))
}

// keyCheck is CheckKey's work around the lookups a Filter and a Writable
// make their own way (no interface: the encodings stay off the heap).
type keyCheck struct {
	k                      keys.Key
	buf                    *[]byte
	spki, canonical, other []byte
	formsErr               error
	e                      [3][]byte
	n                      int
}

// start reads the key and its encodings; done reports that v is the
// verdict already (a key that could not be read).
func (c *keyCheck) start(data []byte) (v Verdict, done bool) {
	c.k = keys.ParseKey(data)
	c.buf = formsBuffers.Get().(*[]byte)
	c.spki, c.canonical, c.other, c.formsErr = c.k.Forms((*c.buf)[:0])
	switch {
	case c.spki == nil:
		c.done()
		return Verdict{Err: c.formsErr}, true
	case c.formsErr != nil:
		c.canonical, c.other = c.spki, nil // looked up as given only
	}
	c.e, c.n = lookup.Encodings(c.spki, c.canonical, c.other)
	return Verdict{}, false
}

func (c *keyCheck) encodings() [][]byte { return c.e[:c.n] }

// done gives the encodings' buffer back.
func (c *keyCheck) done() {
	if c.buf != nil {
		formsBuffers.Put(c.buf)
		c.buf = nil
	}
}

// finish makes the verdict from the lookups' answer.
func (c *keyCheck) finish(hit bool, err error) Verdict {
	switch {
	case err != nil:
		return Verdict{Err: err}
	case !hit && c.formsErr != nil:
		// Not as given, and its other encodings unknown: no "no".
		return Verdict{Err: c.formsErr}
	case !hit:
		return Verdict{}
	}
	v := Verdict{Probably: true}
	both, label := lookup.AppendFingerprints(make([]byte, 0, 2*fingerprint.Size), c.spki, c.canonical)
	all := string(both)
	v.Fingerprint = all[:fingerprint.Size]
	if label != "" {
		v.OtherFingerprint, v.OtherLabel = all[fingerprint.Size:], label
	}
	v.SSHFingerprint, v.Comment = c.k.SSHFingerprint()
	return v
}

// probablyAny reports whether the filter probably holds any of encs. A
// fault in the filter's file, cut short while mapped, is its error
// ([ErrFileChanged]) instead of Probably's panic.
func (f *Filter) probablyAny(encs [][]byte) (hit bool, err error) {
	if f.mapped != nil {
		defer f.mapped.RecoverFault(debug.SetPanicOnFault(true), &err)
	}
	for _, e := range encs {
		if f.probably(e) {
			return true, nil
		}
	}
	return false, nil
}

// probablyAny is [Filter.probablyAny] on the filter being written.
func (w *Writable) probablyAny(encs [][]byte) (hit bool, err error) {
	if w.mapped != nil {
		defer w.mapped.RecoverFault(debug.SetPanicOnFault(true), &err)
	}
	for _, e := range encs {
		if w.probably(e) {
			return true, nil
		}
	}
	return false, nil
}

// formsBuffers hold CheckKey's encodings of a key: the compiler cannot
// keep them on the stack, as they pass through the key's parse.
var formsBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// AddKey adds the key of data, anything [SPKI] accepts, under every
// encoding [keys.Encodings] lists: as given, canonical, and an EC key
// under both point forms, as the publisher does, so that [Filter.Contains]
// finds it in any of them. It returns how many of those encodings were
// new; errors wrap [keys.ErrInvalidKey], or are [Writable.Add]'s.
func (w *Writable) AddKey(data []byte) (int, error) {
	spki, err := SPKI(data)
	if err != nil {
		return 0, err
	}
	encodings, err := keys.Encodings(spki)
	if err != nil {
		return 0, err
	}
	return w.addEncodings(encodings)
}

// addEncodings adds each of a key's encodings, and returns how many were
// new.
func (w *Writable) addEncodings(encodings [][]byte) (int, error) {
	added := 0
	for _, e := range encodings {
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
