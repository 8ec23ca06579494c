package testkit

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"testing"
)

var errSentinel = errors.New("pkbf: sentinel")

func TestCheckErr(t *testing.T) {
	CheckErr(t, fmt.Errorf("pkbf: wrapped: %w", errSentinel), errSentinel)
	for _, bad := range []error{errors.New("pkbf: other"), fmt.Errorf("no prefix: %w", errSentinel)} {
		ft := &fakeT{TB: t}
		func() {
			defer func() { recover() }()
			CheckErr(ft, bad, errSentinel)
		}()
		if !ft.failed {
			t.Errorf("CheckErr(%v) passed", bad)
		}
	}
}

// fakeT records a Fatalf instead of ending the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}

func TestWithCounter(t *testing.T) {
	spki := bytes.Repeat([]byte{0xaa}, 20)
	der := append(append([]byte("head"), spki...), "tail"...)
	got := WithCounter(der, spki, 0x01020304)
	// Four bytes ending 5 before the SPKI's end: 11 of its 20 bytes before.
	want := append(append([]byte("head"), bytes.Repeat([]byte{0xaa}, 11)...), 1, 2, 3, 4)
	want = append(want, bytes.Repeat([]byte{0xaa}, 5)...)
	want = append(want, "tail"...)
	if !bytes.Equal(got, want) {
		t.Errorf("WithCounter = %x, want %x", got, want)
	}
	if der[11] != 0xaa {
		t.Error("WithCounter changed its argument")
	}
}

// Signer makes each kind; Cert chains to its parent.
func TestSignerAndCert(t *testing.T) {
	for _, kind := range []string{"RSA", "P-256", "Ed25519"} {
		if k := Signer(t, kind); k == nil || k.Public() == nil {
			t.Errorf("Signer(%s) = %v", kind, k)
		}
	}
	rootKey, root := Cert(t, "root", nil, nil, func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid, c.KeyUsage = true, true, x509.KeyUsageCertSign
	})
	_, leaf := Cert(t, "leaf", root, rootKey, nil)
	pool := x509.NewCertPool()
	pool.AddCert(root)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool}); err != nil || leaf.Subject.CommonName != "leaf" {
		t.Errorf("the leaf does not chain to its root: %v", err)
	}
}
