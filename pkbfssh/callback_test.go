package pkbfssh_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/pkbfssh"
)

// goSSHServer serves SSH on 127.0.0.1 until the test ends, with the
// callback; every exec request succeeds and does nothing.
func goSSHServer(t *testing.T, callback func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error)) (port int) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	config := &ssh.ServerConfig{PublicKeyCallback: callback}
	config.AddHostKey(signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serveSSH(c, config) })
		}
	})
	return l.Addr().(*net.TCPAddr).Port
}

func serveSSH(c net.Conn, config *ssh.ServerConfig) {
	defer c.Close()
	_, chans, reqs, err := ssh.NewServerConn(c, config)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "no")
			continue
		}
		ch, reqs, err := nc.Accept()
		if err != nil {
			return
		}
		for r := range reqs {
			r.Reply(r.Type == "exec", nil)
			if r.Type == "exec" {
				ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
				ch.Close()
			}
		}
	}
}

// A Go SSH server whose PublicKeyCallback is wrapped refuses, with the
// real ssh client, a compromised key, a certificate of a compromised key
// and a certificate signed by a compromised CA, before its own callback
// sees them; it lets in a clean key and a clean certificate.
func TestPublicKeyCallbackWithSSH(t *testing.T) {
	requireOpenSSH(t, "/usr/bin/ssh", "/usr/bin/ssh-keygen")
	dir := t.TempDir()
	keygen := func(name string, args ...string) string {
		path := filepath.Join(dir, name)
		if out, err := exec.Command("ssh-keygen", append([]string{"-q", "-N", "", "-C", name, "-f", path}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return path
	}
	sign := func(key, ca string) {
		if out, err := exec.Command("ssh-keygen", "-q", "-s", ca, "-I", filepath.Base(key), "-n", "alice", key+".pub").CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	pub := func(path string) ssh.PublicKey {
		b, _ := os.ReadFile(path)
		k, _, _, _, err := ssh.ParseAuthorizedKey(b)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	clean, bad := keygen("clean", "-t", "ed25519"), keygen("bad", "-t", "ecdsa")
	badRSA, badEd := keygen("bad-rsa", "-t", "rsa", "-b", "2048"), keygen("bad-ed25519", "-t", "ed25519")
	caOK, caBad := keygen("ca-ok", "-t", "ed25519"), keygen("ca-bad", "-t", "rsa", "-b", "2048")
	certOK, certBadKey, certBadCA := keygen("cert-ok", "-t", "ed25519"), keygen("cert-bad-key", "-t", "ed25519"), keygen("cert-bad-ca", "-t", "ed25519")
	sign(certOK, caOK)
	sign(certBadKey, caOK)
	sign(certBadCA, caBad)

	w, _ := pkbf.New(4, 16)
	for _, k := range []string{bad, badRSA, badEd, certBadKey, caBad} {
		b, _ := os.ReadFile(k + ".pub")
		if _, err := keycheck.AddKey(w, b); err != nil {
			t.Fatal(err)
		}
	}
	// The server's own callback: the two plain keys, and certificates
	// by either CA.
	authorized := map[string]bool{}
	for _, k := range []string{clean, bad, badRSA, badEd} {
		authorized[string(pub(k+".pub").Marshal())] = true
	}
	cas := map[string]bool{string(pub(caOK + ".pub").Marshal()): true, string(pub(caBad + ".pub").Marshal()): true}
	checker := &ssh.CertChecker{IsUserAuthority: func(k ssh.PublicKey) bool { return cas[string(k.Marshal())] }}
	var mu sync.Mutex
	var seen []string   // keys the server's callback saw
	var refused []error // the wrapper's refusals
	inner := func(conn ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		mu.Lock()
		seen = append(seen, ssh.FingerprintSHA256(key))
		mu.Unlock()
		if _, ok := key.(*ssh.Certificate); ok {
			return checker.Authenticate(conn, key)
		}
		if authorized[string(key.Marshal())] {
			return nil, nil
		}
		return nil, errors.New("not authorized")
	}
	wrapped := pkbfssh.PublicKeyCallback(keycheck.New(w, keycheck.Options{}), inner)
	port := goSSHServer(t, func(conn ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		p, err := wrapped(conn, key)
		if errors.Is(err, pkbfssh.ErrCompromised) {
			mu.Lock()
			refused = append(refused, err)
			mu.Unlock()
		}
		return p, err
	})
	login := func(key string) bool {
		cmd := exec.Command("ssh", "-i", key, "-p", fmt.Sprint(port), "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
			"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "alice@127.0.0.1", "true")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err != nil && !bytes.Contains(out.Bytes(), []byte("Permission denied")) {
			t.Fatalf("ssh: %v\n%s", err, out.String())
		}
		return err == nil
	}
	for _, c := range []struct {
		name, key string
		in        bool
	}{
		{"clean key", clean, true},
		{"compromised ECDSA key", bad, false},
		{"compromised RSA key", badRSA, false},
		{"compromised Ed25519 key", badEd, false},
		{"certificate by a clean CA", certOK, true},
		{"certificate of a compromised key", certBadKey, false},
		{"certificate by a compromised CA", certBadCA, false},
	} {
		if got := login(c.key); got != c.in {
			t.Errorf("%s: logged in %v, want %v", c.name, got, c.in)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	refusals := fmt.Sprint(refused)
	for _, k := range []string{bad + ".pub", badRSA + ".pub", badEd + ".pub", certBadKey + "-cert.pub", certBadCA + "-cert.pub"} {
		fp := ssh.FingerprintSHA256(pub(k))
		for _, s := range seen {
			if s == fp {
				t.Errorf("the server's callback saw %s (%s)", filepath.Base(k), fp)
			}
		}
		// What the server logs names the key as ssh-keygen -l does.
		out, err := exec.Command("ssh-keygen", "-l", "-f", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(out)); len(f) < 2 || !strings.Contains(refusals, f[1]) {
			t.Errorf("no refusal names %s's fingerprint (ssh-keygen -l: %s): %v", filepath.Base(k), out, refusals)
		}
	}
	if len(refused) < 5 {
		t.Errorf("%d refusals wrapping ErrCompromised, want one for each of the 5 keys: %v", len(refused), refused)
	}
}

// A config cannot be made without its check: ServerConfig and
// PublicKeyCallback panic at once on a nil KeyChecker (a callback made
// anyway would let every key in, or fail at the first login).
func TestNoKeyChecker(t *testing.T) {
	next := func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { return nil, nil }
	var c *keycheck.Checker
	for name, make := range map[string]func(){
		"ServerConfig(nil, nil)":                     func() { pkbfssh.ServerConfig(nil, nil) },
		"PublicKeyCallback(nil, next)":               func() { pkbfssh.PublicKeyCallback(nil, next) },
		"ServerConfig(nil, a nil *keycheck.Checker)": func() { pkbfssh.ServerConfig(nil, c) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "pkbfssh: no KeyChecker") {
					t.Errorf("%s: panic %v, want one saying there is no KeyChecker", name, r)
				}
			}()
			make()
		}()
	}
}
