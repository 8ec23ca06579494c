package ct

import (
	"bytes"
	"crypto"
	//lint:ignore SA1019 DSA keys as crypto/x509 reads them
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"path/filepath"
	"testing"

	ctx509 "github.com/google/certificate-transparency-go/x509"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/ct/cttest"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
)

// oracleSPKI is the SubjectPublicKeyInfo certificate-transparency-go's
// x509 parser reads from an entry's leaf: the certificate's, or the
// precertificate's TBSCertificate's.
func oracleSPKI(e Entry) ([]byte, error) {
	parse := ctx509.ParseCertificate
	if e.Precert {
		parse = ctx509.ParseTBSCertificate
	}
	c, err := parse(e.Leaf)
	if err != nil {
		return nil, err
	}
	return c.RawSubjectPublicKeyInfo, nil
}

// The key a scan checks is the one certificate-transparency-go's own
// parser reads from the same leaf, for certificates and for
// precertificates' TBSCertificates; what is not a certificate or a
// TBSCertificate as far as its key gives an error.
func TestLeafSPKIMatchesCTGo(t *testing.T) {
	fx := cttest.NewFixture(t, 60, 60, 7)
	for i, fe := range fx.Entries {
		e := Entry{Index: int64(i), Precert: fe.Precert, Leaf: fe.DER}
		if fe.Precert {
			e.Leaf = fe.TBS
		}
		got, err := e.leafSPKI()
		want, oerr := oracleSPKI(e)
		if err != nil || oerr != nil || !bytes.Equal(got, want) {
			t.Errorf("entry %d (precertificate %v): %x, %v\nct-go: %x, %v", i, fe.Precert, got, err, want, oerr)
		}
		if c, _ := x509.ParseCertificate(fe.DER); !bytes.Equal(got, c.RawSubjectPublicKeyInfo) {
			t.Errorf("entry %d: not the key of the precertificate or certificate submitted", i)
		}
	}
	cert, tbs := fx.Entries[0].DER, fx.Entries[2].TBS
	for _, c := range []struct {
		name    string
		precert bool
		leaf    []byte
	}{
		{"an empty certificate", false, nil},
		{"an empty TBSCertificate", true, nil},
		{"bytes after the certificate", false, append(append([]byte(nil), cert...), 0)},
		{"bytes after the TBSCertificate", true, append(append([]byte(nil), tbs...), 0)},
		{"a truncated certificate", false, cert[:len(cert)-1]},
		{"a truncated TBSCertificate", true, tbs[:len(tbs)-1]},
		{"a TBSCertificate given as a certificate", false, tbs},
		{"a certificate given as a TBSCertificate", true, cert},
		{"a TBSCertificate cut before its key", true, []byte{0x30, 0x03, 0x02, 0x01, 0x01}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := Entry{Precert: c.precert, Leaf: c.leaf}
			if spki, err := e.leafSPKI(); err == nil {
				t.Errorf("read key %x", spki)
			}
			if _, err := oracleSPKI(e); err == nil {
				t.Errorf("ct-go reads it: a disagreement")
			}
		})
	}
}

// FuzzLeafSPKI: on any leaf, leafSPKI does not panic, and where
// certificate-transparency-go's parser reads a key, leafSPKI reads the
// same bytes.
func FuzzLeafSPKI(f *testing.F) {
	fx := cttest.NewFixture(f, 6, 6, 7)
	for _, fe := range fx.Entries {
		f.Add(false, fe.DER)
		if fe.Precert {
			f.Add(true, fe.TBS)
		}
	}
	f.Fuzz(func(t *testing.T, precert bool, leaf []byte) {
		e := Entry{Precert: precert, Leaf: leaf}
		got, err := e.leafSPKI()
		e.details()
		if want, oerr := oracleSPKI(e); oerr == nil && (err != nil || !bytes.Equal(got, want)) {
			t.Errorf("leafSPKI: %x, %v; ct-go: %x", got, err, want)
		}
	})
}

