package weakkeys

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	mrand "math/rand"
	"slices"
	"strings"
	"sync"
	"testing"

	curvetable "github.com/pkbf/pkbf/internal/curves"
	"github.com/pkbf/pkbf/internal/der"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keys"
)

// rsaSPKIOf builds an RSA SPKI from n and e as given, as DER INTEGERs.
func rsaSPKIOf(n, e *big.Int) []byte {
	key := der.AppendHeader(nil, der.TagSequence, der.Len(len(intContent(n)))+der.Len(len(intContent(e))))
	key = append(der.AppendHeader(key, der.TagInteger, len(intContent(n))), intContent(n)...)
	key = append(der.AppendHeader(key, der.TagInteger, len(intContent(e))), intContent(e)...)
	return spkiOf(oidRSA, derNull, key)
}

// intContent is the content of a DER INTEGER of v >= 0.
func intContent(v *big.Int) []byte {
	b := v.Bytes()
	if len(b) == 0 || b[0]&0x80 != 0 {
		b = append([]byte{0}, b...)
	}
	return b
}

// spkiOf builds an SPKI from an OID's content, parameters and key bytes.
func spkiOf(oid, params, key []byte) []byte {
	alg := append(der.AppendHeader(nil, der.TagOID, len(oid)), oid...)
	alg = append(alg, params...)
	algSeq := append(der.AppendHeader(nil, der.TagSequence, len(alg)), alg...)
	bits := append(der.AppendHeader(nil, der.TagBitString, len(key)+1), 0)
	bits = append(bits, key...)
	return append(der.AppendHeader(nil, der.TagSequence, len(algSeq)+len(bits)), append(algSeq, bits...)...)
}

// smallPrimeProduct is the product of the primes below 752.
var smallPrimeProduct = func() *big.Int {
	p := big.NewInt(1)
	for _, q := range smallPrimes {
		p.Mul(p, big.NewInt(int64(q)))
	}
	return p
}()

// roughModulus returns an odd number of the given size with no factor
// below 752: no finding of a product of two primes, without making them.
func roughModulus(r *mrand.Rand, bits int) *big.Int {
	n := new(big.Int).Rand(r, new(big.Int).Lsh(one, uint(bits)))
	n.SetBit(n, bits-1, 1).SetBit(n, 0, 1)
	for new(big.Int).GCD(nil, nil, n, smallPrimeProduct).Cmp(one) != 0 {
		n.Add(n, big.NewInt(2))
	}
	return n
}

var f4 = big.NewInt(65537)

