// Package lookup says under which encodings a key is looked up in a
// filter, and which of them names it: the rules Contains, CheckKey and
// Check share.
package lookup

import (
	"bytes"

	"github.com/pkbf/pkbf/internal/fingerprint"
	"github.com/pkbf/pkbf/keys"
)

// Encodings returns the encodings under which a key is looked up, n of
// them: as given, canonical where it differs, and the other form (an EC
// key's other point form, an RSA-PSS key as plain RSA), as keys.Forms
// gives them.
func Encodings(spki, canonical, other []byte) (e [3][]byte, n int) {
	e[0], n = spki, 1
	if canonical != nil && !bytes.Equal(canonical, spki) { // the same memory, mostly: memequal's first test
		e[n], n = canonical, n+1
	}
	if other != nil {
		e[n], n = other, n+1
	}
	return e, n
}

// AppendFingerprints appends the fingerprint reported for a key and, where
// a second is reported beside it, that one, and returns the second's label
// ("" for none). The first is the canonical encoding's (what the reference
// implementation stores, and pwnedkeys names), with the bytes as given
// beside it ("as given") where they differ; but for a key with explicit EC
// parameters (a certificate's SPKI, which the reference hashes as it
// stands), openssl (x509 -pubkey, pkey -pubin) keeps the parameters and
// fingerprints the bytes as given: that is first, and the canonical one
// "named curve".
func AppendFingerprints(dst, spki, canonical []byte) ([]byte, string) {
	switch {
	case bytes.Equal(spki, canonical):
		return fingerprint.Append(dst, canonical), ""
	case keys.ExplicitCurve(spki):
		return fingerprint.Append(fingerprint.Append(dst, spki), canonical), "named curve"
	}
	return fingerprint.Append(fingerprint.Append(dst, canonical), spki), "as given"
}
