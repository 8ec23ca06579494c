package pkbftls_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/pkbftls"
)

// A server that refuses clients whose keys the filter holds. A program
// follows the file pkbf update keeps current, with pkbf.OpenLive; here the
// filter is made in memory, holding the key of one certificate.
func Example() {
	compromised, err := os.ReadFile("../testdata/keys/p256.cert.pem")
	if err != nil {
		panic(err)
	}
	filter, _ := pkbf.New(12, 16)
	if _, err := keycheck.AddKey(filter, compromised); err != nil {
		panic(err)
	}

	// The server's config with the check: made last, once the config is
	// complete.
	cfg := pkbftls.Config(&tls.Config{ClientAuth: tls.RequireAndVerifyClientCert}, keycheck.New(filter, keycheck.Options{}))

	// What crypto/tls calls once it has verified a client that presented
	// that certificate: the handshake fails with this error, and the
	// client gets a bad_certificate alert.
	block, _ := pem.Decode(compromised)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		panic(err)
	}
	err = cfg.VerifyConnection(tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}})
	fmt.Println(err) // the fingerprint is openssl's: openssl x509 -noout -pubkey | openssl pkey -pubin -outform DER | sha256sum
	fmt.Println(errors.Is(err, pkbftls.ErrCompromised))
	// Output:
	// pkbf: peer certificate 0 (CN=pkbf test p256) has a probably compromised key (SHA-256 of its SPKI 6069088c7559ff46eb976bb0307137decd72d458c7bf0789b85bbd7e3c652575)
	// true
}
