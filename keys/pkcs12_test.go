package keys

import (
	"bytes"
	"errors"
	"testing"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

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

// A PKCS#12 file without a MAC holding many shrouded key bags at the
// highest iteration count would cost half a second a bag: the bags, the
// passphrases tried and the MAC share one budget.
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
		parts, err := pkcs12Parts(pfx(bags(tc.bags)...), tc.passphrases, nil)
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

// SetKDFWork is asked before each key derivation of every PKCS#12 file a
// Scanner reads, with its iterations; its error refuses the derivation,
// and the file's error wraps it: a caller bounds the work of all the files
// of an input (pkbf serve, a request's).
func TestScannerKDFWork(t *testing.T) {
	defer func(n int) { maxPKCS12Iterations = n }(maxPKCS12Iterations)
	maxPKCS12Iterations = 1000 // the same code at a size a test can afford
	var input []byte
	for range 5 {
		input = append(input, pfx(shroudedBag(1000))...)
	}
	errSpent := errors.New("spent")
	spent, left := 0, 3000
	s := NewScanner(bytes.NewReader(input))
	s.SetKDFWork(func(iterations int) error {
		if iterations > left {
			return errSpent
		}
		spent, left = spent+iterations, left-iterations
		return nil
	})
	var refused, encrypted int
	for s.Scan() {
		k := s.Key()
		_, err := k.SPKI()
		switch {
		case errors.Is(err, errSpent) && errors.Is(err, ErrInvalidKey):
			refused++
		case errors.Is(err, ErrEncryptedKey):
			encrypted++
		default:
			t.Errorf("key at %d: %v", k.Offset, err)
		}
	}
	// Each file derives one key (PBKDF2, one block) for its bag.
	if spent != 3000 || encrypted != 3 || refused != 2 {
		t.Errorf("%d iterations spent, %d files read, %d refused; want 3000, 3 and 2", spent, encrypted, refused)
	}
	s.Reset(bytes.NewReader(input))
	s.SetKDFWork(nil)
	for s.Scan() {
		if k := s.Key(); errors.Is(k.err, errSpent) {
			t.Fatal("a derivation was refused without SetKDFWork")
		}
	}
}