func mustNew(t testing.TB, opts ...Option) *Checker {
	t.Helper()
	c, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rules lists a result's rules, in order.
func rules(r Result) string {
	var s []string
	for _, f := range r.Findings {
		s = append(s, string(f.Rule)+"="+f.Detail)
	}
	return strings.Join(s, " ")
}

// TestCheckRSASizes: both sides of each size rule.
func TestCheckRSASizes(t *testing.T) {
	r := mrand.New(mrand.NewSource(8))
	c := mustNew(t)
	restricted := mustNew(t, WithRSASizes(4096, 2048))
	tests := []struct {
		bits       int
		c          *Checker
		want       string
		notCovered bool
	}{
		{2040, c, "rsa-size=2040", true},
		{2047, c, "rsa-size=2047", true},
		{2048, c, "", true},
		{2049, c, "rsa-size=2049", true},
		{2056, c, "", true},
		{3072, restricted, "rsa-size=3072", true},
		{4096, restricted, "", true},
		{8192, c, "", true},
		{8200, c, "", false}, // BR 6.1.1.3: no Debian check over 8192 bits
		{16384, c, "", false},
		{16385, c, "rsa-size=16385", false},
		{16392, c, "rsa-size=16392", false},
	}
	for _, tt := range tests {
		n := roughModulus(r, tt.bits)
		res, err := tt.c.Check(rsaSPKIOf(n, f4))
		if err != nil {
			t.Fatalf("%d bits: %v", tt.bits, err)
		}
		want := tt.want
		if tt.notCovered {
			want = strings.TrimSpace(want + " debian-not-covered=RSA-" + fmt.Sprint(tt.bits))
		}
		if got := rules(res); got != want {
			t.Errorf("%d bits: %s, want %s", tt.bits, got, want)
		}
	}
	// Over the limit nothing else is looked at: an even modulus gives the
	// size alone.
	big := new(big.Int).Lsh(one, 16400)
	res, err := c.Check(rsaSPKIOf(big, f4))
	if err != nil || rules(res) != "rsa-size=16401" || !strings.Contains(res.Findings[0].Reason, "not checked further") {
		t.Fatalf("an even 16401-bit modulus: %v, %v", res.Findings, err)
	}
}

// TestCheckExponent: both sides of each exponent rule.
func TestCheckExponent(t *testing.T) {
	n := roughModulus(mrand.New(mrand.NewSource(9)), 2048)
	c := mustNew(t)
	two256 := new(big.Int).Lsh(one, 256)
	tests := []struct {
		e    *big.Int
		want string
	}{
		{big.NewInt(0), "rsa-exponent=0"},
		{big.NewInt(1), "rsa-exponent=1"},
		{big.NewInt(2), "rsa-exponent=2"},
		{big.NewInt(3), "rsa-exponent-range=3"},
		{big.NewInt(65535), "rsa-exponent-range=65535"},
		{big.NewInt(65536), "rsa-exponent=65536"},
		{big.NewInt(65537), ""},
		{new(big.Int).Sub(two256, one), ""},
		{two256, "rsa-exponent=" + two256.String()},
		{new(big.Int).Add(two256, one), "rsa-exponent-range=" + new(big.Int).Add(two256, one).String()},
		{new(big.Int).Sub(new(big.Int).Lsh(one, 1024), one), "rsa-exponent-range=" + new(big.Int).Sub(new(big.Int).Lsh(one, 1024), one).String()},
		{new(big.Int).Add(new(big.Int).Lsh(one, 1024), one), "rsa-exponent-range=a 1025-bit number"},
		{new(big.Int).Lsh(one, 100000), "rsa-exponent=a 100001-bit number"},
	}
	for _, tt := range tests {
		res, err := c.Check(rsaSPKIOf(n, tt.e))
		if err != nil {
			t.Fatalf("e=%v: %v", tt.e, err)
		}
		want := strings.TrimSpace(tt.want + " debian-not-covered=RSA-2048")
		if got := rules(res); got != want {
			t.Errorf("e=%v: %s, want %s", tt.e, got, want)
		}
	}
}

// TestCheckSmallPrimes: each prime below 752 is found, 757 (the next) is
// not; an even modulus is the prime 2.
func TestCheckSmallPrimes(t *testing.T) {
	r := mrand.New(mrand.NewSource(10))
	c := mustNew(t)
	rough := roughModulus(r, 2030)
	for _, p := range append(slices.Clone(smallPrimes), 757, 761) {
		n := new(big.Int).Mul(rough, big.NewInt(int64(p)))
		res, err := c.CheckModulus(n.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		found := countRule(res, RuleSmallFactor) == 1 && res.Findings[slices.IndexFunc(res.Findings, func(f Finding) bool { return f.Rule == RuleSmallFactor })].Detail == fmt.Sprint(p)
		if found != (p < 752) {
			t.Fatalf("modulus · %d: %s", p, rules(res))
		}
	}
}

func TestCheckErrors(t *testing.T) {
	n := roughModulus(mrand.New(mrand.NewSource(11)), 2048)
	good := rsaSPKIOf(n, f4)
	tests := []struct {
		name string
		spki []byte
		want string
	}{
		{"empty", nil, "not a DER SubjectPublicKeyInfo"},
		{"PEM", []byte("-----BEGIN PUBLIC KEY-----\n"), "not a DER SubjectPublicKeyInfo"},
		{"trailing byte", append(bytes.Clone(good), 0), "not a DER SubjectPublicKeyInfo"},
		{"cut", good[:len(good)-1], "not a DER SubjectPublicKeyInfo"},
		{"no BIT STRING", spkiOf(oidRSA, derNull, nil)[:15], "not a DER SubjectPublicKeyInfo"},
		{"RSA parameters", rsaWithParams(good, []byte{der.TagOID, 1, 1}), "parameters are not NULL"},
		{"RSA key not a SEQUENCE", spkiOf(oidRSA, derNull, []byte{2, 1, 1}), "not a SEQUENCE of modulus and exponent"},
		{"RSA key of three INTEGERs", spkiOf(oidRSA, derNull, []byte{0x30, 9, 2, 1, 1, 2, 1, 3, 2, 1, 3}), "not a SEQUENCE of modulus and exponent"},
		{"zero modulus", rsaSPKIOf(big.NewInt(0), f4), "modulus is zero"},
		{"negative modulus", spkiOf(oidRSA, derNull, []byte{0x30, 8, 2, 1, 0x80, 2, 3, 1, 0, 1}), "modulus is negative"},
		{"modulus not minimal", spkiOf(oidRSA, derNull, []byte{0x30, 9, 2, 2, 0, 0x7f, 2, 3, 1, 0, 1}), "not in DER's minimal form"},
		{"empty modulus", spkiOf(oidRSA, derNull, []byte{0x30, 7, 2, 0, 2, 3, 1, 0, 1}), "empty INTEGER"},
		{"negative exponent", spkiOf(oidRSA, derNull, []byte{0x30, 6, 2, 1, 0x7f, 2, 1, 0x81}), "exponent is negative"},
		{"EC without parameters", spkiOf(oidECPublicKey, nil, []byte{4, 1, 2}), "neither a named curve nor explicit"},
		{"EC empty key", spkiOf(oidECPublicKey, []byte{der.TagOID, 8, 0x2a, 0x86, 0x48, 0xce, 0x3d, 3, 1, 7}, nil), "BIT STRING is empty"},
	}
	c := mustNew(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Check(tt.spki)
			if err == nil || res.Findings != nil {
				t.Fatalf("Check = %v, %v; want an error", res.Findings, err)
			}
			testkit.CheckErr(t, err, keys.ErrInvalidKey)
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
		})
	}
	for _, n := range [][]byte{nil, {0}, {0, 0, 0}} {
		if _, err := c.CheckModulus(n); !errors.Is(err, keys.ErrInvalidKey) || !strings.Contains(err.Error(), "zero") {
			t.Fatalf("CheckModulus(%x) = %v, want an error", n, err)
		}
	}
	// Leading zeros of a bare modulus are ignored.
	a, _ := c.CheckModulus(n.Bytes())
	b, _ := c.CheckModulus(append([]byte{0, 0}, n.Bytes()...))
	if rules(a) != rules(b) || rules(a) != "debian-not-covered=RSA-2048" {
		t.Fatalf("CheckModulus with leading zeros: %s, without: %s", rules(b), rules(a))
	}
}

