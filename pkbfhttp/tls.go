package pkbfhttp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"os"
	"sync/atomic"

	"github.com/pkbf/pkbf/internal/perr"
)

// A Certificate is a server's certificate and key, read from their PEM
// files and read again by [Certificate.Reload]: certificates from a CA
// such as step-ca live for a day. It is safe for concurrent use.
type Certificate struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// A CertificateError is a certificate and key whose files were read but
// cannot be used together (not PEM, not a certificate, a key that does
// not match it). Its message names both files; a program that took their
// names from its own options can word it by them, from the fields.
type CertificateError struct {
	CertFile, KeyFile string
	Err               error // crypto/tls's reason
}

func (e *CertificateError) Error() string { return e.Unwrap().Error() }

// Unwrap returns e as a pkbf error, with the same message, which wraps
// e.Err.
func (e *CertificateError) Unwrap() error {
	return perr.Errorf("certificate %s, key %s: %w", e.CertFile, e.KeyFile, e.Err)
}

// ErrNoPEMCertificate is what [TLSConfig] returns, wrapped and naming the
// file, for a client CA file that holds no PEM certificate.
var ErrNoPEMCertificate = perr.New("holds no PEM certificate")

// LoadCertificate reads the certificate (with its chain) in certFile and
// its private key in keyFile. An error opening a file is an *fs.PathError;
// any other is a *CertificateError.
func LoadCertificate(certFile, keyFile string) (*Certificate, error) {
	c := &Certificate{certFile: certFile, keyFile: keyFile}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again; on an error, which it returns as
// [LoadCertificate] does, the certificate in use stays.
func (c *Certificate) Reload() error {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &pathErr):
		return err
	case err != nil:
		return &CertificateError{CertFile: c.certFile, KeyFile: c.keyFile, Err: err}
	}
	c.cur.Store(&pair)
	return nil
}

// CertFile returns the name of the certificate's file.
func (c *Certificate) CertFile() string { return c.certFile }

// GetCertificate returns the certificate in use, for
// [tls.Config.GetCertificate]; it never fails.
func (c *Certificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}

// TLSConfig returns a server configuration, TLS 1.2 and up, serving cert.
// When clientCAFile is not empty, every client must present a certificate
// chained to a CA certificate in that PEM file (step-ca's root, for its
// webhook): an error opening it is an *fs.PathError, and one holding no
// certificate is [ErrNoPEMCertificate].
func TLSConfig(cert *Certificate, clientCAFile string) (*tls.Config, error) {
	config := &tls.Config{GetCertificate: cert.GetCertificate, MinVersion: tls.VersionTLS12}
	if clientCAFile == "" {
		return config, nil
	}
	b, err := os.ReadFile(clientCAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, perr.Errorf("client CA file %s %w", clientCAFile, ErrNoPEMCertificate)
	}
	config.ClientAuth, config.ClientCAs = tls.RequireAndVerifyClientCert, pool
	return config, nil
}
