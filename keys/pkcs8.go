package keys

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"

	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/cloudflare/circl/dh/x448"
	"github.com/cloudflare/circl/sign/ed448"
	"golang.org/x/crypto/cryptobyte"
)

// Private keys: the public key is taken from the file where it carries
// one, or computed from the private key. The SPKI is returned in its
// canonical form (see Canonical), as OpenSSL writes it from the key.

// pkcs8SPKI reads a PKCS#8 PrivateKeyInfo or OneAsymmetricKey: SEQUENCE {
// version, AlgorithmIdentifier, OCTET STRING privateKey, [0] attributes
// OPTIONAL, [1] publicKey OPTIONAL }.
func pkcs8SPKI(der []byte) ([]byte, error) {
	s := cryptobyte.String(der)
	var seq, alg, algorithm, priv, pub cryptobyte.String
	var version int
	var hasPub bool
	if !s.ReadASN1(&seq, cbasn1.SEQUENCE) || !s.Empty() ||
		!seq.ReadASN1Integer(&version) ||
		!seq.ReadASN1(&alg, cbasn1.SEQUENCE) || !readOID(&alg, &algorithm) ||
		!seq.ReadASN1(&priv, cbasn1.OCTET_STRING) ||
		!seq.SkipOptionalASN1(cbasn1.Tag(0).Constructed().ContextSpecific()) ||
		!seq.ReadOptionalASN1(&pub, &hasPub, cbasn1.Tag(1).ContextSpecific()) || !seq.Empty() {
		return nil, keyErrorf("PKCS#8 private key is malformed")
	}
	name := algorithmName(algorithm)
	if version != 0 && version != 1 {
		return nil, keyErrorf("PKCS#8 %s private key version is %d, want 0 or 1", name, version)
	}
	params := []byte(alg) // the parameters' whole encoding, or empty
	if hasPub {
		// The file carries the public key (RFC 5958): use it as it is.
		if len(pub) == 0 || pub[0] != 0 {
			return nil, keyErrorf("PKCS#8 %s public key BIT STRING is malformed", name)
		}
		return Canonical(buildSPKIRaw(algorithm, params, pub[1:]))
	}
	switch {
	case bytes.Equal(algorithm, oidRSA):
		return pkcs1PrivateSPKI(priv)
	case bytes.Equal(algorithm, oidRSAPSS):
		// OpenSSL writes the SPKI of an RSA-PSS key with the
		// AlgorithmIdentifier of the private key: the same parameters.
		n, e, err := pkcs1PrivatePublic(priv) // magnitudes: made INTEGER contents
		if err != nil {
			return nil, err
		}
		return Canonical(buildSPKIRaw(algorithm, params, rsaKeyDER(append([]byte{0}, n...), append([]byte{0}, e...))))
	case bytes.Equal(algorithm, oidECPublicKey):
		return sec1SPKI(priv, params)
	case bytes.Equal(algorithm, oidEd25519), bytes.Equal(algorithm, oidEd448),
		bytes.Equal(algorithm, oidX25519), bytes.Equal(algorithm, oidX448):
		var k cryptobyte.String
		if !priv.ReadASN1(&k, cbasn1.OCTET_STRING) || !priv.Empty() {
			return nil, keyErrorf("PKCS#8 %s private key is not an OCTET STRING", name)
		}
		pub, err := derivePublic(algorithm, k)
		if err != nil {
			return nil, err
		}
		return buildSPKIRaw(algorithm, nil, pub), nil
	case bytes.Equal(algorithm, oidDSA), bytes.Equal(algorithm, oidDHPKCS3), bytes.Equal(algorithm, oidDHX942):
		return modpSPKI(algorithm, params, priv)
	case bytes.Equal(algorithm, oidPBES2):
		return nil, encryptedErrorf("PKCS#8 key is encrypted: pkbf decrypts no private keys but PKCS#12 files: check its public key or certificate instead")
	}
	return nil, unsupportedErrorf("PKCS#8 private key of algorithm %s carries no public key, and pkbf cannot compute one", name)
}

// derivePublic computes the public key of an EdDSA or XDH private key.
func derivePublic(algorithm, k []byte) ([]byte, error) {
	name := algorithmName(algorithm)
	bad := func(want int) ([]byte, error) {
		return nil, keyErrorf("%s private key is %d bytes, want %d", name, len(k), want)
	}
	switch {
	case bytes.Equal(algorithm, oidEd25519):
		if len(k) != ed25519.SeedSize {
			return bad(ed25519.SeedSize)
		}
		return ed25519.NewKeyFromSeed(k).Public().(ed25519.PublicKey), nil
	case bytes.Equal(algorithm, oidX25519):
		priv, err := ecdh.X25519().NewPrivateKey(k)
		if err != nil {
			return bad(32)
		}
		return priv.PublicKey().Bytes(), nil
	case bytes.Equal(algorithm, oidEd448):
		if len(k) != ed448.SeedSize {
			return bad(ed448.SeedSize)
		}
		return ed448.NewKeyFromSeed(k).Public().(ed448.PublicKey), nil
	default: // X448
		var secret, pub x448.Key
		if len(k) != len(secret) {
			return bad(len(secret))
		}
		copy(secret[:], k)
		x448.KeyGen(&pub, &secret)
		return pub[:], nil
	}
}
