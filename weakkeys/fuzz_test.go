package weakkeys

import (
	"errors"
	"math/big"
	"path/filepath"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keys"
)

// FuzzCheck: Check reads any bytes without a panic; what it cannot read
// is an error wrapping keys.ErrInvalidKey and no finding, and what it
// reads as an RSA key gives the findings CheckModulus gives its modulus,
// and the exponent's.
func FuzzCheck(f *testing.F) {
	for _, pattern := range []string{"../testdata/keys/*.der", filepath.Join(vectorsDir, "*", "*.der")} {
		testkit.SeedFiles(f, pattern)
	}
	f.Add(rsaSPKIOf(big.NewInt(15), big.NewInt(3)))
	f.Add(namedEC(oidP256, []byte{2, 1}))
	c, err := New(WithFermatRounds(10))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := c.Check(b)
		if err != nil {
			testkit.CheckErr(t, err, keys.ErrInvalidKey)
			if res.Findings != nil {
				t.Fatal("a failed check returned findings")
			}
			return
		}
		for _, f := range res.Findings {
			if f.Rule == "" || f.Reason == "" {
				t.Fatalf("finding %+v without a rule or a reason", f)
			}
		}
		k, err := parseSPKI(b)
		if err != nil || !k.rsa {
			return
		}
		mod, err := c.CheckModulus(k.n)
		if err != nil {
			t.Fatal(err)
		}
		var withoutExponent []Finding
		for _, f := range res.Findings {
			if f.Rule != RuleRSAExponent && f.Rule != RuleRSAExponentRange {
				withoutExponent = append(withoutExponent, f)
			}
		}
		if rules(Result{withoutExponent}) != rules(mod) {
			t.Fatalf("Check: %s; CheckModulus: %s", rules(res), rules(mod))
		}
	})
}

// FuzzCheckModulus: any bytes are a modulus but zero, which is an error.
func FuzzCheckModulus(f *testing.F) {
	f.Add([]byte{0x0f})
	f.Add(new(big.Int).Lsh(one, 2047).Bytes())
	c, err := New(WithFermatRounds(10))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, n []byte) {
		res, err := c.CheckModulus(n)
		if err != nil {
			if !errors.Is(err, keys.ErrInvalidKey) || new(big.Int).SetBytes(n).Sign() != 0 {
				t.Fatalf("CheckModulus(%x) = %v", n, err)
			}
			return
		}
		// Without Debian lists, a modulus of 8192 bits or fewer is never
		// clean.
		if len(res.Findings) == 0 && new(big.Int).SetBytes(n).BitLen() <= debianMaxRSA {
			t.Fatalf("CheckModulus(%x): no finding, not even debian-not-covered", n)
		}
	})
}
