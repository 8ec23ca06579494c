package keys

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// Helpers for the tests of hostile input: keys an attacker would send must
// give an error, never a panic, an endless loop or unbounded memory.

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

// addOID adds a DER OBJECT IDENTIFIER with the content oid, for tests
// that build structures with cryptobyte.
func addOID(b *cryptobyte.Builder, oid []byte) {
	b.AddASN1(cbasn1.OBJECT_IDENTIFIER, func(b *cryptobyte.Builder) { b.AddBytes(oid) })
}
