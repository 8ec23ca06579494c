package pkbfssh_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"net"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/pkbfssh"
)

// connMeta is the little of ssh.ConnMetadata the callback reads.
type connMeta struct{}

func (connMeta) User() string          { return "alice" }
func (connMeta) SessionID() []byte     { return nil }
func (connMeta) ClientVersion() []byte { return nil }
func (connMeta) ServerVersion() []byte { return nil }
func (connMeta) RemoteAddr() net.Addr  { return &net.TCPAddr{} }
func (connMeta) LocalAddr() net.Addr   { return &net.TCPAddr{} }

// BenchmarkPublicKeyCallback times the wrapped callback on a clean key of
// each kind (next accepts at once), beside keycheck.Checker.CheckKey of the same
// key's SPKI: what the wrapper adds is reading the SSH key.
func BenchmarkPublicKeyCallback(b *testing.B) {
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edk, _ := ed25519.GenerateKey(rand.Reader)
	w, _ := pkbf.New(12, 20)
	f := keycheck.New(w, keycheck.Options{})
	next := func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { return nil, nil }
	cb := pkbfssh.PublicKeyCallback(f, next)
	for _, k := range []struct {
		name string
		pub  any
	}{{"RSA-2048", &rk.PublicKey}, {"P-256", &ek.PublicKey}, {"Ed25519", edk.Public()}} {
		key, err := ssh.NewPublicKey(k.pub)
		if err != nil {
			b.Fatal(err)
		}
		spki, _ := x509.MarshalPKIXPublicKey(k.pub)
		b.Run(k.name+"/callback", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cb(connMeta{}, key); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(k.name+"/CheckKey", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v := f.CheckKey(spki); v.Err != nil || v.Probably {
					b.Fatal(v)
				}
			}
		})
	}
}
