// Command acmecert gets a certificate for the IP address 127.0.0.1 from an
// ACME server, such as step-ca, through the http-01 challenge:
//
//	acmecert DIRECTORY ROOT KEY HTTP-ADDR
//
// DIRECTORY is the server's ACME directory URL; ROOT a PEM file of the
// root certificate its TLS certificate chains to; KEY the certificate's
// private key, PEM PKCS#8 (as openssl genpkey writes it); HTTP-ADDR where
// to answer the challenge (127.0.0.1 and the port step-ca's
// --acme-http-port names). It writes the certificate and its chain, PEM,
// to standard output. An error, the server's refusal included, goes to
// standard error, and the exit status is 1.
//
// It is the ACME client of docs/stepca.md's recipe, made with
// golang.org/x/crypto/acme, for a machine without certbot or lego.
package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/crypto/acme"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("acmecert: ")
	if len(os.Args) != 5 {
		log.Fatal("usage: acmecert DIRECTORY ROOT KEY HTTP-ADDR")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chain, err := certificate(ctx, os.Args[1], os.Args[2], os.Args[3], os.Args[4])
	if err != nil {
		log.Fatal(err)
	}
	for _, der := range chain {
		if err := pem.Encode(os.Stdout, &pem.Block{Type: "CERTIFICATE", Bytes: der}); err != nil {
			log.Fatal(err)
		}
	}
}

// certificate orders a certificate for 127.0.0.1 and the key in the file
// keyPath from the ACME server at directory, answering its http-01
// challenge on httpAddr, and returns the chain, leaf first.
func certificate(ctx context.Context, directory, rootPath, keyPath, httpAddr string) ([][]byte, error) {
	roots, err := readRoots(rootPath)
	if err != nil {
		return nil, err
	}
	key, err := readKey(keyPath)
	if err != nil {
		return nil, err
	}
	account, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	client := &acme.Client{
		Key:          account,
		DirectoryURL: directory,
		HTTPClient:   &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}},
	}
	if _, err := client.Register(ctx, &acme.Account{}, acme.AcceptTOS); err != nil {
		return nil, fmt.Errorf("registering an account: %w", err)
	}

	// The server fetches http://127.0.0.1:PORT/.well-known/acme-challenge/TOKEN.
	answers := http.NewServeMux()
	ln, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	go http.Serve(ln, answers)

	order, err := client.AuthorizeOrder(ctx, []acme.AuthzID{{Type: "ip", Value: "127.0.0.1"}})
	if err != nil {
		return nil, fmt.Errorf("ordering: %w", err)
	}
	for _, u := range order.AuthzURLs {
		z, err := client.GetAuthorization(ctx, u)
		if err != nil {
			return nil, err
		}
		if z.Status == acme.StatusValid {
			continue
		}
		var chal *acme.Challenge
		for _, c := range z.Challenges {
			if c.Type == "http-01" {
				chal = c
			}
		}
		if chal == nil {
			return nil, fmt.Errorf("the server offers no http-01 challenge for %s", z.Identifier.Value)
		}
		answer, err := client.HTTP01ChallengeResponse(chal.Token)
		if err != nil {
			return nil, err
		}
		answers.HandleFunc(client.HTTP01ChallengePath(chal.Token), func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(answer))
		})
		if _, err := client.Accept(ctx, chal); err != nil {
			return nil, fmt.Errorf("accepting the challenge: %w", err)
		}
		if _, err := client.WaitAuthorization(ctx, z.URI); err != nil {
			return nil, fmt.Errorf("the challenge: %w", err)
		}
	}
	if order, err = client.WaitOrder(ctx, order.URI); err != nil {
		return nil, fmt.Errorf("the order: %w", err)
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}, key)
	if err != nil {
		return nil, err
	}
	chain, _, err := client.CreateOrderCert(ctx, order.FinalizeURL, csr, true)
	if err != nil {
		return nil, fmt.Errorf("finalizing the order: %w", err)
	}
	return chain, nil
}

func readRoots(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return roots, nil
}

func readKey(path string) (crypto.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: no PEM PKCS#8 private key (-----BEGIN PRIVATE KEY-----)", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: a %T cannot sign a certificate request", path, k)
	}
	return signer, nil
}
