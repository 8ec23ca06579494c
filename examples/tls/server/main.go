// Command server is an HTTPS server that refuses clients whose
// certificates hold a key a pkbf filter says is probably compromised:
//
//	server FILTER CERT KEY CLIENT-CA ADDR
//
// Every client must present a certificate issued under CLIENT-CA. The
// filter file is followed as pkbf update renames new ones over it, and
// each refusal is logged with the certificate and its key's fingerprint.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/pkbftls"
)

func main() {
	if len(os.Args) != 6 {
		log.Fatal("usage: server FILTER CERT KEY CLIENT-CA ADDR")
	}
	filter, err := pkbf.OpenLive(os.Args[1], pkbf.LiveOptions{OnError: func(err error) { log.Print(err) }})
	if err != nil {
		log.Fatal(err)
	}
	defer filter.Close()
	cert, err := tls.LoadX509KeyPair(os.Args[2], os.Args[3])
	if err != nil {
		log.Fatal(err)
	}
	caPEM, err := os.ReadFile(os.Args[4])
	if err != nil {
		log.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(caPEM) {
		log.Fatalf("%s: no PEM certificate", os.Args[4])
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCAs,
	}
	// A copy with the check, after crypto/tls's own verification; made
	// last, so that nothing set on cfg afterwards replaces the check.
	cfg = pkbftls.Config(cfg, keycheck.New(filter, keycheck.Options{}))

	ln, err := net.Listen("tcp", os.Args[5])
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on %s", ln.Addr())
	srv := &http.Server{
		TLSConfig: cfg,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello, %s\n", r.TLS.PeerCertificates[0].Subject)
		}),
	}
	// A refusal is a handshake error, which http.Server logs: "http: TLS
	// handshake error from ADDR: pkbf: peer certificate 0 (CN=...) has a
	// probably compromised key (SHA-256 of its SPKI ...)".
	log.Fatal(srv.ServeTLS(ln, "", ""))
}
