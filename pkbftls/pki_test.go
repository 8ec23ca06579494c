package pkbftls_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cloudflare/circl/sign/mldsa/mldsa44"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
)

// An identity is a key and its certificate, with the chain up to (not
// including) the root, as a peer presents it.
type identity struct {
	name  string
	key   crypto.Signer
	cert  *x509.Certificate
	chain [][]byte // DER: the certificate, then its issuers but the root
}

// The test PKI: a root, a clean intermediate and a compromised one; under
// the clean intermediate a clean and a compromised leaf of each key type;
// under the compromised intermediate a clean leaf. The compromised keys
// are those of bad.
type testPKI struct {
	root, inter, badInter *identity
	clean, bad            map[string]*identity // by key type: rsa, p256, ed25519
	underBadInter         *identity
}

var keyTypes = []string{"rsa", "p256", "ed25519"}

var (
	pkiOnce sync.Once
	pkiVal  *testPKI
)

// pki returns the test PKI, made once a test binary (RSA keys take a while).
func pki(t testing.TB) *testPKI {
	t.Helper()
	pkiOnce.Do(func() {
		p := &testPKI{clean: map[string]*identity{}, bad: map[string]*identity{}}
		p.root = issue(t, "pkbf test root", "p256", nil, true)
		p.inter = issue(t, "pkbf test intermediate", "p256", p.root, true)
		p.badInter = issue(t, "pkbf compromised intermediate", "p256", p.root, true)
		for _, kt := range keyTypes {
			p.clean[kt] = issue(t, "clean "+kt, kt, p.inter, false)
			p.bad[kt] = issue(t, "compromised "+kt, kt, p.inter, false)
		}
		p.underBadInter = issue(t, "clean under a compromised intermediate", "p256", p.badInter, false)
		pkiVal = p
	})
	if pkiVal == nil {
		t.Fatal("the test PKI could not be made")
	}
	return pkiVal
}

