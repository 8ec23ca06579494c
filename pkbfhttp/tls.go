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

// LoadCertificate reads the certificate (with its chain) in certFile and
// its private key in keyFile. An error opening a file is an *fs.PathError;
// any other names both files.
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
		return perr.Errorf("certificate %s, key %s: %v", c.certFile, c.keyFile, err)
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
// webhook): the error says when the file holds none.
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
		return nil, perr.Errorf("client CA file %s holds no PEM certificate", clientCAFile)
	}
	config.ClientAuth, config.ClientCAs = tls.RequireAndVerifyClientCert, pool
	return config, nil
}
