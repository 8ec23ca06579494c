package pkbftls_test

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/pkbftls"
)

// Red-team finding F4: crypto/x509 reads SPKIs that pkbf's strict parse
// refuses (a NULL after the BIT STRING or after the algorithm's
// parameters, bytes after an RSA key), and verifiers use the key it reads.
// A Go client presents to a Go mTLS server with the hook, over TCP, a
// certificate of a compromised P-256 or RSA key in such an encoding: as an
// extra certificate no chain uses (a self-signed CA, its signature good),
// it was let through, as pkbf could not read it; it is refused as
// compromised, under the key's fingerprint, as the same certificate
// encoded normally is. Likewise a Go client with the hook refuses a server
// presenting one, and an intermediate of a compromised key in such an
// encoding, in the verified chain, is refused as compromised, not as
// unreadable. A clean key so encoded still passes as an extra certificate,
// and still refuses the handshake as unreadable where it certifies the
// peer.
func TestOddSPKIReadAsCryptoX509ReadsIt(t *testing.T) {
	p := pki(t)
	for _, kt := range []string{"p256", "rsa"} {
		bad, clean := p.bad[kt], p.clean[kt]
		filter := check(openFilter(t, bad)) // holds bad's key only, canonical
		for oddity, odd := range oddSPKIs(t, bad.spki()) {
			cleanOdd := oddSPKIs(t, clean.spki())[oddity]
			// A self-signed CA of the key, in the odd encoding.
			extra := func(id *identity, spki []byte) *identity {
				serial++
				tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "odd CA " + id.name},
					NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
				der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, id.key.Public(), id.key)
				if err != nil {
					t.Fatal(err)
				}
				return parsed(t, withSPKI(t, der, spki, id.key), id.key)
			}
			// An intermediate of the key under the test root, in the odd
			// encoding, and a clean leaf under it.
			under := func(id *identity, spki []byte) (inter, leaf *identity) {
				serial++
				tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "odd intermediate " + id.name},
					NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
				der, err := x509.CreateCertificate(rand.Reader, tmpl, p.root.cert, id.key.Public(), p.root.key)
				if err != nil {
					t.Fatal(err)
				}
				inter = parsed(t, withSPKI(t, der, spki, p.root.key), id.key)
				return inter, issue(t, "clean under "+inter.name, "p256", inter, false)
			}
			badExtra, cleanExtra := extra(bad, odd), extra(clean, cleanOdd)
			badInter, underBad := under(bad, odd)
			cleanInter, underClean := under(clean, cleanOdd)
			withExtra := func(x *identity) *identity {
				id := *p.clean["p256"]
				id.chain = append(id.chain[:len(id.chain):len(id.chain)], x.chain[0])
				return &id
			}
			for _, c := range []struct {
				name      string
				presented *identity
				refused   *identity // whose certificate a refusal names, nil for a pass
				where     string
				err       error // what the refusal wraps
			}{
				{"compromised, extra certificate", withExtra(badExtra), badExtra, "peer certificate 2", pkbftls.ErrCompromised},
				{"compromised, intermediate", underBad, badInter, "peer certificate 1", pkbftls.ErrCompromised},
				{"clean, extra certificate", withExtra(cleanExtra), nil, "", nil},
				{"clean, intermediate", underClean, cleanInter, "peer certificate 1", keys.ErrInvalidKey},
			} {
				for vname, v := range versions {
					for _, serverRefuses := range []bool{true, false} {
						name := fmt.Sprintf("%s/%s/%s/%s/server refuses %v", kt, oddity, c.name, vname, serverRefuses)
						scfg, ccfg := serverConfig(p, p.clean["p256"], v), clientConfig(p, p.clean["p256"], v)
						if serverRefuses {
							ccfg.Certificates = []tls.Certificate{c.presented.tlsCert()}
							pkbftls.Install(scfg, filter)
						} else {
							scfg.Certificates = []tls.Certificate{c.presented.tlsCert()}
							pkbftls.Install(ccfg, filter)
						}
						o := goHandshake(t, scfg, ccfg)
						refusal, refused := o.client, o.server
						if serverRefuses {
							refusal, refused = o.server, o.client
						}
						if c.refused == nil {
							if o.server != nil || o.client != nil {
								t.Errorf("%s: server %v, client %v, want a completed handshake", name, o.server, o.client)
							}
							continue
						}
						var ke *pkbftls.KeyError
						if !errors.As(refusal, &ke) || !errors.Is(refusal, c.err) || ke.Where != c.where || !bytes.Equal(ke.Certificate.Raw, c.refused.cert.Raw) {
							t.Errorf("%s: %v, want a refusal of %s wrapping %v", name, refusal, c.where, c.err)
							continue
						}
						if c.err == pkbftls.ErrCompromised && ke.Verdict.Key.Fingerprint != bad.fingerprint() {
							t.Errorf("%s: fingerprint %s, want the key's %s", name, ke.Verdict.Key.Fingerprint, bad.fingerprint())
						}
						wantAlert(t, name, refused)
					}
				}
			}
		}
	}
}

