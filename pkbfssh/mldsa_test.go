package pkbfssh_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/cloudflare/circl/sign"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"
	"github.com/cloudflare/circl/sign/mldsa/mldsa65"
	"github.com/cloudflare/circl/sign/mldsa/mldsa87"
	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/pkbfssh"
)

// blobKey is an SSH ML-DSA public key given by its type, its FIPS 204
// key and its blob (draft-sfluhrer-ssh-mldsa section 4: the type, then the
// key as one string), as x/crypto/ssh built with Go 1.27 hands it to a
// server's callback; made here with circl under any Go (x/crypto/ssh
// reads none under Go 1.26).
type blobKey struct {
	typ       string
	key, blob []byte
}

func (k blobKey) Type() string                        { return k.typ }
func (k blobKey) Marshal() []byte                     { return k.blob }
func (k blobKey) Verify([]byte, *ssh.Signature) error { return errors.New("blobKey verifies nothing") }

// withBlob returns k with another blob.
func (k blobKey) withBlob(blob []byte) blobKey { return blobKey{k.typ, k.key, blob} }

func mldsaBlob(typ string, key []byte) []byte {
	return ssh.Marshal(struct{ Name, Key string }{typ, string(key)})
}

func newBlobKey(t *testing.T, typ string, s sign.Scheme) blobKey {
	pub, _, err := s.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, err := pub.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return blobKey{typ, key, mldsaBlob(typ, key)}
}

// unsignedCert is a certificate of key by ca, as the callback reads it
// (before the server's callback checks its signature).
func unsignedCert(key, ca ssh.PublicKey) *ssh.Certificate {
	return &ssh.Certificate{Key: key, SignatureKey: ca, CertType: ssh.UserCert}
}

// F3 of red-team round 1: x/crypto/ssh v0.58 built with Go 1.27 accepts
// ssh-mldsa-44, -65 and -87 keys (draft-sfluhrer-ssh-mldsa) and ML-DSA
// certificates by default, and pkbf refused every one as a key it cannot
// read. The wrapped callback, given their blobs (made with circl), lets
// clean ones through to the server's callback and refuses compromised
// ones, as keys and inside certificates, as key or CA; a blob cut short
// is refused as unreadable.
func TestPublicKeyCallbackMLDSA(t *testing.T) {
	keys := map[string]blobKey{}
	for typ, s := range map[string]sign.Scheme{"ssh-mldsa-44": mldsa44.Scheme(), "ssh-mldsa-65": mldsa65.Scheme(), "ssh-mldsa-87": mldsa87.Scheme()} {
		keys[typ] = newBlobKey(t, typ, s)
	}
	bad, badCA := newBlobKey(t, "ssh-mldsa-65", mldsa65.Scheme()), newBlobKey(t, "ssh-mldsa-44", mldsa44.Scheme())
	cleanCA := newBlobKey(t, "ssh-mldsa-87", mldsa87.Scheme())
	f, err := pkbf.New(4, 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []blobKey{bad, badCA} {
		if _, err := keycheck.AddKey(f, ssh.MarshalAuthorizedKey(k)); err != nil {
			t.Fatal(err)
		}
	}
	ed, err := ssh.NewPublicKey(testkit.Signer(t, "Ed25519").Public())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		key  ssh.PublicKey
		err  error // nil: the server's callback decides
	}{
		{"compromised key", bad, pkbfssh.ErrCompromised},
		{"certificate by a clean ML-DSA CA", unsignedCert(keys["ssh-mldsa-44"], cleanCA), nil},
		{"Ed25519 certificate by a clean ML-DSA CA", unsignedCert(ed, cleanCA), nil},
		{"certificate of a compromised key", unsignedCert(bad, cleanCA), pkbfssh.ErrCompromised},
		{"certificate by a compromised CA", unsignedCert(keys["ssh-mldsa-87"], badCA), pkbfssh.ErrCompromised},
		{"key cut short", bad.withBlob(bad.blob[:len(bad.blob)-1]), pkbfssh.ErrNoKey},
		{"key one byte short", bad.withBlob(mldsaBlob(bad.typ, bad.key[1:])), pkbfssh.ErrNoKey},
		{"key one byte long", bad.withBlob(mldsaBlob(bad.typ, append(bad.key, 0))), pkbfssh.ErrNoKey},
		{"bytes after the key", bad.withBlob(append(bad.blob, 0)), pkbfssh.ErrNoKey},
	}
	for typ, k := range keys {
		cases = append(cases, struct {
			name string
			key  ssh.PublicKey
			err  error
		}{"clean " + typ, k, nil})
	}
	for _, c := range cases {
		called := false
		next := func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { called = true; return nil, nil }
		_, err := pkbfssh.PublicKeyCallback(keycheck.New(f, keycheck.Options{}), next)(connMeta{}, c.key)
		if c.err == nil && (err != nil || !called) || c.err != nil && (!errors.Is(err, c.err) || called) {
			t.Errorf("%s: %v (the server's callback called: %v), want %v", c.name, err, called, c.err)
		}
	}
}

// docs/sshserver.md says sshd never offers an ML-DSA key: OpenSSH here
// knows no such type (ssh -Q key, the key types it reads, sshd's too).
// The day it does, the sshd commands' reading of them must be decided.
func TestOpenSSHKnowsNoMLDSA(t *testing.T) {
	requireOpenSSH(t, "/usr/bin/ssh")
	out, err := exec.Command("/usr/bin/ssh", "-Q", "key").Output()
	if err != nil || !strings.Contains(string(out), "ssh-ed25519\n") {
		t.Fatalf("ssh -Q key: %v\n%s", err, out)
	}
	if strings.Contains(strings.ToLower(string(out)), "mldsa") || strings.Contains(strings.ToLower(string(out)), "ml-dsa") {
		t.Errorf("OpenSSH knows ML-DSA keys now:\n%s\npkbfssh reads them for Go servers only (goKeyTypes): update it and docs/sshserver.md", out)
	}
}
