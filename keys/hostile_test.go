package keys

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"math/big"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// Keys an attacker would send: explicit EC parameters that are not a
// curve over a prime field. Each must give an error, never a panic or an
// endless loop.

// explicitParams encodes ECParameters over the prime field of p with
// coefficients a and b (as given, not reduced), an encoded base point and
// an order.
func explicitParams(p *big.Int, a, b, base []byte, n *big.Int) []byte {
	var bld cryptobyte.Builder
	bld.AddASN1(cbasn1.SEQUENCE, func(b1 *cryptobyte.Builder) {
		b1.AddASN1Int64(1)
		b1.AddASN1(cbasn1.SEQUENCE, func(f *cryptobyte.Builder) {
			f.AddASN1ObjectIdentifier([]int{1, 2, 840, 10045, 1, 1})
			f.AddASN1BigInt(p)
		})
		b1.AddASN1(cbasn1.SEQUENCE, func(c *cryptobyte.Builder) {
			c.AddASN1OctetString(a)
			c.AddASN1OctetString(b)
		})
		b1.AddASN1OctetString(base)
		b1.AddASN1BigInt(n)
	})
	return bld.BytesOrPanic()
}

// testCurve is a curve y² = x³ + x - 1 mod p through the point (1, 1),
// with the explicit parameters and an SPKI of that point (compressed or
// not) for it.
func testCurve(p *big.Int, compressed bool) (params, spki []byte) {
	size := (p.BitLen() + 7) / 8
	one := make([]byte, size)
	one[size-1] = 1
	b := new(big.Int).Sub(p, big.NewInt(1)).FillBytes(make([]byte, size))
	point := append(append([]byte{4}, one...), one...)
	if compressed {
		point = append([]byte{3}, one...)
	}
	params = explicitParams(p, one, b, point, p)
	return params, buildSPKIRaw(oidECPublicKey, params, point)
}

// mustNotHang runs f and fails the test if it takes longer than limit: a
// hang would otherwise stop the whole test binary without a name.
func mustNotHang(t *testing.T, name string, limit time.Duration, f func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	select {
	case v := <-done:
		if v != nil {
			t.Fatalf("%s: panic: %v", name, v)
		}
	case <-time.After(limit):
		t.Fatalf("%s: still running after %v", name, limit)
	}
}

// checkKeyCalls calls every library function that reads spki and checks
// that they agree: all fail with ErrInvalidKey or all succeed, with a
// canonical form that is a fixed point.
func checkKeyCalls(t *testing.T, name string, spki []byte) error {
	t.Helper()
	var canonical []byte
	var errC, errE error
	mustNotHang(t, name, 10*time.Second, func() {
		canonical, errC = Canonical(spki)
		_, errE = Encodings(spki)
		Forms(make([]byte, 0, 256), spki)
		SPKI(spki)
	})
	for _, err := range []error{errC, errE} {
		if err != nil && !errors.Is(err, ErrInvalidKey) {
			t.Fatalf("%s: error %v does not wrap ErrInvalidKey", name, err)
		}
	}
	if errC == nil {
		again, err := Canonical(canonical)
		if err != nil || !bytes.Equal(again, canonical) {
			t.Fatalf("%s: Canonical is not a fixed point: %x, then %x, %v", name, canonical, again, err)
		}
	}
	if errE != nil {
		return errE
	}
	return errC
}

