// Package pkcs12 holds the cryptography of PKCS#12 files (RFC 7292) that
// the standard library and x/crypto do not offer: the PKCS#12 key
// derivation, RC2 decryption (RFC 2268) for the 40-bit RC2 of older files,
// and CBC decryption with PKCS#7 padding. It reads no file structure.
package pkcs12