// rsaWithParams replaces an RSA SPKI's NULL parameters.
func rsaWithParams(spki, params []byte) []byte {
	k, _ := parseSPKI(spki)
	key := rsaKeyBytes(k)
	return spkiOf(oidRSA, params, key)
}

func rsaKeyBytes(k publicKey) []byte {
	n, e := new(big.Int).SetBytes(k.n), new(big.Int).SetBytes(k.e)
	spki := rsaSPKIOf(n, e)
	d := der.Reader(spki)
	body, _ := d.Read(der.TagSequence)
	fields := der.Reader(body)
	fields.Skip(der.TagSequence)
	key, _, _ := fields.ReadBitString()
	return key
}

// p256Point returns a P-256 key's point, uncompressed and compressed,
// and its x-coordinate.
func p256Point(t testing.TB) (uncompressed, compressed []byte, x *big.Int) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := k.PublicKey.ECDH()
	u := pub.Bytes()
	x = new(big.Int).SetBytes(u[1:33])
	y := new(big.Int).SetBytes(u[33:])
	comp := append([]byte{byte(2 + y.Bit(0))}, u[1:33]...)
	return u, comp, x
}

var oidP256 = der.OID(1, 2, 840, 10045, 3, 1, 7)

// secp256k1G is secp256k1's base point (SEC 2), uncompressed.
var secp256k1G, _ = hex.DecodeString("0479be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8")