// The reproducers: p = 10 panicked in big.Jacobi; p = 9 (and every
// odd square) looped for ever in ModSqrt.
func TestExplicitCurveReproducers(t *testing.T) {
	const p10 = "MDMwKwYHKoZIzj0CATAgAgEBMAwGByqGSM49AQECAQowBgQBAAQBAQQCAgECAQcDBAAEAAE="
	for _, tc := range []struct{ name, b64, want string }{
		{"even prime p = 10", p10, "field modulus 10 is not an odd prime"},
		{"odd square p = 9", strings.Replace(p10, "AQo", "AQk", 1), "field modulus 9 is not prime"},
	} {
		der, err := base64.StdEncoding.DecodeString(tc.b64)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkKeyCalls(t, tc.name, der); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// Every p from 2 to 121 in the reproducer's shape: no panic, no hang, and
// only odd primes get past the field check.
func TestExplicitCurveSmallPrimes(t *testing.T) {
	for p := int64(2); p <= 121; p++ {
		for _, compressed := range []bool{false, true} {
			_, spki := testCurve(big.NewInt(p), compressed)
			err := checkKeyCalls(t, "p = "+big.NewInt(p).String(), spki)
			notPrime := err != nil && strings.Contains(err.Error(), "prime")
			if isPrime := p > 2 && big.NewInt(p).ProbablyPrime(20); isPrime == notPrime {
				t.Errorf("p = %d (compressed %v): error %v", p, compressed, err)
			}
		}
	}
}

func TestExplicitCurveLimits(t *testing.T) {
	prime := func(bits int) *big.Int {
		p, err := rand.Prime(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	largest, tooLarge := prime(maxCurveBits), prime(maxCurveBits+1)
	for _, compressed := range []bool{false, true} {
		_, spki := testCurve(largest, compressed)
		if err := checkKeyCalls(t, "largest prime", spki); err != nil {
			t.Errorf("a %d-bit prime (compressed %v): %v", maxCurveBits, compressed, err)
		}
		_, spki = testCurve(tooLarge, compressed)
		if err := checkKeyCalls(t, "prime one bit too long", spki); err == nil || !strings.Contains(err.Error(), "larger than the 661-bit limit") {
			t.Errorf("a %d-bit prime: error %v, want the limit", maxCurveBits+1, err)
		}
	}

	p := prime(256)
	size := 32
	one := make([]byte, size)
	one[size-1] = 1
	minusOne := new(big.Int).Sub(p, big.NewInt(1)).FillBytes(make([]byte, size))
	point := append(append([]byte{4}, one...), one...)
	order := func(bits int) *big.Int { return new(big.Int).Lsh(big.NewInt(1), uint(bits-1)) }
	// a + p is the same coefficient, unreduced, in as many bytes.
	aPlusP := new(big.Int).Add(p, big.NewInt(1))
	for _, tc := range []struct {
		name   string
		params []byte
		want   string // "" for accepted
	}{
		{"order of p's bits + 1", explicitParams(p, one, minusOne, point, order(257)), ""},
		{"order of p's bits + 2", explicitParams(p, one, minusOne, point, order(258)), "order (258 bits) is out of range"},
		{"order zero", explicitParams(p, one, minusOne, point, big.NewInt(0)), "order (0 bits) is out of range"},
		{"coefficient a unreduced", explicitParams(p, aPlusP.FillBytes(make([]byte, size)), minusOne, point, p), ""},
		{"coefficient longer than the field", explicitParams(p, append([]byte{1}, one...), minusOne, point, p), "longer than the 32-byte field"},
		{"base point off the curve", explicitParams(p, one, one, point, p), "base point (65 bytes, prefix 0x04) is malformed or not on the curve"},
	} {
		spki := buildSPKIRaw(oidECPublicKey, tc.params, point)
		err := checkKeyCalls(t, tc.name, spki)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// pfx builds a PKCS#12 file without a MAC whose one SafeContents holds
// the given bags (each a whole SafeBag).
func pfx(bags ...[]byte) []byte {
	var sc cryptobyte.Builder
	sc.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		for _, bag := range bags {
			b.AddBytes(bag)
		}
	})
	data := func(b *cryptobyte.Builder, content []byte) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			addOID(b, oidPKCS7Data)
			b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
				b.AddASN1OctetString(content)
			})
		})
	}
	var safe cryptobyte.Builder
	safe.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { data(b, sc.BytesOrPanic()) })
	var out cryptobyte.Builder
	out.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1Int64(3)
		data(b, safe.BytesOrPanic())
	})
	return out.BytesOrPanic()
}

// shroudedBag is a PKCS#8 shrouded key bag under PBES2 (PBKDF2 with
// HMAC-SHA256, AES-256-CBC) at the given iteration count, whose 32 bytes
// of cipher text decrypt to nothing valid under any password.
func shroudedBag(iterations int) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		addOID(b, oidShroudedKeyBag)
		b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
					addOID(b, oidPBES2)
					b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
						b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
							addOID(b, oidPBKDF2)
							b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
								b.AddASN1OctetString([]byte("salt"))
								b.AddASN1Int64(int64(iterations))
								b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
									addOID(b, oidHMACSHA256)
									b.AddASN1NULL()
								})
							})
						})
						b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
							addOID(b, oidAES256CBC)
							b.AddASN1OctetString(make([]byte, 16))
						})
					})
				})
				b.AddASN1OctetString(bytes.Repeat([]byte{0x5a}, 32))
			})
		})
	})
	return b.BytesOrPanic()
}

