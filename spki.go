package pkbf

import "github.com/pkbf/pkbf/keys"

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
	canonical, other, err := keys.Forms(buf[:0], spki)
	if err != nil {
		return false
	}
	e, n := lookups(spki, canonical, other)
	for _, enc := range e[1:n] { // e[0] is spki, tried above
		if f.Probably(enc) {
			return true
		}
	}
	return false
}

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
