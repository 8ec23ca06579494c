package pkbf

import (
	"unsafe"

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
// any of the encodings a filter may hold it in ([keys.Encodings]): spki as
// given, its canonical re-encoding, and for EC keys both point forms. False
// is definite for all of them. spki as given is tried first, and is tried
// even when it cannot be parsed (then it is the only one).
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
	return (!sameSlice(canonical, spki) && f.Probably(canonical)) || (other != nil && f.Probably(other))
}

// containsChunk is how many keys ContainsBatch looks up in other forms at
// once, with their encodings built in a buffer on the stack.
const containsChunk = 32

// ContainsBatch sets out[i] = f.Contains(spkis[i]) for every i: exactly the
// same answers, computed together, as [Filter.ProbablyBatch] computes
// Probably's: first every key as given, then the other encodings of the
// keys not found, in batches. out must be at least as long as spkis. For
// RSA keys already in canonical form it costs what ProbablyBatch does;
// like Contains it allocates only for keys in a form other than the
// canonical one (or an EC point form of it). Safe for concurrent use.
func (f *Filter) ContainsBatch(spkis [][]byte, out []bool) {
	f.ProbablyBatch(spkis, out)
	var scratch [containsChunk * 192]byte
	var others [2 * containsChunk][]byte
	var owner [2 * containsChunk]int
	var found [2 * containsChunk]bool
	n, used := 0, 0
	for i, s := range spkis {
		if !out[i] {
			// The other encodings, built in scratch from used on; a key
			// that cannot be parsed has none.
			canonical, other, err := keys.Forms(scratch[used:used], s)
			if err == nil && !sameSlice(canonical, s) {
				others[n], owner[n] = canonical, i
				n++
				used = max(used, endIn(scratch[:], canonical))
			}
			if err == nil && other != nil {
				others[n], owner[n] = other, i
				n++
				used = max(used, endIn(scratch[:], other))
			}
		}
		if n > len(others)-2 || used > len(scratch)-192 || i == len(spkis)-1 {
			f.ProbablyBatch(others[:n], found[:n])
			for j := range n {
				out[owner[j]] = out[owner[j]] || found[j]
			}
			n, used = 0, 0
		}
	}
}

// endIn returns the offset in buf just past e, if e lies in buf, else 0.
func endIn(buf, e []byte) int {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(e)))
	if p < start || p >= start+uintptr(len(buf)) {
		return 0
	}
	return int(p-start) + len(e)
}

// sameSlice reports whether a and b are the same bytes in memory.
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// AddKey adds the key of data, anything [SPKI] accepts, under every
// encoding [Encodings] lists: an EC key under both point forms, as the
// publisher does. It returns how many of those encodings were new; errors
// wrap [ErrInvalidKey], or come from the file of a filter edited in place.
func (f *Filter) AddKey(data []byte) (int, error) {
	spki, err := SPKI(data)
	if err != nil {
		return 0, err
	}
	encodings, err := keys.Encodings(spki)
	if err != nil {
		return 0, err
	}
	added := 0
	for _, e := range encodings {
		if f.Add(e) {
			added++
		}
	}
	return added, f.Err()
}