// What the hook relies on where pkbf's strict parse reads an SPKI: that
// the key is the one crypto/x509 reads from a certificate carrying it, so
// that looking it up as given finds what crypto/tls would use. (Where the
// parse fails, the hook looks up crypto/x509's reading as well.)
func FuzzCryptoX509Reading(f *testing.F) {
	p := pki(f)
	for _, id := range []*identity{p.clean["p256"], p.clean["rsa"], p.clean["ed25519"]} {
		f.Add(id.spki())
	}
	for _, kt := range []string{"p256", "rsa"} {
		for _, odd := range oddSPKIs(f, p.clean[kt].spki()) {
			f.Add(odd)
		}
	}
	base := p.clean["p256"].cert.Raw
	f.Fuzz(func(t *testing.T, spki []byte) {
		c, err := x509.ParseCertificate(withSPKI(t, base, spki, nil))
		if err != nil || c.PublicKey == nil {
			return
		}
		read, err := x509.MarshalPKIXPublicKey(c.PublicKey)
		if err != nil {
			return // a key crypto/x509 reads and cannot write: DSA
		}
		if canonical, err := keys.Canonical(spki); err == nil && !bytes.Equal(canonical, read) {
			t.Errorf("pkbf reads SPKI %x as %x, crypto/x509 as %x", spki, canonical, read)
		}
	})
}

// withSPKI returns der, a certificate issued by signer's key (P-256 or
// RSA, which crypto/x509 signs with SHA-256 as here), with its
// SubjectPublicKeyInfo replaced by spki and signed again; with no signer,
// with a signature of junk.
func withSPKI(t testing.TB, der, spki []byte, signer crypto.Signer) []byte {
	t.Helper()
	in := cryptobyte.String(der)
	var cert, tbs, body cryptobyte.String
	var sigAlg []byte
	if !in.ReadASN1(&cert, cbasn1.SEQUENCE) || !cert.ReadASN1(&tbs, cbasn1.SEQUENCE) || !cert.ReadASN1Element((*cryptobyte.String)(&sigAlg), cbasn1.SEQUENCE) {
		t.Fatal("withSPKI: not a certificate")
	}
	body = tbs
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		// version [0], serial, signature, issuer, validity, subject, SPKI, ...
		for i := 0; !body.Empty(); i++ {
			var el cryptobyte.String
			if !body.ReadAnyASN1Element(&el, nil) {
				t.Fatal("withSPKI: a malformed TBSCertificate")
			}
			if i == 6 {
				el = spki
			}
			b.AddBytes(el)
		}
	})
	newTBS := b.BytesOrPanic()
	sig := []byte("not a signature")
	if signer != nil {
		digest := sha256.Sum256(newTBS)
		var err error
		if sig, err = signer.Sign(rand.Reader, digest[:], crypto.SHA256); err != nil {
			t.Fatal(err)
		}
	}
	var out cryptobyte.Builder
	out.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddBytes(newTBS)
		b.AddBytes(sigAlg)
		b.AddASN1BitString(sig)
	})
	return out.BytesOrPanic()
}

// oddSPKIs are encodings of the key of spki (P-256 or RSA, canonical) that
// crypto/x509 reads from a certificate, using the key, and pkbf's strict
// parse refuses, by name.
func oddSPKIs(t testing.TB, spki []byte) map[string][]byte {
	t.Helper()
	var alg, oid cryptobyte.String
	var bits asn1.BitString
	s := cryptobyte.String(spki)
	if !s.ReadASN1(&s, cbasn1.SEQUENCE) || !s.ReadASN1(&alg, cbasn1.SEQUENCE) || !s.ReadASN1BitString(&bits) || !alg.ReadASN1Element(&oid, cbasn1.OBJECT_IDENTIFIER) {
		t.Fatal("oddSPKIs: not an SPKI")
	}
	params, key := []byte(alg), bits.Bytes
	build := func(params, key, after []byte) []byte {
		var b cryptobyte.Builder
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { b.AddBytes(oid); b.AddBytes(params) })
			b.AddASN1BitString(key)
			b.AddBytes(after)
		})
		return b.BytesOrPanic()
	}
	null := []byte{5, 0}
	odd := map[string][]byte{
		"a NULL after the BIT STRING":         build(params, key, null),
		"a NULL after the algorithm's params": build(append(params[:len(params):len(params)], null...), key, nil),
	}
	if bytes.Equal(params, null) { // RSA: bytes after the RSAPublicKey, in its BIT STRING
		odd["bytes after the RSA key"] = build(params, append(key[:len(key):len(key)], 0, 0), nil)
	}
	for name, o := range odd {
		c, err := x509.ParseCertificate(rawCertificate(t, "odd", o, asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 2}, func([]byte) []byte { return []byte{1} }))
		if err != nil || c.PublicKey == nil {
			t.Fatalf("oddSPKIs: crypto/x509 does not read the key with %s: %v", name, err)
		}
		if der, err := x509.MarshalPKIXPublicKey(c.PublicKey); err != nil || !bytes.Equal(der, spki) {
			t.Fatalf("oddSPKIs: crypto/x509 reads another key with %s", name)
		}
		if _, err := keys.Canonical(o); !errors.Is(err, keys.ErrInvalidKey) {
			t.Fatalf("oddSPKIs: pkbf reads the key with %s (%v)", name, err)
		}
	}
	return odd
}