func namedEC(oid, point []byte) []byte {
	return spkiOf(oidECPublicKey, append(der.AppendHeader(nil, der.TagOID, len(oid)), oid...), point)
}

func TestCheckEC(t *testing.T) {
	u, comp, _ := p256Point(t)
	explicit := func(name string) []byte {
		for _, c := range curvetable.Table {
			if c.Name == name {
				b, _ := hex.DecodeString(c.Explicit)
				return b
			}
		}
		t.Fatalf("no curve %s", name)
		return nil
	}
	hybrid := bytes.Clone(u)
	hybrid[0] = 6 + u[64]&1
	offCurve := bytes.Clone(u)
	offCurve[64] ^= 1
	pMinus := elliptic.P256().Params().P.Bytes()
	// An x-coordinate with no point: x³ - 3x + b is a non-square for
	// about half of all x.
	var noPoint []byte
	for i := byte(1); noPoint == nil; i++ {
		x := bytes.Repeat([]byte{i}, 32)
		if reason := curveByName("P-256").validatePointOnly(append([]byte{2}, x...)); reason == "no point of the curve has this x-coordinate" {
			noPoint = append([]byte{2}, x...)
		}
	}
	c := mustNew(t)
	p384 := mustNew(t, WithCurves("P-384"))
	tests := []struct {
		name string
		c    *Checker
		spki []byte
		want string
	}{
		{"uncompressed", c, namedEC(oidP256, u), "debian-not-covered=P-256"},
		{"compressed", c, namedEC(oidP256, comp), "debian-not-covered=P-256"},
		{"explicit P-256", c, spkiOf(oidECPublicKey, explicit("prime256v1"), u), "debian-not-covered=P-256"},
		{"explicit secp256k1", c, spkiOf(oidECPublicKey, explicit("secp256k1"), secp256k1G), "ec-curve=explicit"},
		{"secp256k1", c, namedEC(der.OID(1, 3, 132, 0, 10), u), "ec-curve=1.3.132.0.10"},
		{"P-224", c, namedEC(der.OID(1, 3, 132, 0, 33), u), "ec-curve=1.3.132.0.33"},
		{"implicit curve", c, spkiOf(oidECPublicKey, derNull, u), "ec-curve=implicit"},
		{"curve not allowed", p384, namedEC(oidP256, u), "ec-curve=P-256 debian-not-covered=P-256"},
		{"hybrid", c, namedEC(oidP256, hybrid), "ec-point=P-256"},
		{"off the curve", c, namedEC(oidP256, offCurve), "ec-point=P-256"},
		{"x of no point", c, namedEC(oidP256, noPoint), "ec-point=P-256"},
		{"x = p", c, namedEC(oidP256, append([]byte{2}, pMinus...)), "ec-point=P-256"},
		{"infinity", c, namedEC(oidP256, []byte{0}), "ec-point=P-256"},
		{"short", c, namedEC(oidP256, u[:64]), "ec-point=P-256"},
		{"P-256 point on P-384", c, namedEC(der.OID(1, 3, 132, 0, 34), u), "ec-point=P-384"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.c.Check(tt.spki)
			if err != nil {
				t.Fatal(err)
			}
			if got := rules(res); got != tt.want {
				t.Fatalf("%s, want %s", got, tt.want)
			}
		})
	}
}

// validatePointOnly is validate's reason.
func (c *curve) validatePointOnly(point []byte) string {
	_, reason := c.validate(point)
	return reason
}

