package pkbftls_test

import (
	"bytes"
	"crypto"
	//lint:ignore SA1019 DSA keys as crypto/x509 reads them
	"crypto/dsa"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
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

// Red team 4, finding E1: a compromised DSA key in a certificate no chain
// uses passed when its SPKI was oddly encoded (bytes after y, a NULL after
// the BIT STRING, ...): crypto/x509 reads the key, and the hook
// re-encoded it with x509.MarshalPKIXPublicKey, which cannot encode DSA,
// so pkbf's "cannot read" verdict stood, which an extra certificate
// passes with. The hook builds the DSA SPKI from the key crypto/x509 read
// and refuses it as compromised, as it does the canonical encoding: Go
// peers, openssl s_client presenting it to a Go server with the hook, and
// a Go client with the hook against openssl s_server presenting it, in
// TLS 1.2 and 1.3.
func TestOddDSASPKIRefused(t *testing.T) {
	p := pki(t)
	k := dsaKey(t)
	// The SPKI of the key with something after y (in its BIT STRING),
	// after g (in the parameters), after the parameters (in the
	// AlgorithmIdentifier) or after the BIT STRING.
	build := func(afterY, afterG, afterParams, afterKey []byte) []byte {
		var y cryptobyte.Builder
		y.AddASN1BigInt(k.Y)
		y.AddBytes(afterY)
		var b cryptobyte.Builder
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
				b.AddASN1ObjectIdentifier(asn1.ObjectIdentifier{1, 2, 840, 10040, 4, 1})
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
					b.AddASN1BigInt(k.P)
					b.AddASN1BigInt(k.Q)
					b.AddASN1BigInt(k.G)
					b.AddBytes(afterG)
				})
				b.AddBytes(afterParams)
			})
			b.AddASN1BitString(y.BytesOrPanic())
			b.AddBytes(afterKey)
		})
		return b.BytesOrPanic()
	}
	canonical := build(nil, nil, nil, nil)
	// The SPKI with y's INTEGER shifted a bit left in its BIT STRING, which
	// says its last bit is unused: crypto/x509 aligns it back.
	shifted := func() []byte {
		var y cryptobyte.Builder
		y.AddASN1BigInt(k.Y)
		bits := y.BytesOrPanic()
		out := make([]byte, len(bits))
		for i := range bits {
			out[i] = bits[i] << 1
			if i+1 < len(bits) {
				out[i] |= bits[i+1] >> 7
			}
		}
		s := cryptobyte.String(canonical)
		var spki, alg cryptobyte.String
		s.ReadASN1(&spki, cbasn1.SEQUENCE)
		spki.ReadASN1Element(&alg, cbasn1.SEQUENCE)
		var b cryptobyte.Builder
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddBytes(alg)
			b.AddASN1(cbasn1.BIT_STRING, func(b *cryptobyte.Builder) { b.AddUint8(1); b.AddBytes(out) })
		})
		return b.BytesOrPanic()
	}
	if c, err := keys.Canonical(canonical); err != nil || !bytes.Equal(c, canonical) {
		t.Fatalf("pkbf's canonical form of the DSA SPKI: %x, %v; want the SPKI itself", c, err)
	}
	null := []byte{5, 0}
	encodings := map[string][]byte{
		"canonical":                               canonical,
		"bytes after y":                           build([]byte{0, 0}, nil, nil, nil),
		"a NULL after g":                          build(nil, null, nil, nil),
		"a NULL after the algorithm's params":     build(nil, nil, null, nil),
		"a NULL after the BIT STRING":             build(nil, nil, nil, null),
		"bytes after y and a NULL after g":        build([]byte{0, 0}, null, nil, nil),
		"a NULL after the BIT STRING and after g": build(nil, null, nil, null),
		"y shifted, its last bit unused":          shifted(),
	}
	extras := map[string][]byte{}
	for name, spki := range encodings {
		der := rawCertificate(t, "DSA, "+name, spki, asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 2}, func([]byte) []byte { return []byte("not a signature") })
		c, err := x509.ParseCertificate(der)
		if pub, ok := c.PublicKey.(*dsa.PublicKey); err != nil || !ok || pub.Y.Cmp(k.Y) != 0 || pub.P.Cmp(k.P) != 0 || pub.G.Cmp(k.G) != 0 {
			t.Fatalf("%s: crypto/x509 does not read the DSA key (%v)", name, err)
		}
		if c, err := keys.Canonical(spki); name != "canonical" && !errors.Is(err, keys.ErrInvalidKey) {
			t.Logf("%s: pkbf reads the SPKI (%v): canonical %v", name, err, bytes.Equal(c, canonical))
		}
		extras[name] = der
	}
	w, err := pkbf.New(12, 16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keycheck.AddKey(w, canonical); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "f.pkbf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	filter, err := pkbf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filter.Close() })
	kc := check(filter)
	// A refusal of the extra certificate, the third the peer presented,
	// as compromised under the key's fingerprint.
	refusedAsCompromised := func(err error, extra []byte) bool {
		var ke *pkbftls.KeyError
		return errors.As(err, &ke) && errors.Is(err, pkbftls.ErrCompromised) && ke.Where == "peer certificate 2" &&
			bytes.Equal(ke.Certificate.Raw, extra) && ke.Verdict.Key.Fingerprint == keys.Fingerprint(canonical)
	}
	clean := p.clean["p256"]

	t.Run("Go peers", func(t *testing.T) {
		for name, extra := range extras {
			id := *clean
			id.chain = append(slices.Clone(clean.chain), extra)
			for vname, v := range versions {
				for _, serverRefuses := range []bool{true, false} {
					scfg, ccfg := serverConfig(p, clean, v), clientConfig(p, clean, v)
					refusal := func(o outcome) error { return o.client }
					if serverRefuses {
						ccfg.Certificates = []tls.Certificate{id.tlsCert()}
						pkbftls.Install(scfg, kc)
						refusal = func(o outcome) error { return o.server }
					} else {
						scfg.Certificates = []tls.Certificate{id.tlsCert()}
						pkbftls.Install(ccfg, kc)
					}
					if err := refusal(goHandshake(t, scfg, ccfg)); !refusedAsCompromised(err, extra) {
						t.Errorf("%s, %s, server refuses %v: %v; want the extra certificate refused as compromised", name, vname, serverRefuses, err)
					}
				}
			}
		}
	})

	dir := t.TempDir()
	cert, _, _, key := clean.files(t, dir)
	// The encodings OpenSSL presents: it cannot read a certificate with a
	// NULL after the key's BIT STRING or after its parameters.
	chains := map[string]string{}
	presentable := func(t *testing.T) map[string][]byte {
		requireTools(t, "openssl")
		read := map[string][]byte{}
		for name, extra := range extras {
			pemFile := filepath.Join(dir, sanitize(name)+".pem")
			writePEM(t, pemFile, "CERTIFICATE", extra)
			if _, err := run(t, "", "openssl", "x509", "-noout", "-in", pemFile); err != nil {
				t.Logf("%s: openssl cannot read the certificate: not presented", name)
				continue
			}
			read[name] = extra
			chains[name] = filepath.Join(dir, sanitize(name)+".chain")
			writePEM(t, chains[name], "CERTIFICATE", p.inter.cert.Raw, extra)
		}
		if read["bytes after y"] == nil {
			t.Fatal("openssl cannot read the certificate with bytes after y, the red team's case")
		}
		return read
	}
	t.Run("openssl s_client", func(t *testing.T) {
		presented := presentable(t)
		rootPEM := filepath.Join(dir, "root.pem")
		writePEM(t, rootPEM, "CERTIFICATE", p.root.chain...)
		for _, flag := range []string{"-tls1_2", "-tls1_3"} {
			scfg := serverConfig(p, clean, tls.VersionTLS12)
			scfg.MaxVersion = tls.VersionTLS13
			pkbftls.Install(scfg, kc)
			srv := startGoServer(t, scfg)
			for name, extra := range presented {
				out, err := run(t, "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n", "openssl", "s_client", "-connect", srv.addr, "-servername", "localhost",
					"-CAfile", rootPEM, "-cert", cert, "-cert_chain", chains[name], "-key", key, flag, "-ign_eof", "-cipher", secLevel0)
				if serverErr := srv.handshakeErr(t); !refusedAsCompromised(serverErr, extra) {
					t.Errorf("%s %s: the Go server: %v; want the extra certificate refused as compromised", name, flag, serverErr)
				}
				// In TLS 1.3, s_client learns of the alert after its
				// handshake, and where OpenSSL cannot decode the key of the
				// certificate it presented (a NULL after g), it stops on
				// that error first: the server's verdict is what counts.
				if flag == "-tls1_2" && (err == nil || !strings.Contains(out, opensslAlertNo)) {
					t.Errorf("%s %s: s_client did not report the alert (%v):\n%s", name, flag, err, out)
				}
			}
		}
	})
	t.Run("openssl s_server", func(t *testing.T) {
		for name, extra := range presentable(t) {
			addr, out := startSServer(t, "-cert", cert, "-cert_chain", chains[name], "-key", key, "-cipher", secLevel0)
			for vname, v := range versions {
				ccfg := clientConfig(p, nil, v)
				pkbftls.Install(ccfg, kc)
				conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, ccfg)
				if err == nil {
					conn.Close()
				}
				if !refusedAsCompromised(err, extra) {
					t.Errorf("%s %s: the Go client: %v; want the extra certificate refused as compromised\n%s", name, vname, err, out.String())
				}
			}
		}
	})
}

