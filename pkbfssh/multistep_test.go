package pkbfssh_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/pkbfssh"
)

// serveConfig serves SSH with config on 127.0.0.1 until the test ends
// (every exec request succeeds and does nothing), and returns its address.
func serveConfig(t *testing.T, config *ssh.ServerConfig) string {
	t.Helper()
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
	return l.Addr().String()
}

// hostKey returns a config with a new Ed25519 host key.
func hostKey(t *testing.T) *ssh.ServerConfig {
	signer, err := ssh.NewSignerFromSigner(testkit.Signer(t, "Ed25519"))
	if err != nil {
		t.Fatal(err)
	}
	c := &ssh.ServerConfig{}
	c.AddHostKey(signer)
	return c
}

// login connects to addr as alice over TCP with x/crypto/ssh's client,
// trying methods in order, one an attempt (after the first "none"), and
// reports whether the server let it in.
func login(t *testing.T, addr string, methods ...ssh.AuthMethod) bool {
	t.Helper()
	i := 0
	config := &ssh.ClientConfig{
		User:            "alice",
		HostKeyCallback: ssh.InsecureIgnoreHostKey(),
		Timeout:         10 * time.Second,
		AuthCallback: func(*ssh.ClientAuthContext) (ssh.AuthMethod, error) {
			if i == len(methods) {
				return nil, errNoMoreMethods
			}
			i++
			return methods[i-1], nil
		},
	}
	c, err := ssh.Dial("tcp", addr, config)
	if err != nil {
		if !errors.Is(err, errNoMoreMethods) && !strings.Contains(err.Error(), "unable to authenticate") {
			t.Fatalf("ssh: %v", err)
		}
		return false
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Run("true"); err != nil {
		t.Fatalf("a logged-in session: %v", err)
	}
	return true
}

var errNoMoreMethods = errors.New("the client tried every method it was given")

// sshIDs are the keys and certificates of the multi-step tests: a clean
// and a compromised key, a clean and a compromised user CA, and
// certificates by them for alice.
type sshIDs struct {
	filter              *pkbf.Writable
	clean, bad          ssh.Signer
	cleanCA, badCA      ssh.Signer
	certOK, certBadKey  ssh.Signer // by the clean CA
	certBadCA           ssh.Signer // of the clean key, by the compromised CA
	compromisedKeyTexts []string   // what a refusal names: the keys' SHA256: fingerprints
}

func newSSHIDs(t *testing.T) *sshIDs {
	t.Helper()
	signer := func(kind string) ssh.Signer {
		s, err := ssh.NewSignerFromSigner(testkit.Signer(t, kind))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ids := &sshIDs{clean: signer("Ed25519"), bad: signer("P-256"), cleanCA: signer("Ed25519"), badCA: signer("P-256")}
	ids.certOK = certSigner(t, ids.clean, ids.cleanCA, "alice")
	ids.certBadKey = certSigner(t, ids.bad, ids.cleanCA, "alice")
	ids.certBadCA = certSigner(t, ids.clean, ids.badCA, "alice")
	ids.filter, _ = pkbf.New(4, 16)
	for _, s := range []ssh.Signer{ids.bad, ids.badCA} {
		if _, err := keycheck.AddKey(ids.filter, ssh.MarshalAuthorizedKey(s.PublicKey())); err != nil {
			t.Fatal(err)
		}
		ids.compromisedKeyTexts = append(ids.compromisedKeyTexts, ssh.FingerprintSHA256(s.PublicKey()))
	}
	return ids
}

// checker is the KeyChecker of ids' filter.
func (ids *sshIDs) checker() *keycheck.Checker { return keycheck.New(ids.filter, keycheck.Options{}) }

// certSigner returns a user certificate of key's public key for
// principals, signed by ca, as a signer the client presents.
func certSigner(t *testing.T, key, ca ssh.Signer, principals ...string) ssh.Signer {
	t.Helper()
	cert := &ssh.Certificate{Key: key.PublicKey(), CertType: ssh.UserCert, KeyId: "test", ValidPrincipals: principals, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewCertSigner(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// keyStep is a server's public key step: it accepts every plain key and,
// through ssh.CertChecker, certificates by either CA (the compromised one
// too: refusing it is pkbf's job), and records the keys it saw.
type keyStep struct {
	mu      sync.Mutex
	seen    []string
	checker *ssh.CertChecker
	next    *ssh.PartialSuccessError // returned for an accepted key, if not nil
}

func newKeyStep(ids *sshIDs, next *ssh.PartialSuccessError) *keyStep {
	cas := map[string]bool{string(ids.cleanCA.PublicKey().Marshal()): true, string(ids.badCA.PublicKey().Marshal()): true}
	return &keyStep{
		checker: &ssh.CertChecker{IsUserAuthority: func(k ssh.PublicKey) bool { return cas[string(k.Marshal())] }},
		next:    next,
	}
}

func (s *keyStep) callback(conn ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	s.mu.Lock()
	s.seen = append(s.seen, ssh.FingerprintSHA256(key))
	s.mu.Unlock()
	if _, ok := key.(*ssh.Certificate); ok {
		if _, err := s.checker.Authenticate(conn, key); err != nil {
			return nil, err
		}
	}
	if s.next != nil {
		return nil, s.next
	}
	return nil, nil
}

// saw reports whether the step saw the key (a certificate's key: the
// certificate's own fingerprint, as FingerprintSHA256 gives it).
func (s *keyStep) saw(key ssh.PublicKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fp := range s.seen {
		if fp == ssh.FingerprintSHA256(key) {
			return true
		}
	}
	return false
}

// fakeGSSAPI is a GSS-API mechanism for both ends whose context is
// established at once and whose MIC is the data itself: enough for
// x/crypto/ssh's gssapi-with-mic method to reach AllowLogin.
type fakeGSSAPI struct{}

func (fakeGSSAPI) InitSecContext(string, []byte, bool) ([]byte, bool, error) {
	return []byte("token"), false, nil
}
func (fakeGSSAPI) GetMIC(mic []byte) ([]byte, error) { return mic, nil }
func (fakeGSSAPI) AcceptSecContext([]byte) ([]byte, string, bool, error) {
	return nil, "alice@PKBF.TEST", false, nil
}
func (fakeGSSAPI) VerifyMIC(mic, token []byte) error {
	if !bytes.Equal(mic, token) {
		return errors.New("bad MIC")
	}
	return nil
}
func (fakeGSSAPI) DeleteSecContext() error { return nil }

// Issue 48, item 8: x/crypto/ssh calls the callbacks a
// PartialSuccessError names directly, so a key offered in a later step
// reached the server's own callback unchecked. Over TCP on 127.0.0.1,
// with x/crypto/ssh's client: after a first step of each kind (password,
// keyboard-interactive, none, GSSAPI, a clean key, a clean certificate, a
// verified public key, and two steps deep), a compromised key, a
// certificate of one and a certificate by a compromised CA are refused
// before the second step's callback sees them, while a clean key and a
// clean certificate log in; a compromised key or certificate as the first
// step is refused, and no later step is offered.
func TestServerConfigMultiStep(t *testing.T) {
	ids := newSSHIDs(t)
	password := ssh.Password("secret")
	keyboard := ssh.KeyboardInteractive(func(string, string, []string, []bool) ([]string, error) { return nil, nil })
	gssapi := ssh.GSSAPIWithMICAuthMethod(fakeGSSAPI{}, "host.pkbf.test")

	type firstStep struct {
		name   string
		client []ssh.AuthMethod // the methods of the first step(s)
		server func(c *ssh.ServerConfig, next *ssh.PartialSuccessError)
	}
	firsts := []firstStep{
		{"password", []ssh.AuthMethod{password}, func(c *ssh.ServerConfig, next *ssh.PartialSuccessError) {
			c.PasswordCallback = func(_ ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
				if string(pw) != "secret" {
					return nil, errors.New("wrong password")
				}
				return nil, next
			}
		}},
		{"keyboard-interactive", []ssh.AuthMethod{keyboard}, func(c *ssh.ServerConfig, next *ssh.PartialSuccessError) {
			c.KeyboardInteractiveCallback = func(ssh.ConnMetadata, ssh.KeyboardInteractiveChallenge) (*ssh.Permissions, error) {
				return nil, next
			}
		}},
		{"none", nil, func(c *ssh.ServerConfig, next *ssh.PartialSuccessError) {
			c.NoClientAuth = true
			c.NoClientAuthCallback = func(ssh.ConnMetadata) (*ssh.Permissions, error) { return nil, next }
		}},
		{"gssapi-with-mic", []ssh.AuthMethod{gssapi}, func(c *ssh.ServerConfig, next *ssh.PartialSuccessError) {
			c.GSSAPIWithMICConfig = &ssh.GSSAPIWithMICConfig{
				Server:     fakeGSSAPI{},
				AllowLogin: func(ssh.ConnMetadata, string) (*ssh.Permissions, error) { return nil, next },
			}
		}},
		{"clean key", []ssh.AuthMethod{ssh.PublicKeys(ids.clean)}, func(c *ssh.ServerConfig, next *ssh.PartialSuccessError) {
			c.PublicKeyCallback = newKeyStep(ids, next).callback
		}},
		{"clean certificate", []ssh.AuthMethod{ssh.PublicKeys(ids.certOK)}, func(c *ssh.ServerConfig, next *ssh.PartialSuccessError) {
			c.PublicKeyCallback = newKeyStep(ids, next).callback
		}},
		{"verified public key", []ssh.AuthMethod{ssh.PublicKeys(ids.clean)}, func(c *ssh.ServerConfig, next *ssh.PartialSuccessError) {
			// The first step's key is marked in its permissions; the
			// callback runs after the second step's key too, and lets
			// that one in.
			c.PublicKeyCallback = func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) {
				return &ssh.Permissions{Extensions: map[string]string{"step": "1"}}, nil
			}
			c.VerifiedPublicKeyCallback = func(_ ssh.ConnMetadata, _ ssh.PublicKey, p *ssh.Permissions, _ string) (*ssh.Permissions, error) {
				if p != nil && p.Extensions["step"] == "1" {
					return nil, next
				}
				return p, nil
			}
		}},
		{"password, then keyboard-interactive", []ssh.AuthMethod{password, keyboard}, func(c *ssh.ServerConfig, next *ssh.PartialSuccessError) {
			c.PasswordCallback = func(ssh.ConnMetadata, []byte) (*ssh.Permissions, error) {
				return nil, &ssh.PartialSuccessError{Next: ssh.ServerAuthCallbacks{
					KeyboardInteractiveCallback: func(ssh.ConnMetadata, ssh.KeyboardInteractiveChallenge) (*ssh.Permissions, error) {
						return nil, next
					},
				}}
			}
		}},
	}
	seconds := []struct {
		name string
		key  ssh.Signer
		in   bool
	}{
		{"clean key", ids.clean, true},
		{"clean certificate", ids.certOK, true},
		{"compromised key", ids.bad, false},
		{"certificate of a compromised key", ids.certBadKey, false},
		{"certificate by a compromised CA", ids.certBadCA, false},
	}
	for _, first := range firsts {
		for _, second := range seconds {
			t.Run(first.name+" then "+second.name, func(t *testing.T) {
				step := newKeyStep(ids, nil)
				// One PartialSuccessError for every connection, as a
				// server may keep it: the wrapper must not change it.
				next := &ssh.PartialSuccessError{Next: ssh.ServerAuthCallbacks{PublicKeyCallback: step.callback}}
				base := hostKey(t)
				first.server(base, next)
				addr := serveConfig(t, pkbfssh.ServerConfig(base, ids.checker()))
				for range 2 {
					if got := login(t, addr, append(first.client, ssh.PublicKeys(second.key))...); got != second.in {
						t.Fatalf("logged in %v, want %v", got, second.in)
					}
				}
				if !second.in && step.saw(second.key.PublicKey()) {
					t.Errorf("the second step's callback saw the %s", second.name)
				}
				if second.in && !step.saw(second.key.PublicKey()) {
					t.Errorf("the second step's callback did not see the %s", second.name)
				}
			})
		}
	}

	// A compromised key, or certificate, as the first step of a key then
	// a password: refused, the server's callbacks never run, and the
	// password step is never offered.
	for _, first := range []struct {
		name string
		key  ssh.Signer
	}{{"compromised key", ids.bad}, {"certificate of a compromised key", ids.certBadKey}, {"certificate by a compromised CA", ids.certBadCA}} {
		t.Run(first.name+" then password", func(t *testing.T) {
			var passwordCalls int
			var mu sync.Mutex
			step := newKeyStep(ids, &ssh.PartialSuccessError{Next: ssh.ServerAuthCallbacks{
				PasswordCallback: func(ssh.ConnMetadata, []byte) (*ssh.Permissions, error) {
					mu.Lock()
					passwordCalls++
					mu.Unlock()
					return nil, nil
				},
			}})
			base := hostKey(t)
			base.PublicKeyCallback = step.callback
			addr := serveConfig(t, pkbfssh.ServerConfig(base, ids.checker()))
			if login(t, addr, ssh.PublicKeys(first.key), password) {
				t.Fatal("logged in")
			}
			mu.Lock()
			calls := passwordCalls
			mu.Unlock()
			if step.saw(first.key.PublicKey()) || calls != 0 {
				t.Errorf("the server's callbacks ran: the key step saw it %v, the password step ran %d times", step.saw(first.key.PublicKey()), calls)
			}
			// The same key then password with a clean key: in.
			if !login(t, addr, ssh.PublicKeys(ids.clean), password) {
				t.Error("a clean key then the password: not logged in")
			}
		})
	}
}

// PublicKeyCallback alone wraps the callbacks of the step its next names:
// a clean key then a compromised one (or a certificate by a compromised
// CA), over TCP, is refused before the second step's callback sees it.
func TestPublicKeyCallbackPartialSuccess(t *testing.T) {
	ids := newSSHIDs(t)
	for _, second := range []ssh.Signer{ids.bad, ids.certBadCA} {
		step := newKeyStep(ids, nil)
		first := newKeyStep(ids, &ssh.PartialSuccessError{Next: ssh.ServerAuthCallbacks{PublicKeyCallback: step.callback}})
		base := hostKey(t)
		base.PublicKeyCallback = pkbfssh.PublicKeyCallback(ids.checker(), first.callback)
		addr := serveConfig(t, base)
		if login(t, addr, ssh.PublicKeys(ids.clean), ssh.PublicKeys(second)) {
			t.Errorf("a clean key then %s: logged in", ssh.FingerprintSHA256(second.PublicKey()))
		}
		if step.saw(second.PublicKey()) {
			t.Errorf("the second step's callback saw %s", ssh.FingerprintSHA256(second.PublicKey()))
		}
		if !login(t, addr, ssh.PublicKeys(ids.clean), ssh.PublicKeys(ids.certOK)) {
			t.Error("a clean key then a clean certificate: not logged in")
		}
	}
}

// The guard tells a partial success as x/crypto/ssh does, by the error's
// type alone: a PartialSuccessError wrapped in another error is a
// failure to x/crypto/ssh, so its Next callbacks never run. Should
// x/crypto/ssh start to unwrap it, this test fails, and the guard must
// follow.
func TestWrappedPartialSuccessIsFailure(t *testing.T) {
	ids := newSSHIDs(t)
	step := newKeyStep(ids, nil)
	base := hostKey(t)
	base.PasswordCallback = func(ssh.ConnMetadata, []byte) (*ssh.Permissions, error) {
		return nil, fmt.Errorf("step one: %w", &ssh.PartialSuccessError{Next: ssh.ServerAuthCallbacks{PublicKeyCallback: step.callback}})
	}
	addr := serveConfig(t, pkbfssh.ServerConfig(base, ids.checker()))
	if login(t, addr, ssh.Password("secret"), ssh.PublicKeys(ids.clean)) || step.saw(ids.clean.PublicKey()) {
		t.Error("x/crypto/ssh took a wrapped PartialSuccessError for a partial success")
	}
}

// Issue 48, item 9: a Go server refuses only what is compromised or what
// x/crypto/ssh refuses, not what only sshd refuses. Certificates with 257
// principals, or with a NUL byte in a principal, which ssh.CertChecker
// accepts, log in through the wrapped config over TCP; the same
// certificates of a compromised key, or by a compromised CA, are refused.
func TestServerConfigCertificatesSSHDRefuses(t *testing.T) {
	ids := newSSHIDs(t)
	many := []string{"alice"}
	for i := range 256 {
		many = append(many, fmt.Sprintf("user%d", i))
	}
	withNUL := []string{"alice", "bob\x00mallory"}
	for _, c := range []struct {
		name       string
		principals []string
	}{{"257 principals", many}, {"a NUL byte in a principal", withNUL}} {
		t.Run(c.name, func(t *testing.T) {
			step := newKeyStep(ids, nil)
			plain := hostKey(t)
			plain.PublicKeyCallback = step.callback
			base := hostKey(t)
			base.PublicKeyCallback = step.callback
			plainAddr, addr := serveConfig(t, plain), serveConfig(t, pkbfssh.ServerConfig(base, ids.checker()))
			for _, k := range []struct {
				name    string
				key, ca ssh.Signer
				in      bool
			}{
				{"clean", ids.clean, ids.cleanCA, true},
				{"compromised key", ids.bad, ids.cleanCA, false},
				{"compromised CA", ids.clean, ids.badCA, false},
			} {
				cert := certSigner(t, k.key, k.ca, c.principals...)
				if !login(t, plainAddr, ssh.PublicKeys(cert)) {
					t.Fatalf("%s: ssh.CertChecker alone refuses the certificate", k.name)
				}
				if got := login(t, addr, ssh.PublicKeys(cert)); got != k.in {
					t.Errorf("%s: logged in %v, want %v", k.name, got, k.in)
				}
			}
		})
	}
}

// Item 9, for plain keys: a security key whose application holds a NUL
// byte and an RSA key under 1024 bits, which x/crypto/ssh parses and sshd
// refuses, reach the server's callback when clean and are refused as
// compromised when the filter holds them.
func TestPublicKeyCallbackSSHDOnlyLimits(t *testing.T) {
	point, err := testkit.Signer(t, "P-256").Public().(*ecdsa.PublicKey).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	sk := ssh.Marshal(struct{ Name, Curve, Point, App string }{"sk-ecdsa-sha2-nistp256@openssh.com", "nistp256", string(point), "ssh:\x00pkbf"})
	n, err := rand.Prime(rand.Reader, 768) // only its size matters here
	if err != nil {
		t.Fatal(err)
	}
	small := ssh.Marshal(struct {
		Name string
		E, N *big.Int
	}{"ssh-rsa", big.NewInt(65537), n})
	for name, blob := range map[string][]byte{"security key with a NUL in its application": sk, "768-bit RSA key": small} {
		key, err := ssh.ParsePublicKey(blob)
		if err != nil {
			t.Fatalf("%s: x/crypto/ssh: %v", name, err)
		}
		called := false
		next := func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { called = true; return nil, nil }
		clean, _ := pkbf.New(4, 16)
		if _, err := pkbfssh.PublicKeyCallback(keycheck.New(clean, keycheck.Options{}), next)(connMeta{}, key); err != nil || !called {
			t.Errorf("%s, clean: %v (the server's callback called: %v)", name, err, called)
		}
		bad, _ := pkbf.New(4, 16)
		if _, err := keycheck.AddKey(bad, ssh.MarshalAuthorizedKey(key)); err != nil {
			t.Fatal(err)
		}
		called = false
		if _, err := pkbfssh.PublicKeyCallback(keycheck.New(bad, keycheck.Options{}), next)(connMeta{}, key); !errors.Is(err, pkbfssh.ErrCompromised) || called {
			t.Errorf("%s, compromised: %v (the server's callback called: %v), want ErrCompromised", name, err, called)
		}
	}
}