// Item 4 of the issue: a PKCS#12 file without a MAC holding many shrouded
// key bags at the highest iteration count cost half a second a bag. The
// bags, the passphrases tried and the MAC now share one budget.
func TestPKCS12WorkBudget(t *testing.T) {
	defer func(n int) { maxPKCS12Iterations = n }(maxPKCS12Iterations)
	maxPKCS12Iterations = 1000 // the same code at a size a test can afford
	bags := func(n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = shroudedBag(maxPKCS12Iterations)
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		bags        int
		passphrases []string
		refused     bool
	}{
		{"as many bags as the budget allows", pkcs12WorkRuns, nil, false},
		{"one bag more", pkcs12WorkRuns + 1, nil, true},
		{"half as many bags, two passwords each", pkcs12WorkRuns / 2, []string{"x"}, false},
		{"one bag more, two passwords each", pkcs12WorkRuns/2 + 1, []string{"x"}, true},
	} {
		parts, err := pkcs12Parts(pfx(bags(tc.bags)...), tc.passphrases)
		if tc.refused {
			if err != errTooCostly {
				t.Errorf("%s: %d parts, error %v; want it refused as too costly", tc.name, len(parts), err)
			}
			continue
		}
		if err != nil || len(parts) != tc.bags {
			t.Fatalf("%s: %d parts, error %v; want %d", tc.name, len(parts), err, tc.bags)
		}
		for _, p := range parts {
			if !errors.Is(p.err, ErrEncryptedKey) {
				t.Errorf("%s: %s: %v, want an encrypted-key error", tc.name, p.what, p.err)
			}
		}
	}
}

// Item 5: a megabyte of PKCS#7 holds half a million empty certificates,
// each a Key with an error of its own. A container gives at most
// maxContainerParts.
func TestContainerPartsLimit(t *testing.T) {
	bundle := func(certs int) []byte {
		var b cryptobyte.Builder
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			addOID(b, oidPKCS7SignedData)
			b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
					b.AddASN1Int64(1)
					b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) {})
					b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { addOID(b, oidPKCS7Data) })
					b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
						b.AddBytes(bytes.Repeat([]byte{0x30, 0}, certs))
					})
					b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) {})
				})
			})
		})
		return b.BytesOrPanic()
	}
	if parts, err := pkcs7Parts(bundle(maxContainerParts)); err != nil || len(parts) != maxContainerParts {
		t.Errorf("PKCS#7 of %d certificates: %d parts, %v", maxContainerParts, len(parts), err)
	}
	if _, err := pkcs7Parts(bundle(maxContainerParts + 1)); err == nil || !strings.Contains(err.Error(), "more than 10000 certificates") {
		t.Errorf("PKCS#7 of %d certificates: %v, want it refused", maxContainerParts+1, err)
	}
	// Through the scanner: one Key with the error, not ten thousand.
	s := NewScanner(bytes.NewReader(bundle(maxContainerParts + 1)))
	n := 0
	for s.Scan() {
		n++
	}
	if n != 1 {
		t.Errorf("scanner reported %d keys for a refused bundle, want 1", n)
	}
	// PKCS#12 key bags holding empty keys: the same limit.
	keyBags := func(n int) []byte {
		var b cryptobyte.Builder
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			addOID(b, oidKeyBag)
			b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {})
			})
		})
		return pfx(bytes.Repeat(b.BytesOrPanic(), n))
	}
	if parts, err := pkcs12Parts(keyBags(maxContainerParts), nil); err != nil || len(parts) != maxContainerParts {
		t.Errorf("PKCS#12 of %d keys: %d parts, %v", maxContainerParts, len(parts), err)
	}
	if _, err := pkcs12Parts(keyBags(maxContainerParts+1), nil); err == nil || !strings.Contains(err.Error(), "more than 10000 certificates and keys") {
		t.Errorf("PKCS#12 of %d keys: %v, want it refused", maxContainerParts+1, err)
	}
}

// Item 4: a DH private value of any length was exponentiated (126 KB took
// 78 s); it may be no longer than its modulus.
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

// allocated returns the bytes f allocates, averaged over runs.
func allocated(runs int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// Item 7: every scanner took two 64 KiB buffers, and a DER header's
// declared length was allocated before its bytes arrived. A small input in
// memory now costs a small buffer, and a DER object's memory follows the
// bytes read.
func TestScannerMemoryFollowsInput(t *testing.T) {
	pub := mustRead(t, "../testdata/keys/p256.pub")
	der := mustRead(t, "../testdata/keys/p256.spki.der")
	for _, tc := range []struct {
		name  string
		input []byte
		keys  int
		limit uint64
	}{
		{"an OpenSSH line", pub, 1, 8 << 10},
		{"a DER SPKI", der, 1, 8 << 10},
		{"6 bytes declaring a megabyte", []byte{0x30, 0x83, 0x0f, 0xff, 0xf0, 0x30}, 1, 40 << 10},
		{"a megabyte arriving", append([]byte{0x30, 0x83, 0x0f, 0xff, 0xf0}, make([]byte, 0xffff0)...), 1, 4 << 20},
	} {
		n := 0
		used := allocated(20, func() {
			s := NewScanner(bytes.NewReader(tc.input))
			for n = 0; s.Scan(); n++ {
				k := s.Key()
				k.SPKI()
			}
		})
		if n != tc.keys || used > tc.limit {
			t.Errorf("%s (%d bytes): %d keys, %d bytes allocated; want %d keys, at most %d bytes", tc.name, len(tc.input), n, used, tc.keys, tc.limit)
		}
	}
}
