package pkbfhttp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/internal/testkit"
)

// New takes the defaults for zero limits and refuses limits no request
// could meet: a negative one, a body larger than the bodies' memory.
func TestNewLimits(t *testing.T) {
	live, err := pkbf.OpenLive(exampleFilter, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	for _, tc := range []struct {
		name string
		l    Limits
		want Limits
		err  string
	}{
		{"zero: the defaults", Limits{}, DefaultLimits, ""},
		{"a large body: memory for it", Limits{MaxBody: 100 << 20}, Limits{MaxBody: 100 << 20, MaxBodyMemory: 100 << 20, MaxConns: 1024, MaxInFlight: 32, MaxKeys: 10000, MaxKDFWork: 4 << 21}, ""},
		{"small memory: the body within it", Limits{MaxBodyMemory: 1 << 20}, Limits{MaxBody: 1 << 20, MaxBodyMemory: 1 << 20, MaxConns: 1024, MaxInFlight: 32, MaxKeys: 10000, MaxKDFWork: 4 << 21}, ""},
		{"negative", Limits{MaxKeys: -1}, Limits{}, "negative limit"},
		{"negative key derivation", Limits{MaxKDFWork: -1}, Limits{}, "negative limit"},
		{"body over memory", Limits{MaxBody: 2 << 20, MaxBodyMemory: 1 << 20}, Limits{}, "no body that size could ever be taken"},
	} {
		s, err := New(live, Options{Limits: tc.l})
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "pkbf: ") {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case s.limits != tc.want:
			t.Errorf("%s: limits %+v, want %+v", tc.name, s.limits, tc.want)
		}
	}
}

// A Certificate serves what its files hold; Reload keeps the one in use
// when they cannot be read, and takes new ones. TLSConfig refuses a
// client CA file with no certificate.
func TestCertificateReload(t *testing.T) {
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string { return testkit.WritePEM(t, dir, name, typ, der) }
	pair := func(cn string) (cert, key string, serial string) {
		k, c := testkit.Cert(t, cn, nil, nil, func(c *x509.Certificate) { c.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)} })
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write("cert.pem", "CERTIFICATE", c.Raw), write("key.pem", "PRIVATE KEY", der), c.SerialNumber.String()
	}
	serving := func(c *Certificate) string {
		tc, _ := c.GetCertificate(&tls.ClientHelloInfo{})
		leaf, err := x509.ParseCertificate(tc.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.SerialNumber.String()
	}
	certFile, keyFile, first := pair("one")
	c, err := LoadCertificate(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := serving(c); got != first || c.CertFile() != certFile {
		t.Fatalf("serving %s from %s", got, c.CertFile())
	}
	os.WriteFile(keyFile, []byte("not a key"), 0o600)
	err = c.Reload()
	var bad *CertificateError
	if !errors.As(err, &bad) || bad.CertFile != certFile || bad.KeyFile != keyFile || bad.Err == nil || serving(c) != first ||
		!strings.HasPrefix(err.Error(), "pkbf: certificate "+certFile+", key "+keyFile+": tls: ") || perr.Text(err) != strings.TrimPrefix(err.Error(), "pkbf: ") {
		t.Errorf("a key that cannot be read: %v, serving %s; want a *CertificateError naming both files, and the first certificate", err, serving(c))
	}
	os.Remove(keyFile)
	var pathErr *fs.PathError
	if err := c.Reload(); !errors.As(err, &pathErr) {
		t.Errorf("a missing key: %v, want the *fs.PathError", err)
	}
	_, _, second := pair("two")
	if err := c.Reload(); err != nil || serving(c) != second {
		t.Errorf("new files: %v, serving %s, want %s", err, serving(c), second)
	}
	if _, err := TLSConfig(c, certFile+".missing"); !errors.As(err, &pathErr) {
		t.Errorf("a missing client CA file: %v", err)
	}
	if _, err := TLSConfig(c, keyFile); !errors.Is(err, ErrNoPEMCertificate) || err.Error() != "pkbf: client CA file "+keyFile+" holds no PEM certificate" {
		t.Errorf("a client CA file with no certificate: %v", err)
	}
	if cfg, err := TLSConfig(c, certFile); err != nil || cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("a client CA file: %v, %+v", err, cfg)
	}
}