// withSPKI returns the certificate der with its SubjectPublicKeyInfo
// replaced by spki, signed again by the fixture's CA (so that a real log
// accepts it).
func withSPKI(t testing.TB, fx *cttest.Fixture, der, spki []byte) []byte {
	t.Helper()
	in := cryptobyte.String(der)
	var cert, tbs, sigAlg cryptobyte.String
	if !in.ReadASN1(&cert, cbasn1.SEQUENCE) || !cert.ReadASN1(&tbs, cbasn1.SEQUENCE) || !cert.ReadASN1Element(&sigAlg, cbasn1.SEQUENCE) {
		t.Fatal("not a certificate")
	}
	var fields [][]byte
	for !tbs.Empty() {
		var el cryptobyte.String
		if !tbs.ReadAnyASN1Element(&el, nil) {
			t.Fatal("a malformed TBSCertificate")
		}
		fields = append(fields, el)
	}
	fields[6] = spki // version, serial, signature, issuer, validity, subject, SPKI
	newTBS := derSeq(fields...)
	h := sha256.Sum256(newTBS)
	sig, err := ecdsa.SignASN1(rand.Reader, fx.CAKey, h[:])
	if err != nil {
		t.Fatal(err)
	}
	return derSeq(newTBS, sigAlg, derBitString(sig))
}

func derSeq(xs ...[]byte) []byte {
	b := cryptobyte.NewBuilder(nil)
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		for _, x := range xs {
			b.AddBytes(x)
		}
	})
	return b.BytesOrPanic()
}

func derBitString(content []byte) []byte {
	b := cryptobyte.NewBuilder(nil)
	b.AddASN1BitString(content)
	return b.BytesOrPanic()
}

// A lenientSPKI is a SubjectPublicKeyInfo pkbf's strict parse refuses.
type lenientSPKI struct {
	name string
	spki []byte
	key  crypto.PublicKey // the key Go's x509 reads from it; nil: none
}

// lenientSPKIs returns SPKIs of an EC and an RSA key that pkbf's strict
// parse refuses and Go's x509 reads as the key (the red team's table,
// issue 41 follow-up F1), ones no parser reads a key from, and the path
// of a filter that holds the two keys.
func lenientSPKIs(t testing.TB) (cases []lenientSPKI, filter string) {
	ecPriv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaPriv, _ := rsa.GenerateKey(rand.Reader, 2048)
	ec, rsaKey := &ecPriv.PublicKey, &rsaPriv.PublicKey
	var dsaKey dsa.PublicKey // crypto/x509 reads DSA keys and cannot write them
	if err := dsa.GenerateParameters(&dsaKey.Parameters, rand.Reader, dsa.L1024N160); err != nil {
		t.Fatal(err)
	}
	dsaPriv := dsa.PrivateKey{PublicKey: dsaKey}
	if err := dsa.GenerateKey(&dsaPriv, rand.Reader); err != nil {
		t.Fatal(err)
	}
	dsaKey = dsaPriv.PublicKey
	w, _ := pkbf.New(4, 20)
	for _, k := range []crypto.PublicKey{ec, rsaKey, &dsaKey} {
		spki, err := keys.MarshalPublicKey(k)
		if err != nil {
			t.Fatal(err)
		}
		w.Add(spki)
	}
	filter = filepath.Join(t.TempDir(), "lenient.pkbf")
	if err := w.WriteFile(filter); err != nil {
		t.Fatal(err)
	}
	ecSPKI, _ := x509.MarshalPKIXPublicKey(ec)
	rsaSPKI, _ := x509.MarshalPKIXPublicKey(rsaKey)
	alg := func(spki []byte) []byte {
		s := cryptobyte.String(spki)
		var body, a cryptobyte.String
		if !s.ReadASN1(&body, cbasn1.SEQUENCE) || !body.ReadASN1Element(&a, cbasn1.SEQUENCE) {
			t.Fatal("not an SPKI")
		}
		return a
	}
	dsaSPKI, _ := keys.MarshalPublicKey(&dsaKey)
	ecAlg, rsaAlg, dsaAlg := alg(ecSPKI), alg(rsaSPKI), alg(dsaSPKI)
	dsaY := cryptobyte.NewBuilder(nil)
	dsaY.AddASN1BigInt(dsaKey.Y)
	ecPoint, _ := ec.Bytes()
	pkcs1 := x509.MarshalPKCS1PublicKey(rsaKey)
	rsaOID := []byte{6, 9, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 1, 1}
	null := []byte{5, 0}
	cat := func(a, b []byte) []byte { return append(append([]byte(nil), a...), b...) }
	return []lenientSPKI{
		{"EC, a NULL after the BIT STRING", derSeq(ecAlg, derBitString(ecPoint), null), ec},
		{"RSA, a NULL after the BIT STRING", derSeq(rsaAlg, derBitString(pkcs1), null), rsaKey},
		{"EC, a NULL after the curve", derSeq(derSeq(cat(ecAlg[2:], null)), derBitString(ecPoint)), ec},
		{"RSA, a second NULL in the algorithm", derSeq(derSeq(rsaOID, null, null), derBitString(pkcs1)), rsaKey},
		{"RSA, an INTEGER 0 after the exponent", derSeq(rsaAlg, derBitString(derSeq(pkcs1[4:], []byte{2, 1, 0}))), rsaKey},
		{"RSA, two zero bytes after RSAPublicKey", derSeq(rsaAlg, derBitString(cat(pkcs1, []byte{0, 0}))), rsaKey},
		{"DSA, a NULL after the BIT STRING", derSeq(dsaAlg, derBitString(dsaY.BytesOrPanic()), null), &dsaKey},
		// No parser yields a key: fail closed.
		{"EC, not a point", derSeq(ecAlg, derBitString([]byte{4, 1, 2, 3})), nil},
		{"an unknown algorithm", derSeq(derSeq([]byte{6, 3, 0x2a, 3, 4}), derBitString([]byte{1, 2, 3})), nil},
		{"RSA, no RSAPublicKey", derSeq(rsaAlg, derBitString([]byte{1, 2, 3})), nil},
	}, filter
}

