// Package keys turns what users hold into the DER SubjectPublicKeyInfo
// (SPKI) that a pwnedkeys filter hashes: keys, certificates and
// certificate requests in PEM, DER, OpenSSH, RFC 4716 and PuTTY form,
// PKCS#1, PKCS#8 and SEC 1 private keys (their public keys), PKCS#7
// bundles (DER, or BER as Windows and openssl smime write them), PKCS#12
// files and armored OpenPGP public keys (their RSA keys).
//
// [SPKI] reads one object; a [Scanner] reads every object of a stream, in
// bounded memory, each as a [Key] that knows where it came from.
// [OpenPGPKeys] reads the RSA keys of an OpenPGP public key.
//
// One key has many DER encodings. [Canonical] gives the one OpenSSL writes
// and pwnedkeys fingerprints ([Fingerprint]); [Encodings] every one under
// which a filter may hold the key; [Forms] the ones a lookup needs,
// without allocating for keys in common forms.
//
// Input is untrusted: nothing here panics on it, and what one input may
// cost is bounded (explicit curve parameters are validated before any
// arithmetic, key derivations of a PKCS#12 file share a budget, a
// container gives at most 10000 parts). Errors wrap [ErrInvalidKey], and
// [ErrUnsupportedKey] or [ErrEncryptedKey] for keys that are valid but
// cannot be read. This package does not import the filter package.
package keys
