// Package curves is the table of the elliptic curves over prime and
// binary (characteristic-two) fields that OpenSSL knows, generated from openssl by gen.sh: each curve's name,
// its OID and its explicit parameters, as OpenSSL encodes them. pkbf names
// a curve given by explicit parameters from it, as OpenSSL and the
// reference implementation do, and decompresses points on it.
package curves

//go:generate bash gen.sh

// Curve is one curve of the table, its encodings in hex.
type Curve struct {
	Name     string // OpenSSL's short name, such as "prime256v1"
	OID      string // DER of the named-curve OBJECT IDENTIFIER
	Explicit string // DER of the explicit ECParameters
}