var (
	dsaOnce sync.Once
	dsaVal  *dsa.PrivateKey
	dsaErr  error
)

// dsaKey returns a DSA key (1024-bit p, 160-bit q), made once a test
// binary.
func dsaKey(t testing.TB) *dsa.PrivateKey {
	t.Helper()
	dsaOnce.Do(func() {
		var k dsa.PrivateKey
		if dsaErr = dsa.GenerateParameters(&k.Parameters, rand.Reader, dsa.L1024N160); dsaErr == nil {
			dsaErr = dsa.GenerateKey(&k, rand.Reader)
		}
		dsaVal = &k
	})
	if dsaErr != nil {
		t.Fatal(dsaErr)
	}
	return dsaVal
}

// E1's question: of the keys crypto/x509 reads, which it cannot write
// with MarshalPKIXPublicKey, the form in which the hook looks up its
// reading of an SPKI pkbf refuses (the hook builds the SPKI itself for
// those). DSA alone, under Go 1.26 and 1.27 (which reads and writes
// ML-DSA too).
func TestKeysCryptoX509CannotWrite(t *testing.T) {
	p := pki(t)
	spkis := map[string][]byte{"RSA": p.clean["rsa"].spki(), "Ed25519": p.clean["ed25519"].spki()}
	for name, c := range map[string]elliptic.Curve{"P-224": elliptic.P224(), "P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()} {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if spkis[name], err = x509.MarshalPKIXPublicKey(&k.PublicKey); err != nil {
			t.Fatal(err)
		}
	}
	x, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if spkis["X25519"], err = x509.MarshalPKIXPublicKey(x.PublicKey()); err != nil {
		t.Fatal(err)
	}
	_, spkis["ML-DSA-44"] = mldsa44Cert(t, "ML-DSA-44")
	k := dsaKey(t)
	params, _ := asn1.Marshal(struct{ P, Q, G *big.Int }{k.P, k.Q, k.G})
	y, _ := asn1.Marshal(k.Y)
	spkis["DSA"], _ = asn1.Marshal(struct {
		Algorithm struct {
			OID    asn1.ObjectIdentifier
			Params asn1.RawValue
		}
		Key asn1.BitString
	}{struct {
		OID    asn1.ObjectIdentifier
		Params asn1.RawValue
	}{asn1.ObjectIdentifier{1, 2, 840, 10040, 4, 1}, asn1.RawValue{FullBytes: params}}, asn1.BitString{Bytes: y, BitLength: 8 * len(y)}})
	var cannot []string
	for name, spki := range spkis {
		pub, err := x509.ParsePKIXPublicKey(spki)
		if err != nil {
			t.Logf("%s: crypto/x509 does not read it (%v)", name, err)
			continue
		}
		if _, err := x509.MarshalPKIXPublicKey(pub); err != nil {
			cannot = append(cannot, name)
		}
	}
	if slices.Sort(cannot); !slices.Equal(cannot, []string{"DSA"}) {
		t.Errorf("crypto/x509 reads and cannot write %v, want DSA alone: the hook must build those SPKIs", cannot)
	}
}
