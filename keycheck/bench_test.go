package keycheck

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"math/rand/v2"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keys"
)

// halfSet returns an in-cache filter (2^20 bits, 12 hashes) whose data is
// random bytes: about half its bits set, so that a key not in it is
// answered after a few bits.
func halfSet(b testing.TB) *pkbf.Filter {
	h := pkbf.Header{HashCount: 12, HashLength: 20}
	file, _ := h.AppendBinary(nil)
	r := rand.New(rand.NewPCG(1, 2))
	for len(file) < int(h.FileSize()) {
		file = append(file, byte(r.Uint32()))
	}
	f, err := pkbf.Parse(file)
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// BenchmarkContains compares the lookup under every encoding with the
// single query, on real keys (64 of each kind, in turn) and a half-full
// in-cache filter: nearly every answer is no, so every form is tried.
func BenchmarkContains(b *testing.B) {
	const n = 64
	kinds := map[string][][]byte{}
	for range n {
		rk, _ := rsa.GenerateKey(crand.Reader, 1024)
		der, _ := x509.MarshalPKIXPublicKey(&rk.PublicKey)
		kinds["RSA/canonical"] = append(kinds["RSA/canonical"], der)
		ek, _ := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
		der, _ = x509.MarshalPKIXPublicKey(&ek.PublicKey)
		kinds["P256/uncompressed"] = append(kinds["P256/uncompressed"], der)
		encs, _ := keys.Encodings(der)
		kinds["P256/compressed"] = append(kinds["P256/compressed"], encs[1])
	}
	f := halfSet(b)
	c := New(f, Options{})
	for _, name := range []string{"RSA/canonical", "P256/uncompressed", "P256/compressed"} {
		keys := kinds[name]
		b.Run(name+"/Probably", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				f.Probably(keys[i%n])
			}
		})
		b.Run(name+"/Contains", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				c.Contains(keys[i%n])
			}
		})
		b.Run(name+"/CheckKey", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				c.CheckKey(keys[i%n])
			}
		})
	}
}

// BenchmarkCheckOne times Check on one certificate at a time, inline, as
// a server checks a request, a lint a certificate or sshd a login, next
// to its floor: keys.SPKI, Contains and a fingerprint of the same
// certificate.
func BenchmarkCheckOne(b *testing.B) {
	cert := readKey(b, "p256.cert.der")
	c := New(readOnly(b, newFilter(b, 3, 16)), Options{Workers: 1})
	in := Bytes("cert", cert)
	b.Run("Check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for v := range c.Check(b.Context(), in) {
				if v.Err != nil || v.Key.Fingerprint == "" {
					b.Fatal(v.Err)
				}
			}
		}
	})
	b.Run("CheckKey", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if v := c.CheckKey(cert); v.Err != nil {
				b.Fatal(v.Err)
			}
		}
	})
	b.Run("Floor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			spki, err := keys.SPKI(cert)
			if err != nil {
				b.Fatal(err)
			}
			c.Contains(spki)
			keys.Fingerprint(spki)
		}
	})
}
