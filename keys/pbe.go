package keys

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/rc4"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"hash"

	"github.com/pkbf/pkbf/internal/der"
	"github.com/pkbf/pkbf/keys/internal/pkcs12"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// errBadPadding marks a decryption that did not end in valid padding: the
// wrong password, most likely.
var errBadPadding = keyErrorf("decryption gives bad padding")

var (
	oidPBKDF2      = der.OID(1, 2, 840, 113549, 1, 5, 12)
	oidHMACSHA1    = der.OID(1, 2, 840, 113549, 2, 7)
	oidHMACSHA224  = der.OID(1, 2, 840, 113549, 2, 8)
	oidHMACSHA256  = der.OID(1, 2, 840, 113549, 2, 9)
	oidHMACSHA384  = der.OID(1, 2, 840, 113549, 2, 10)
	oidHMACSHA512  = der.OID(1, 2, 840, 113549, 2, 11)
	oidAES128CBC   = der.OID(2, 16, 840, 1, 101, 3, 4, 1, 2)
	oidAES192CBC   = der.OID(2, 16, 840, 1, 101, 3, 4, 1, 22)
	oidAES256CBC   = der.OID(2, 16, 840, 1, 101, 3, 4, 1, 42)
	oidDESEDE3CBC  = der.OID(1, 2, 840, 113549, 3, 7)
	oidPBESHA1RC4  = der.OID(1, 2, 840, 113549, 1, 12, 1, 1) // 128-bit
	oidPBESHA1RC4s = der.OID(1, 2, 840, 113549, 1, 12, 1, 2) // 40-bit
	oidPBESHA13DES = der.OID(1, 2, 840, 113549, 1, 12, 1, 3)
	oidPBESHA12DES = der.OID(1, 2, 840, 113549, 1, 12, 1, 4)
	oidPBESHA1RC2  = der.OID(1, 2, 840, 113549, 1, 12, 1, 5) // 128-bit
	oidPBESHA1RC2s = der.OID(1, 2, 840, 113549, 1, 12, 1, 6) // 40-bit
	oidSHA1        = der.OID(1, 3, 14, 3, 2, 26)
	oidSHA224      = der.OID(2, 16, 840, 1, 101, 3, 4, 2, 4)
	oidSHA256      = der.OID(2, 16, 840, 1, 101, 3, 4, 2, 1)
	oidSHA384      = der.OID(2, 16, 840, 1, 101, 3, 4, 2, 2)
	oidSHA512      = der.OID(2, 16, 840, 1, 101, 3, 4, 2, 3)
)

// hashByOID returns the hash of a digest or HMAC OID.
func hashByOID(oid []byte) func() hash.Hash {
	switch {
	case bytes.Equal(oid, oidSHA1), bytes.Equal(oid, oidHMACSHA1):
		return sha1.New
	case bytes.Equal(oid, oidSHA224), bytes.Equal(oid, oidHMACSHA224):
		return sha256.New224
	case bytes.Equal(oid, oidSHA256), bytes.Equal(oid, oidHMACSHA256):
		return sha256.New
	case bytes.Equal(oid, oidSHA384), bytes.Equal(oid, oidHMACSHA384):
		return sha512.New384
	case bytes.Equal(oid, oidSHA512), bytes.Equal(oid, oidHMACSHA512):
		return sha512.New
	}
	return nil
}

// pbeDecrypt decrypts data under a password-based encryption algorithm:
// PBES2 (PBKDF2 with AES-CBC or 3DES-CBC) or a PKCS#12 PBE (3DES, RC2, RC4).
// Each try spends from budget.
func pbeDecrypt(alg, data []byte, password string, budget *kdfBudget) ([]byte, error) {
	s := cryptobyte.String(alg)
	var algSeq, oid, params cryptobyte.String
	if !s.ReadASN1(&algSeq, cbasn1.SEQUENCE) || !algSeq.ReadASN1(&oid, cbasn1.OBJECT_IDENTIFIER) ||
		!algSeq.ReadASN1(&params, cbasn1.SEQUENCE) {
		return nil, keyErrorf("encryption algorithm identifier is malformed")
	}
	if bytes.Equal(oid, oidPBES2) {
		return pbes2Decrypt(params, data, password, budget)
	}
	var salt cryptobyte.String
	var iterations int
	if !params.ReadASN1(&salt, cbasn1.OCTET_STRING) || !params.ReadASN1Integer(&iterations) {
		return nil, keyErrorf("PKCS#12 PBE parameters are malformed")
	}
	// Runs of the KDF, one per 20-byte SHA-1 block: RC2 a key and an IV,
	// RC4 a key only, 3DES a 24-byte key (two blocks, or the two-key
	// variant's two calls) and an IV.
	runs := 2
	if bytes.Equal(oid, oidPBESHA1RC4) || bytes.Equal(oid, oidPBESHA1RC4s) {
		runs = 1
	} else if bytes.Equal(oid, oidPBESHA13DES) || bytes.Equal(oid, oidPBESHA12DES) {
		runs = 3
	}
	if err := budget.spend("PKCS#12 PBE", iterations, runs); err != nil {
		return nil, err
	}
	pw := pkcs12.BMPPassword(password)
	kdf := func(id byte, size int) []byte { return pkcs12.KDF(sha1.New, id, pw, salt, iterations, size) }
	switch {
	case bytes.Equal(oid, oidPBESHA13DES), bytes.Equal(oid, oidPBESHA12DES):
		key := kdf(1, 24)
		if bytes.Equal(oid, oidPBESHA12DES) {
			key = append(kdf(1, 16), kdf(1, 8)...)
		}
		block, err := des.NewTripleDESCipher(key)
		if err != nil {
			return nil, keyErrorf("3DES key: %v", err)
		}
		return cbcDecrypt(block, kdf(2, 8), data)
	case bytes.Equal(oid, oidPBESHA1RC2), bytes.Equal(oid, oidPBESHA1RC2s):
		size := 16
		if bytes.Equal(oid, oidPBESHA1RC2s) {
			size = 5
		}
		return cbcDecrypt(pkcs12.NewRC2(kdf(1, size), 8*size), kdf(2, 8), data)
	case bytes.Equal(oid, oidPBESHA1RC4), bytes.Equal(oid, oidPBESHA1RC4s):
		size := 16
		if bytes.Equal(oid, oidPBESHA1RC4s) {
			size = 5
		}
		c, err := rc4.NewCipher(kdf(1, size))
		if err != nil {
			return nil, keyErrorf("RC4 key: %v", err)
		}
		out := make([]byte, len(data))
		c.XORKeyStream(out, data)
		return out, nil
	}
	return nil, unsupportedErrorf("encryption algorithm %s is not supported", oidString(oid))
}