func TestCheckOtherAlgorithms(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	edSPKI, _ := x509.MarshalPKIXPublicKey(pub)
	x, _ := ecdh.X25519().GenerateKey(rand.Reader)
	xSPKI, _ := x509.MarshalPKIXPublicKey(x.PublicKey())
	c := mustNew(t)
	for _, tt := range []struct {
		spki []byte
		want string
	}{
		{edSPKI, "algorithm=Ed25519"},
		{xSPKI, "algorithm=X25519"},
		{spkiOf(der.OID(1, 2, 3, 4), nil, []byte{1}), "algorithm=algorithm 1.2.3.4"},
	} {
		res, err := c.Check(tt.spki)
		if err != nil {
			t.Fatal(err)
		}
		if got := rules(res); got != tt.want {
			t.Fatalf("%s, want %s", got, tt.want)
		}
	}
}

// TestCheckDebianECLeadingZero: an x-coordinate with a leading zero byte
// is hashed without it, as big.Int.Bytes gives it, as the published lists
// hash it (not the fixed 32 bytes).
func TestCheckDebianECLeadingZero(t *testing.T) {
	var u, comp []byte
	var x *big.Int
	for x == nil || x.BitLen() > 248 {
		u, comp, x = p256Point(t)
	}
	stripped := sha256.Sum256(x.Bytes())
	fixed := sha256.Sum256(u[1:33])
	var b Builder
	text := hex.EncodeToString(stripped[:]) + "\n" + randomHashes(t, 100, 64)
	if err := b.ReadList(List{Name: "xcoord", Key: "P-256", Scheme: SHA256X}, strings.NewReader(text)); err != nil {
		t.Fatal(err)
	}
	fixedList := hex.EncodeToString(fixed[:]) + "\n"
	if err := b.ReadList(List{Name: "fixed-width", Key: "P-256", Scheme: SHA256X}, strings.NewReader(fixedList)); err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, WithDebian(openDebian(t, writeDebian(t, &b))))
	for _, point := range [][]byte{u, comp} {
		res, err := c.Check(namedEC(oidP256, point))
		if err != nil {
			t.Fatal(err)
		}
		if got := rules(res); got != "debian-weak=xcoord" {
			t.Fatalf("point %x: %s, want the list of x without its leading zero", point, got)
		}
	}
	// The builder hashes a key file the same way.
	var kb Builder
	dir := t.TempDir()
	testkit.WritePEM(t, dir, "p256.pem", "PUBLIC KEY", namedEC(oidP256, comp))
	if err := kb.AddKeyTree("tree", dir); err != nil {
		t.Fatal(err)
	}
	if h := kb.lists[0].hashes[0]; h[0] != binary.BigEndian.Uint64(stripped[:8]) || h[1] != binary.BigEndian.Uint64(stripped[8:16]) {
		t.Fatalf("AddKeyTree hashed x as %x, want %x", h, stripped[:16])
	}
}

// TestCheckDebianCoverage: a key no list covers is reported, except RSA
// over 8192 bits; a covered key that no list holds has no Debian finding.
func TestCheckDebianCoverage(t *testing.T) {
	r := mrand.New(mrand.NewSource(12))
	var b Builder
	if err := b.ReadList(List{Name: "m", Key: "RSA-2048", Scheme: SHA256Modulus}, strings.NewReader(randomHashes(t, 10, 64))); err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, WithDebian(openDebian(t, writeDebian(t, &b))))
	for bits, want := range map[int]string{
		2048: "",
		3072: "debian-not-covered=RSA-3072",
		8192: "debian-not-covered=RSA-8192",
		8200: "",
	} {
		res, err := c.CheckModulus(roughModulus(r, bits).Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if got := rules(res); got != want {
			t.Errorf("RSA-%d: %s, want %s", bits, got, want)
		}
	}
}

