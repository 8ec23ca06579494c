package keys

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"math/big"
	"path/filepath"
	"testing"
	"time"

	"github.com/pkbf/pkbf/internal/testkit"
	"golang.org/x/crypto/ssh"
)

// BenchmarkScan reads 20 000 distinct objects of each form pkbf check
// meets most (PEM certificates, concatenated DER SPKIs, authorized_keys
// lines; a quarter RSA-2048, the rest P-256 or Ed25519) with a Scanner:
// Scan alone, the part of check that runs in one goroutine, and Scan with
// what check's workers do with each key (SPKI, Forms, SSHFingerprint). It
// reports ns/key and allocs/key.
func BenchmarkScan(b *testing.B) {
	const n = 20_000
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	for _, form := range []struct {
		name string
		make func(i int) []byte
	}{
		{"PEMCertificates", benchCertificates(b, rk, ek)},
		{"DERPublicKeys", func(i int) []byte {
			var der []byte
			if i%4 == 0 {
				der, _ = x509.MarshalPKIXPublicKey(&rk.PublicKey)
			} else {
				der, _ = x509.MarshalPKIXPublicKey(&ek.PublicKey)
			}
			return testkit.WithCounter(der, der, i)
		}},
		{"AuthorizedKeys", func(i int) []byte {
			var pub any = ed25519.PublicKey(binary.BigEndian.AppendUint32(make([]byte, 28), uint32(i)))
			if i%4 == 0 {
				pub = &rsa.PublicKey{N: new(big.Int).Add(rk.N, big.NewInt(int64(2*i))), E: rk.E}
			}
			sp, err := ssh.NewPublicKey(pub)
			if err != nil {
				b.Fatal(err)
			}
			return append(bytes.TrimSpace(ssh.MarshalAuthorizedKey(sp)), fmt.Sprintf(" user%d@example.com\n", i)...)
		}},
	} {
		var input []byte
		for i := range n {
			input = append(input, form.make(i)...)
		}
		for _, decode := range []bool{false, true} {
			name := form.name + "/Scan"
			if decode {
				name += "+Decode"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(input)))
				b.ReportAllocs()
				var room [160]byte
				for b.Loop() {
					s := NewScanner(bytes.NewReader(input))
					count := 0
					for s.Scan() {
						count++
						if !decode {
							continue
						}
						k := s.Key()
						spki, err := k.SPKI()
						if err != nil {
							b.Fatal(err)
						}
						if _, _, err := Forms(room[:0], spki); err != nil {
							b.Fatal(err)
						}
						k.SSHFingerprint()
					}
					if count != n || s.Err() != nil {
						b.Fatalf("scanned %d keys of %d (%v)", count, n, s.Err())
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/key")
			})
		}
	}
}

// benchCertificates returns a maker of distinct PEM certificates: two
// templates (RSA-2048 and P-256 keys) with a counter in the public key.
func benchCertificates(b testing.TB, rk *rsa.PrivateKey, ek *ecdsa.PrivateKey) func(int) []byte {
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "bench.example.com"},
		NotBefore:    time.Unix(0, 0),
		NotAfter:     time.Unix(1<<32, 0),
		DNSNames:     []string{"bench.example.com", "www.bench.example.com"},
	}
	var certs, spkis [2][]byte
	for j, pub := range []any{&rk.PublicKey, &ek.PublicKey} {
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, rk)
		if err != nil {
			b.Fatal(err)
		}
		certs[j] = der
		spkis[j], _ = x509.MarshalPKIXPublicKey(pub)
	}
	return func(i int) []byte {
		j := min(i%4, 1)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: testkit.WithCounter(certs[j], spkis[j], i)})
	}
}

// BenchmarkSPKIFromCertificate compares SPKI's direct walk of a DER
// certificate with x509.ParseCertificate on the same certificate.
func BenchmarkSPKIFromCertificate(b *testing.B) {
	for _, kt := range []struct{ name, file string }{{"RSA2048", "rsa2048.cert.der"}, {"P256", "p256.cert.der"}} {
		der := testkit.ReadFile(b, filepath.Join(keysDir, kt.file))
		b.Run(kt.name+"/SPKI", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := SPKI(der); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(kt.name+"/x509.ParseCertificate", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := x509.ParseCertificate(der); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSPKI(b *testing.B) {
	for _, file := range []string{"rsa2048.cert.pem", "p256.spki.pem", "ed25519.pub", "p256.sec1.pem", "rsa2048.pkcs1.der"} {
		data := testkit.ReadFile(b, filepath.Join(keysDir, file))
		b.Run(file, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := SPKI(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
