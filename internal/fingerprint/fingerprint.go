// Package fingerprint computes the pwnedkeys fingerprint of an SPKI, the
// lowercase hex SHA-256 of its bytes, without allocating: keys.Fingerprint
// and the verdicts of pkbf's Check both write it with Append.
package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
)

// Size is the length of a fingerprint in hex digits.
const Size = 2 * sha256.Size

// Append appends the fingerprint of spki to dst.
func Append(dst, spki []byte) []byte {
	sum := sha256.Sum256(spki)
	return hex.AppendEncode(dst, sum[:])
}