func newKey(t testing.TB, kt string) crypto.Signer {
	t.Helper()
	var (
		k   crypto.Signer
		err error
	)
	switch kt {
	case "rsa":
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case "p256":
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ed25519":
		_, k, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil || k == nil {
		t.Fatalf("key %s: %v", kt, err)
	}
	return k
}

var serial int64

// issue makes a certificate for a new key of type kt, signed by parent
// (self-signed when nil): a CA, or a leaf for 127.0.0.1 and localhost
// that serves as a server and as a client.
func issue(t testing.TB, cn, kt string, parent *identity, ca bool) *identity {
	t.Helper()
	key := newKey(t, kt)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"pkbf tests"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	if ca {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	} else {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		if kt == "rsa" {
			tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	parentCert, signer := tmpl, key
	if parent != nil {
		parentCert, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	id := &identity{name: cn, key: key, cert: cert, chain: [][]byte{der}}
	if parent != nil && parent.cert.Subject.String() != parent.cert.Issuer.String() {
		id.chain = append(id.chain, parent.chain...)
	}
	return id
}

// tlsCert is the identity as crypto/tls presents it: with its chain.
func (id *identity) tlsCert() tls.Certificate {
	return tls.Certificate{Certificate: id.chain, PrivateKey: id.key, Leaf: id.cert}
}

// spki is the DER SubjectPublicKeyInfo of the identity's key.
func (id *identity) spki() []byte { return id.cert.RawSubjectPublicKeyInfo }

// fingerprint is the fingerprint a refusal names: pkbf's of the SPKI
// (every key here is in canonical form).
func (id *identity) fingerprint() string { return keys.Fingerprint(id.spki()) }

// files writes the identity's certificate, its intermediates and its key
// (PKCS#8) as PEM into dir, and returns their paths: cert holds the
// certificate alone, full the certificate and its intermediates, as
// curl --cert and openssl s_server -cert_chain read them.
func (id *identity) files(t testing.TB, dir string) (cert, chain, full, key string) {
	t.Helper()
	pkcs8, err := x509.MarshalPKCS8PrivateKey(id.key)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, filepath.Base(t.Name())+"-"+sanitize(id.name))
	cert, chain, full, key = base+".crt", base+".chain", base+".full", base+".key"
	writePEM(t, cert, "CERTIFICATE", id.chain[:1]...)
	writePEM(t, chain, "CERTIFICATE", id.chain[1:]...)
	writePEM(t, full, "CERTIFICATE", id.chain...)
	writePEM(t, key, "PRIVATE KEY", pkcs8)
	return cert, chain, full, key
}

func sanitize(s string) string {
	return string(bytes.Map(func(r rune) rune {
		if r == ' ' || r == '/' {
			return '-'
		}
		return r
	}, []byte(s)))
}

func writePEM(t testing.TB, path, typ string, ders ...[]byte) {
	t.Helper()
	var b bytes.Buffer
	for _, d := range ders {
		pem.Encode(&b, &pem.Block{Type: typ, Bytes: d})
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// roots is a pool of the test root.
func (p *testPKI) roots() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.root.cert)
	return pool
}

// compromised lists the identities whose keys the test filter holds.
func (p *testPKI) compromised() []*identity {
	ids := []*identity{p.badInter}
	for _, kt := range keyTypes {
		ids = append(ids, p.bad[kt])
	}
	return ids
}

// writeFilter writes a filter holding the keys of ids to path, by renaming
// a new file over it, as operators install filters.
func writeFilter(t testing.TB, path string, ids ...*identity) {
	t.Helper()
	w, err := pkbf.New(12, 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := keycheck.AddKey(w, id.spki()); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// liveFilter opens, as a server would, a filter file holding the test
// PKI's compromised keys; it is closed when the test ends.
func liveFilter(t testing.TB) (*pkbf.Live, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "compromised.pkbf")
	writeFilter(t, path, pki(t).compromised()...)
	l, err := pkbf.OpenLive(path, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

// openFilter opens a filter file holding the keys of ids; it is closed
// when the test ends.
func openFilter(t testing.TB, ids ...*identity) *pkbf.Filter {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.pkbf")
	writeFilter(t, path, ids...)
	f, err := pkbf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// parsed is the identity of the certificate der, for key.
func parsed(t testing.TB, der []byte, key crypto.Signer) *identity {
	t.Helper()
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &identity{name: cert.Subject.CommonName, key: key, cert: cert, chain: [][]byte{der}}
}

// check is the KeyChecker over q that the tests install.
func check(q keycheck.Querier) *keycheck.Checker { return keycheck.New(q, keycheck.Options{}) }

// openFilters returns the test filter as liveFilter does, and opened once
// as a *pkbf.Filter too, closed when the test ends.
func openFilters(t testing.TB) (*pkbf.Live, *pkbf.Filter) {
	t.Helper()
	live, path := liveFilter(t)
	filter, err := pkbf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filter.Close() })
	return live, filter
}

// cleanState is what crypto/tls gives the hook for a clean peer with a key
// of type kt: its certificate and the intermediate it sent, verified
// through them to the root.
func (p *testPKI) cleanState(kt string) tls.ConnectionState {
	leaf := p.clean[kt].cert
	return tls.ConnectionState{
		PeerCertificates: []*x509.Certificate{leaf, p.inter.cert},
		VerifiedChains:   [][]*x509.Certificate{{leaf, p.inter.cert, p.root.cert}},
	}
}

// rawCertificate makes a certificate by hand, for keys crypto/x509 cannot
// sign for: issued to cn for the SubjectPublicKeyInfo spki, under the
// signature algorithm sigAlg, signed by sign (which may return any bytes:
// no test verifies it).
func rawCertificate(t testing.TB, cn string, spki []byte, sigAlg asn1.ObjectIdentifier, sign func(tbs []byte) []byte) []byte {
	t.Helper()
	name, err := asn1.Marshal(pkix.Name{CommonName: cn, Organization: []string{"pkbf tests"}}.ToRDNSequence())
	if err != nil {
		t.Fatal(err)
	}
	serial++
	alg := pkix.AlgorithmIdentifier{Algorithm: sigAlg}
	tbs, err := asn1.Marshal(struct {
		Version  int `asn1:"optional,explicit,default:0,tag:0"`
		Serial   *big.Int
		SigAlg   pkix.AlgorithmIdentifier
		Issuer   asn1.RawValue
		Validity struct{ NotBefore, NotAfter time.Time }
		Subject  asn1.RawValue
		SPKI     asn1.RawValue
	}{
		Version: 2, Serial: big.NewInt(serial), SigAlg: alg, Issuer: asn1.RawValue{FullBytes: name},
		Validity: struct{ NotBefore, NotAfter time.Time }{time.Now().Add(-time.Hour).UTC(), time.Now().Add(24 * time.Hour).UTC()},
		Subject:  asn1.RawValue{FullBytes: name}, SPKI: asn1.RawValue{FullBytes: spki},
	})
	if err != nil {
		t.Fatal(err)
	}
	sig := sign(tbs)
	der, err := asn1.Marshal(struct {
		TBS    asn1.RawValue
		SigAlg pkix.AlgorithmIdentifier
		Sig    asn1.BitString
	}{asn1.RawValue{FullBytes: tbs}, alg, asn1.BitString{Bytes: sig, BitLength: 8 * len(sig)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x509.ParseCertificate(der); err != nil {
		t.Fatalf("crypto/x509 cannot read the certificate made by hand: %v", err)
	}
	return der
}

// rawSPKI is the SubjectPublicKeyInfo of key under the algorithm oid, its
// parameters absent.
func rawSPKI(t testing.TB, oid asn1.ObjectIdentifier, key []byte) []byte {
	t.Helper()
	b, err := asn1.Marshal(struct {
		Algorithm struct{ OID asn1.ObjectIdentifier }
		Key       asn1.BitString
	}{struct{ OID asn1.ObjectIdentifier }{oid}, asn1.BitString{Bytes: key, BitLength: 8 * len(key)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var oidMLDSA44 = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 3, 17}

// mldsa44Cert is a self-signed ML-DSA-44 certificate (made with circl, as
// crypto/x509 cannot), and its key's SPKI.
func mldsa44Cert(t testing.TB, cn string) (der, spki []byte) {
	t.Helper()
	pub, priv, err := mldsa44.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := pub.MarshalBinary()
	spki = rawSPKI(t, oidMLDSA44, raw)
	der = rawCertificate(t, cn, spki, oidMLDSA44, func(tbs []byte) []byte {
		return mldsa44.Scheme().Sign(priv, tbs, nil)
	})
	return der, spki
}