// Issue 41 follow-up, F1: a scan checks the key a TLS client would use.
// Where pkbf's strict parse refuses an SPKI that Go's x509 (the oracle:
// ParseCertificate on the entry's certificate) or certificate-transparency-
// go's reads as a key, the scan looks that key up; where none yields a
// key, the entry is not checked (an error). In certificates and in
// precertificates' TBSCertificates.
func TestLenientSPKIAsGoReadsIt(t *testing.T) {
	fx := cttest.NewFixture(t, 3, 3, 7)
	cases, path := lenientSPKIs(t)
	s := &Scan{Filter: keycheck.New(openFilter(t, path), keycheck.Options{})}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			der := withSPKI(t, fx, fx.Entries[0].DER, c.spki)
			goCert, goErr := x509.ParseCertificate(der)
			ctCert, ctErr := ctx509.ParseCertificate(der)
			oracle := goErr == nil && sameKey(goCert.PublicKey, c.key)
			if ctErr == nil {
				oracle = oracle || sameKey(ctCert.PublicKey, c.key)
			}
			if oracle != (c.key != nil) {
				t.Fatalf("the oracles disagree with the case: Go %v, ct-go %v", goErr, ctErr)
			}
			for _, precert := range []bool{false, true} {
				e := Entry{Leaf: der, Precert: precert}
				if precert {
					e.Leaf = goCertTBS(t, der)
				}
				v, err := s.verdict(e)
				switch {
				case c.key != nil && (err != nil || !v.Probably):
					t.Errorf("precertificate %v: Go reads the filter's key; the scan: %v, %v", precert, v.Probably, err)
				case c.key == nil && err == nil:
					t.Errorf("precertificate %v: no parser reads a key; the scan checked one (%v)", precert, v.Probably)
				}
			}
		})
	}
}

// sameKey reports whether a parser's key is want (nil: none).
func sameKey(got, want crypto.PublicKey) bool {
	if got == nil || want == nil {
		return false
	}
	if d, ok := want.(*dsa.PublicKey); ok { // no Equal method
		g, ok := got.(*dsa.PublicKey)
		return ok && g.Y.Cmp(d.Y) == 0 && g.P.Cmp(d.P) == 0 && g.Q.Cmp(d.Q) == 0 && g.G.Cmp(d.G) == 0
	}
	e, ok := got.(interface{ Equal(crypto.PublicKey) bool })
	return ok && e.Equal(want)
}

// goCertTBS returns the certificate's TBSCertificate.
func goCertTBS(t testing.TB, der []byte) []byte {
	in := cryptobyte.String(der)
	var cert, tbs cryptobyte.String
	if !in.ReadASN1(&cert, cbasn1.SEQUENCE) || !cert.ReadASN1Element(&tbs, cbasn1.SEQUENCE) {
		t.Fatal("not a certificate")
	}
	return tbs
}