// pbes2Decrypt decrypts under PBES2 (RFC 8018): PBKDF2 and a CBC cipher.
func pbes2Decrypt(params cryptobyte.String, data []byte, password string, budget *kdfBudget) ([]byte, error) {
	var kdf, kdfOID, kdfParams, scheme, schemeOID, salt, iv cryptobyte.String
	var iterations, keyLength int
	var prf cryptobyte.String
	var hasPRF bool
	if !params.ReadASN1(&kdf, cbasn1.SEQUENCE) || !kdf.ReadASN1(&kdfOID, cbasn1.OBJECT_IDENTIFIER) ||
		!bytes.Equal(kdfOID, oidPBKDF2) || !kdf.ReadASN1(&kdfParams, cbasn1.SEQUENCE) ||
		!kdfParams.ReadASN1(&salt, cbasn1.OCTET_STRING) || !kdfParams.ReadASN1Integer(&iterations) ||
		kdfParams.PeekASN1Tag(cbasn1.INTEGER) && !kdfParams.ReadASN1Integer(&keyLength) ||
		!kdfParams.ReadOptionalASN1(&prf, &hasPRF, cbasn1.SEQUENCE) ||
		!params.ReadASN1(&scheme, cbasn1.SEQUENCE) || !scheme.ReadASN1(&schemeOID, cbasn1.OBJECT_IDENTIFIER) ||
		!scheme.ReadASN1(&iv, cbasn1.OCTET_STRING) {
		return nil, keyErrorf("PBES2 parameters are malformed or not PBKDF2")
	}
	h := sha1.New
	if hasPRF {
		var prfOID cryptobyte.String
		if !prf.ReadASN1(&prfOID, cbasn1.OBJECT_IDENTIFIER) || hashByOID(prfOID) == nil {
			return nil, keyErrorf("PBKDF2 pseudo-random function is not supported")
		}
		h = hashByOID(prfOID)
	}
	var size int
	var newBlock func([]byte) (cipher.Block, error)
	switch {
	case bytes.Equal(schemeOID, oidAES128CBC):
		size, newBlock = 16, aes.NewCipher
	case bytes.Equal(schemeOID, oidAES192CBC):
		size, newBlock = 24, aes.NewCipher
	case bytes.Equal(schemeOID, oidAES256CBC):
		size, newBlock = 32, aes.NewCipher
	case bytes.Equal(schemeOID, oidDESEDE3CBC):
		size, newBlock = 24, des.NewTripleDESCipher
	default:
		return nil, unsupportedErrorf("PBES2 cipher %s is not supported", oidString(schemeOID))
	}
	// PBKDF2 runs its iterations once for each block of the hash's size.
	if err := budget.spend("PBKDF2", iterations, (size+h().Size()-1)/h().Size()); err != nil {
		return nil, err
	}
	key, err := pbkdf2.Key(h, password, salt, iterations, size)
	if err != nil {
		return nil, keyErrorf("PBKDF2: %v", err)
	}
	block, err := newBlock(key)
	if err != nil {
		return nil, keyErrorf("PBES2 key: %v", err)
	}
	return cbcDecrypt(block, iv, data)
}

// cbcDecrypt decrypts CBC and removes PKCS#7 padding.
func cbcDecrypt(block cipher.Block, iv, data []byte) ([]byte, error) {
	out, err := pkcs12.DecryptCBC(block, iv, data)
	switch {
	case err == pkcs12.ErrBadPadding:
		return nil, errBadPadding
	case err != nil:
		return nil, keyErrorf("%v", err)
	}
	return out, nil
}