func TestNewOptions(t *testing.T) {
	bad := map[string]Option{
		"nil Debian":      WithDebian(nil),
		"0 rounds":        WithFermatRounds(0),
		"too many rounds": WithFermatRounds(maxFermatRounds + 1),
		"no sizes":        WithRSASizes(),
		"2040 bits":       WithRSASizes(2048, 2040),
		"2052 bits":       WithRSASizes(2052),
		"16392 bits":      WithRSASizes(16392),
		"no curves":       WithCurves(),
		"P-224":           WithCurves("P-256", "P-224"),
	}
	for name, o := range bad {
		if c, err := New(o); err == nil || c != nil || !strings.HasPrefix(err.Error(), "pkbf: With") {
			t.Errorf("%s: New = %v, %v; want an error", name, c, err)
		}
	}
	for _, o := range []Option{WithFermatRounds(1), WithFermatRounds(maxFermatRounds), WithRSASizes(2048, 16384), WithCurves("P-521")} {
		if _, err := New(o); err != nil {
			t.Error(err)
		}
	}
}

// TestFermatRoundsLimit: near the most rounds a Checker runs, N = p·q is
// found in round (p+q)/2 - ceil(sqrt N) + 1, where the method meets its
// factors, and not one round earlier: the word arithmetic holds to the
// bound.
func TestFermatRoundsLimit(t *testing.T) {
	p := roughModulus(mrand.New(mrand.NewSource(13)), 1024)
	// q - p ≈ sqrt(8·p·(2^20 - 10)): found a few rounds before the limit.
	d := new(big.Int).Mul(p, big.NewInt(8*(maxFermatRounds-10)))
	d.Sqrt(d).SetBit(d, 0, 0)
	q := new(big.Int).Add(p, d)
	n := new(big.Int).Mul(p, q)
	a0 := new(big.Int).Sqrt(n)
	a0.Add(a0, one) // n is no square
	round := new(big.Int).Add(p, q)
	round.Rsh(round, 1).Sub(round, a0).Add(round, one)
	want := int(round.Int64())
	if want > maxFermatRounds || want < maxFermatRounds-100 {
		t.Fatalf("the modulus is found in round %d: not near the limit", want)
	}
	s := new(scratch)
	if got := fermatRound(n, maxFermatRounds, s); got != want {
		t.Fatalf("%d rounds: round %d, want %d", maxFermatRounds, got, want)
	}
	if got := fermatRound(n, want-1, s); got != 0 {
		t.Fatalf("%d rounds: round %d, want none", want-1, got)
	}
}

// TestCheckAllocations: checking a clean RSA-2048 key against a Debian
// file allocates nothing.
func TestCheckAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("-race: sync.Pool drops its items, allocation counts mean nothing")
	}
	var b Builder
	for _, l := range []List{{Name: "m", Key: "RSA-2048", Scheme: SHA256Modulus}, {Name: "v", Key: "RSA-2048", Scheme: VulnKey}} {
		if err := b.ReadList(l, strings.NewReader(randomHashes(t, 1000, hashDigits(l.Scheme)))); err != nil {
			t.Fatal(err)
		}
	}
	c := mustNew(t, WithDebian(openDebian(t, writeDebian(t, &b))))
	spki := rsaSPKIOf(roughModulus(mrand.New(mrand.NewSource(14)), 2048), f4)
	if allocs := testing.AllocsPerRun(100, func() {
		if res, err := c.Check(spki); err != nil || res.Findings != nil {
			t.Fatal(res, err)
		}
	}); allocs != 0 {
		t.Fatalf("Check allocates %v times", allocs)
	}
}

// TestCheckConcurrent checks keys from many goroutines (run it with
// -race): results do not depend on what else runs.
func TestCheckConcurrent(t *testing.T) {
	r := mrand.New(mrand.NewSource(15))
	c := mustNew(t)
	var spkis [][]byte
	var want []string
	for i := range 16 {
		n := roughModulus(r, 2048)
		if i%2 == 0 {
			n.Mul(n, big.NewInt(3))
		}
		spki := rsaSPKIOf(n, f4)
		res, _ := c.Check(spki)
		spkis, want = append(spkis, spki), append(want, rules(res))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := (g + i) % len(spkis)
				if res, err := c.Check(spkis[k]); err != nil || rules(res) != want[k] {
					t.Errorf("key %d: %s, %v; want %s", k, rules(res), err, want[k])
				}
			}
		})
	}
	wg.Wait()
}
