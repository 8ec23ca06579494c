package keys

import (
	"bytes"
	//lint:ignore SA1019 DSA keys as crypto/x509 reads them
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// A DH private value may be no longer than its modulus: one of any length
// would be exponentiated (a minute for 126 KB).
func TestModPPrivateValueLimit(t *testing.T) {
	p := new(big.Int).Lsh(big.NewInt(1), 511)
	p.Add(p, big.NewInt(1))
	var params cryptobyte.Builder
	params.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1BigInt(p)
		b.AddASN1BigInt(big.NewInt(2))
	})
	priv := func(bits int) cryptobyte.String {
		var b cryptobyte.Builder
		b.AddASN1BigInt(new(big.Int).Lsh(big.NewInt(1), uint(bits-1)))
		return cryptobyte.String(b.BytesOrPanic())
	}
	if _, err := modpSPKI(oidDHPKCS3, params.BytesOrPanic(), priv(512)); err != nil {
		t.Errorf("DH private value as long as its modulus: %v", err)
	}
	if _, err := modpSPKI(oidDHPKCS3, params.BytesOrPanic(), priv(513)); err == nil || !strings.Contains(err.Error(), "private value is 513 bits, longer than its 512-bit modulus") {
		t.Errorf("DH private value one bit longer than its modulus: %v", err)
	}
}

// Red team 4, finding E1: a DSA SPKI whose parameters hold more than p, q
// and g (a NULL after g) was read, its canonical form keeping the extra
// field: a form no one writes, so a compromised key so encoded was looked
// up where it is not (crypto/x509, and crypto/tls with it, read the key
// from the first three). Such parameters are refused, as OpenSSL refuses
// them; p, q and g alone, or no parameters, are read.
func TestDSAParamsOnlyPQG(t *testing.T) {
	ints := func(extra []byte, vs ...int64) []byte {
		var b cryptobyte.Builder
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			for _, v := range vs {
				b.AddASN1Int64(v)
			}
			b.AddBytes(extra)
		})
		return b.BytesOrPanic()
	}
	for _, c := range []struct {
		name   string
		params []byte
		ok     bool
	}{
		{"p, q and g", ints(nil, 23, 11, 4), true},
		{"absent", nil, true},
		{"a NULL after g", ints(derNull, 23, 11, 4), false},
		{"an INTEGER after g", ints(nil, 23, 11, 4, 5), false},
		{"p and q", ints(nil, 23, 11), false},
		{"p, q and a NULL", ints(derNull, 23, 11), false},
	} {
		canonical, err := Canonical(buildSPKIRaw(oidDSA, c.params, intDER([]byte{0x42})))
		if c.ok && (err != nil || len(canonical) == 0) || !c.ok && !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%s: %x, %v; want it read: %v", c.name, canonical, err, c.ok)
		}
	}
}

// MarshalPublicKey writes a DSA key crypto/x509 read as OpenSSL writes it
// (the oracle: openssl pkey -pubout of a key it made), and any other key
// as crypto/x509 does; a DSA key lacking a number is an error.
func TestMarshalPublicKey(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		if os.Getenv("PKBF_REQUIRE_TLS_PEERS") != "" {
			t.Fatal("openssl is not on PATH")
		}
		t.Skip("openssl is not on PATH: DSA SPKIs are not compared with its writing")
	}
	dir := t.TempDir()
	params, priv, pub := filepath.Join(dir, "p.pem"), filepath.Join(dir, "k.pem"), filepath.Join(dir, "pub.der")
	for _, args := range [][]string{
		{"genpkey", "-genparam", "-algorithm", "DSA", "-pkeyopt", "dsa_paramgen_bits:2048", "-out", params},
		{"genpkey", "-paramfile", params, "-out", priv},
		{"pkey", "-in", priv, "-pubout", "-outform", "DER", "-out", pub},
	} {
		if out, err := exec.Command(openssl, args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	want, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.ParsePKIXPublicKey(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := MarshalPublicKey(k)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("DSA: %x, %v\nopenssl: %x", got, err, want)
	}
	if c, err := Canonical(got); err != nil || !bytes.Equal(c, got) {
		t.Fatalf("DSA: not canonical: %x, %v", c, err)
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	wantEC, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	if got, err := MarshalPublicKey(&ec.PublicKey); err != nil || !bytes.Equal(got, wantEC) {
		t.Fatalf("P-256: %x, %v, want crypto/x509's %x", got, err, wantEC)
	}
	lacking := *k.(*dsa.PublicKey)
	lacking.G = nil
	if _, err := MarshalPublicKey(&lacking); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("DSA without g: %v, want ErrInvalidKey", err)
	}
}
