package keys

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// A megabyte of PKCS#7 holds half a million empty certificates, each of
// which would be a Key with an error of its own: a container gives at
// most maxContainerParts.
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
	if parts, err := pkcs12Parts(keyBags(maxContainerParts), nil, nil); err != nil || len(parts) != maxContainerParts {
		t.Errorf("PKCS#12 of %d keys: %d parts, %v", maxContainerParts, len(parts), err)
	}
	if _, err := pkcs12Parts(keyBags(maxContainerParts+1), nil, nil); err == nil || !strings.Contains(err.Error(), "more than 10000 certificates and keys") {
		t.Errorf("PKCS#12 of %d keys: %v, want it refused", maxContainerParts+1, err)
	}
}

// Containers and bundles: every object, with the passphrase where needed;
// without it, an error that asks for it.
func TestContainers(t *testing.T) {
	pass := testPassphrase(t)
	names, _ := filepath.Glob(filepath.Join(moreDir, "*.KEYS"))
	if len(names) < 8 {
		t.Fatalf("%d .KEYS files", len(names))
	}
	for _, keysFile := range names {
		path := strings.TrimSuffix(keysFile, ".KEYS")
		want := strings.Fields(string(testkit.ReadFile(t, keysFile)))
		got, errs := scanFile(t, path, pass)
		slices.Sort(want)
		slices.Sort(got)
		if len(errs) != 0 || !slices.Equal(got, want) {
			t.Errorf("%s: found %v, errors %v; want %v", filepath.Base(path), got, errs, want)
		}
	}
	for _, name := range []string{"chain-password.p12", "chain-legacy.p12", "keytool.p12"} {
		_, errs := scanFile(t, filepath.Join(moreDir, name))
		if len(errs) != 1 || !errors.Is(errs[0], ErrInvalidKey) || !strings.Contains(errs[0].Error(), "password") {
			t.Errorf("%s without its passphrase: errors %v, want one asking for the password", name, errs)
		}
		_, errs = scanFile(t, filepath.Join(moreDir, name), "wrong")
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "wrong passphrase") {
			t.Errorf("%s with a wrong passphrase: errors %v", name, errs)
		}
	}
	// A container of one key gives it to SPKI too.
	spki, err := SPKI(testkit.ReadFile(t, filepath.Join(moreDir, "chain-empty.p12")))
	if err == nil || !strings.Contains(err.Error(), "Scanner") {
		t.Errorf("SPKI of a PKCS#12 file of two keys = %x, %v; want an error pointing to Scanner", spki, err)
	}
}
