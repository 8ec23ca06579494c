// Command client fetches a URL over HTTPS and refuses a server whose
// certificates hold a key a pkbf filter says is probably compromised:
//
//	client FILTER ROOTS URL [CERT KEY]
//
// The server's certificate must chain to a certificate of ROOTS; CERT and
// KEY are the client's own, for a server that asks for one. It exits 1 on
// any error, 3 when it refused the server's key.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net/http"
	"os"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/pkbftls"
)

func main() {
	if len(os.Args) != 4 && len(os.Args) != 6 {
		log.Fatal("usage: client FILTER ROOTS URL [CERT KEY]")
	}
	filter, err := pkbf.Open(os.Args[1]) // one request: a Live filter is for programs that run on
	if err != nil {
		log.Fatal(err)
	}
	defer filter.Close()
	rootsPEM, err := os.ReadFile(os.Args[2])
	if err != nil {
		log.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(rootsPEM) {
		log.Fatalf("%s: no PEM certificate", os.Args[2])
	}
	cfg := &tls.Config{RootCAs: roots}
	if len(os.Args) == 6 {
		cert, err := tls.LoadX509KeyPair(os.Args[4], os.Args[5])
		if err != nil {
			log.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	cfg = pkbftls.Config(cfg, keycheck.New(filter, keycheck.Options{})) // last: see docs/tls.md

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	resp, err := client.Get(os.Args[3])
	if errors.Is(err, pkbftls.ErrCompromised) {
		// "Get URL: pkbf: peer certificate 0 (CN=...) has a probably
		// compromised key (SHA-256 of its SPKI ...)"; errors.As gives the
		// *pkbftls.KeyError, with the certificate and the verdict.
		log.Print(err)
		os.Exit(3)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(os.Stdout, resp.Body); err != nil {
		log.Fatal(err)
	}
}
