package keys

import (
	"bytes"
	"crypto/rand"
	"encoding/asn1"
	"errors"
	"testing"

	"github.com/cloudflare/circl/kem/mlkem/mlkem1024"
	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/kem/mlkem/mlkem768"
	"github.com/cloudflare/circl/sign"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"
	"github.com/cloudflare/circl/sign/mldsa/mldsa65"
	"github.com/cloudflare/circl/sign/mldsa/mldsa87"
	"github.com/cloudflare/circl/sign/slhdsa"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/pkbf/pkbf/internal/der"
)

// rawSPKI builds SEQUENCE { SEQUENCE { OID, params }, BIT STRING { unused, key } }.
func rawSPKI(oid, params []byte, unused byte, key []byte) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			addOID(b, oid)
			b.AddBytes(params)
		})
		b.AddASN1(cbasn1.BIT_STRING, func(b *cryptobyte.Builder) {
			b.AddUint8(unused)
			b.AddBytes(key)
		})
	})
	return b.BytesOrPanic()
}

// The table of one-encoding algorithms agrees with circl, an independent
// implementation: ML-DSA's OIDs and key sizes, SLH-DSA's key sizes by
// name, ML-KEM's key sizes. (SLH-DSA's OIDs, which circl lacks, are
// RFC 9909's: 2.16.840.1.101.3.4.3.20 to .31, SHA2 128s, 128f, 192s,
// 192f, 256s, 256f, then SHAKE in the same order.)
func TestRawKeyAlgorithmsMatchCirCL(t *testing.T) {
	type oidScheme interface{ Oid() asn1.ObjectIdentifier }
	want := map[string]int{}
	for _, s := range []sign.Scheme{mldsa44.Scheme(), mldsa65.Scheme(), mldsa87.Scheme()} {
		want[s.Name()] = s.PublicKeySize()
		oid := s.(oidScheme).Oid()
		ints := make([]int, len(oid))
		copy(ints, oid)
		if size, ok := rawKeySize(der.OID(ints...)); !ok || size != s.PublicKeySize() || algorithmName(der.OID(ints...)) != s.Name() {
			t.Errorf("%s (OID %v, %d bytes): the table has %d, %v, %q", s.Name(), oid, s.PublicKeySize(), size, ok, algorithmName(der.OID(ints...)))
		}
	}
	want["ML-KEM-512"], want["ML-KEM-768"], want["ML-KEM-1024"] = mlkem512.PublicKeySize, mlkem768.PublicKeySize, mlkem1024.PublicKeySize
	for _, a := range rawKeyAlgorithms {
		if id, err := slhdsa.IDByName(a.name); err == nil {
			want[a.name] = id.Scheme().PublicKeySize()
		}
	}
	seen := 0
	for _, a := range rawKeyAlgorithms {
		if size, ok := want[a.name]; ok {
			seen++
			if a.size != size {
				t.Errorf("%s: %d bytes in the table, %d in circl", a.name, a.size, size)
			}
		}
	}
	if seen != 3+12+3 {
		t.Errorf("circl knows %d of the table's ML-DSA, SLH-DSA and ML-KEM algorithms, want 18", seen)
	}
}

// Issue 48, item 10: a key of an algorithm with a single DER encoding
// (rawKeyAlgorithms) is its own canonical form, so a lookup of the bytes
// as given is definite; anything but exactly that form (parameters, a
// key of another length, unused bits, a length not in DER's minimal
// form) is an invalid key, and the pre-hash variants, which have no
// certificate encoding, are unsupported.
func TestRawKeyAlgorithmsOneEncoding(t *testing.T) {
	pub, _, err := mldsa44.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	mldsa44Key, _ := pub.MarshalBinary()
	for _, a := range rawKeyAlgorithms {
		key := make([]byte, a.size)
		rand.Read(key)
		if a.name == "ML-DSA-44" {
			key = mldsa44Key
		}
		spki := rawSPKI(a.oid, nil, 0, key)
		canonical, err := Canonical(spki)
		if err != nil || !sameSlice(canonical, spki) {
			t.Errorf("%s: Canonical: %v (the bytes as given: %v)", a.name, err, sameSlice(canonical, spki))
		}
		if encs, err := Encodings(spki); err != nil || len(encs) != 1 || !bytes.Equal(encs[0], spki) {
			t.Errorf("%s: Encodings: %d, %v; want the SPKI alone", a.name, len(encs), err)
		}
		if c, other, err := Forms(nil, spki); err != nil || !sameSlice(c, spki) || other != nil {
			t.Errorf("%s: Forms: %v, other form %x", a.name, err, other)
		}
		// The outer SEQUENCE's length in four bytes, a form DER forbids.
		n := len(spki) - 2 // content length, after a one-byte length
		if spki[1]&0x80 != 0 {
			n -= int(spki[1] & 0x7f)
		}
		ber := append([]byte{0x30, 0x84, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, spki[len(spki)-n:]...)
		for _, bad := range []struct {
			name string
			spki []byte
		}{
			{"NULL parameters", rawSPKI(a.oid, []byte{0x05, 0x00}, 0, key)},
			{"one byte short", rawSPKI(a.oid, nil, 0, key[1:])},
			{"one byte long", rawSPKI(a.oid, nil, 0, append(key, 0))},
			{"unused bits", rawSPKI(a.oid, nil, 1, key)},
			{"a length in long form", ber},
		} {
			if _, err := Canonical(bad.spki); !errors.Is(err, ErrInvalidKey) || errors.Is(err, ErrUnsupportedKey) {
				t.Errorf("%s, %s: %v, want ErrInvalidKey", a.name, bad.name, err)
			}
			if _, err := Encodings(bad.spki); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("%s, %s: Encodings: %v, want ErrInvalidKey", a.name, bad.name, err)
			}
		}
	}
	for _, last := range []int{32, 35, 46} { // HashML-DSA-44, HashSLH-DSA-SHA2-128s, HashSLH-DSA-SHAKE-256f
		oid := der.OID(2, 16, 840, 1, 101, 3, 4, 3, last)
		if _, err := Canonical(rawSPKI(oid, nil, 0, make([]byte, 32))); !errors.Is(err, ErrUnsupportedKey) {
			t.Errorf("OID 2.16.840.1.101.3.4.3.%d: %v, want ErrUnsupportedKey", last, err)
		}
	}
}
