package keys

import (
	"slices"

	"github.com/pkbf/pkbf/internal/der"
)

// buildSPKIRaw builds SEQUENCE { SEQUENCE { OID, params }, BIT STRING key }
// from the OID's content, the parameters' whole encoding (or nil) and the
// key's bytes.
func buildSPKIRaw(oid, params, key []byte) []byte {
	return appendSPKIRaw(nil, oid, params, key)
}

// appendSPKIRaw is buildSPKIRaw appending to dst.
func appendSPKIRaw(dst, oid, params, key []byte) []byte {
	algLen := der.Len(len(oid)) + len(params)
	bitsLen := 1 + len(key)
	dst = slices.Grow(dst, der.Len(der.Len(algLen)+der.Len(bitsLen)))
	dst = der.AppendHeader(dst, der.TagSequence, der.Len(algLen)+der.Len(bitsLen))
	dst = der.AppendHeader(dst, der.TagSequence, algLen)
	dst = der.AppendHeader(dst, der.TagOID, len(oid))
	dst = append(append(dst, oid...), params...)
	dst = der.AppendHeader(dst, der.TagBitString, bitsLen)
	return append(append(dst, 0), key...)
}

// oidDER encodes OID content bytes as a DER OBJECT IDENTIFIER.
func oidDER(content []byte) []byte {
	return append([]byte{der.TagOID, byte(len(content))}, content...)
}
