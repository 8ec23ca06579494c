package pkbftls_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/asn1"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/pkbftls"
)

// The real peers: openssl s_client and curl against a Go mTLS server with
// the hook, a Go client with the hook against openssl s_server. These
// tests skip where a tool is missing, unless PKBF_REQUIRE_TLS_PEERS is set
// (as .ci/run sets it, having installed them).
func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("PKBF_REQUIRE_TLS_PEERS") != "" {
				t.Fatalf("%s is missing (apt-get install openssl curl)", tool)
			}
			t.Skipf("%s is missing (apt-get install openssl curl): this test runs it as the TLS peer", tool)
		}
	}
}

// goServer is a Go mTLS server on 127.0.0.1 that answers every request
// with "hello from pkbftls\n" and reports each handshake's error.
type goServer struct {
	addr string
	errs chan error
}

const greeting = "hello from pkbftls\n"

func startGoServer(t *testing.T, cfg *tls.Config) *goServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &goServer{addr: ln.Addr().String(), errs: make(chan error, 16)}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				tc := tls.Server(c, cfg)
				err := tc.Handshake()
				s.errs <- err
				if err != nil {
					// A TLS 1.3 client sends its request before it reads
					// the server's verdict on its certificate: closed with
					// the request unread, the connection would be reset,
					// and the client could lose the alert. Drain it first.
					c.(*net.TCPConn).CloseWrite()
					io.Copy(io.Discard, c)
					return
				}
				r := bufio.NewReader(tc)
				for { // the request's head
					line, err := r.ReadString('\n')
					if err != nil || line == "\r\n" || line == "\n" {
						break
					}
				}
				tc.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: " + strconv.Itoa(len(greeting)) + "\r\nConnection: close\r\n\r\n" + greeting))
				tc.Close()
			})
		}
	})
	return s
}

// handshakeErr returns the error of the server's next handshake.
func (s *goServer) handshakeErr(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.errs:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the server saw no handshake")
		return nil
	}
}

// run runs a tool with stdin, and returns its exit error and its output
// (stdout and stderr).
func run(t *testing.T, stdin string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not finish: %s", name, out.String())
		return "", nil
	}
}

// The words OpenSSL 3.0 reports a bad_certificate alert it received with:
// "error:0A000412:SSL routines:ssl3_read_bytes:sslv3 alert bad
// certificate:...:SSL alert number 42" from s_client and s_server, and
// "curl: (35) OpenSSL/3.0.19: error:0A000412:SSL routines::sslv3 alert
// bad certificate" from curl (exit 35 in TLS 1.2, where the client learns
// of it in the handshake; 56, in SSL_read, in TLS 1.3, where the server
// judges the client's certificate after the client's handshake is over).
const (
	opensslAlert   = "alert bad certificate"
	opensslAlertNo = "SSL alert number 42"
)

// A peerCase is a peer's identity, and the key a refusal of it names (nil
// for a clean one) in the certificate where says.
type peerCase struct {
	name        string
	id, refused *identity
	where       string
}

// peerCases are the peers of the real tools' tests: a compromised and a
// clean identity of each key type, and a clean one under a compromised
// intermediate.
func peerCases(p *testPKI) []peerCase {
	var cases []peerCase
	for _, kt := range keyTypes {
		cases = append(cases,
			peerCase{"compromised " + kt, p.bad[kt], p.bad[kt], "peer certificate 0"},
			peerCase{"clean " + kt, p.clean[kt], nil, ""})
	}
	return append(cases, peerCase{"compromised intermediate", p.underBadInter, p.badInter, "peer certificate 1"})
}

// openssl s_client and curl, presenting RSA, P-256 and Ed25519 client
// certificates with their intermediate, against a Go mTLS server with the
// hook, in TLS 1.2 and 1.3: a compromised key, the client's or its
// intermediate's, fails the handshake with the bad_certificate alert on
// the client and a *KeyError naming the fingerprint on the server; a clean
// one gets the server's answer.
func TestRealClients(t *testing.T) {
	requireTools(t, "openssl", "curl")
	p := pki(t)
	live, _ := liveFilter(t)
	dir := t.TempDir()
	rootPEM := dir + "/root.pem"
	writePEM(t, rootPEM, "CERTIFICATE", p.root.chain...)
	cases := peerCases(p)

	clients := []struct {
		name string
		args func(addr, cert, chain, full, key string, tls13 bool) (string, []string)
	}{
		{"openssl s_client", func(addr, cert, chain, full, key string, tls13 bool) (string, []string) {
			v := "-tls1_2"
			if tls13 {
				v = "-tls1_3"
			}
			return "openssl", []string{"s_client", "-connect", addr, "-servername", "localhost", "-CAfile", rootPEM,
				"-verify_return_error", "-cert", cert, "-cert_chain", chain, "-key", key, v, "-ign_eof"}
		}},
		{"curl", func(addr, cert, chain, full, key string, tls13 bool) (string, []string) {
			v := []string{"--tlsv1.2", "--tls-max", "1.2"}
			if tls13 {
				v = []string{"--tlsv1.3"}
			}
			return "curl", append([]string{"-sS", "--max-time", "20", "--cacert", rootPEM, "--cert", full, "--key", key, "https://" + addr + "/"}, v...)
		}},
	}
	for vname, v := range versions {
		scfg := serverConfig(p, p.clean["p256"], v)
		pkbftls.Install(scfg, check(live))
		srv := startGoServer(t, scfg)
		for _, cl := range clients {
			for _, c := range cases {
				t.Run(vname+"/"+cl.name+"/"+c.name, func(t *testing.T) {
					cert, chain, full, key := c.id.files(t, dir)
					name, args := cl.args(srv.addr, cert, chain, full, key, v == tls.VersionTLS13)
					out, err := run(t, "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n", name, args...)
					serverErr := srv.handshakeErr(t)
					if c.refused == nil {
						if err != nil || serverErr != nil || !strings.Contains(out, greeting) {
							t.Fatalf("a clean client: %s: %v, server %v:\n%s", name, err, serverErr, out)
						}
						return
					}
					wantRefused(t, "server", serverErr, c.refused, c.where)
					wantExit, wantText := 1, opensslAlertNo
					if name == "curl" {
						wantExit, wantText = 35, "curl: (35)"
						if v == tls.VersionTLS13 {
							wantExit, wantText = 56, "curl: (56) OpenSSL SSL_read"
						}
					}
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.ExitCode() != wantExit || !strings.Contains(out, opensslAlert) || !strings.Contains(out, wantText) || strings.Contains(out, greeting) {
						t.Errorf("%s (%v, want exit %d) did not report the alert:\n%s", name, err, wantExit, out)
					}
				})
			}
		}
	}
}

// A Go client with the hook against openssl s_server presenting RSA,
// P-256 and Ed25519 server certificates with their intermediate: a
// compromised key, the server's or its intermediate's, fails the
// handshake with a *KeyError naming the fingerprint on the client and the
// bad_certificate alert in s_server's output; a clean one completes.
func TestRealServer(t *testing.T) {
	requireTools(t, "openssl")
	p := pki(t)
	live, _ := liveFilter(t)
	dir := t.TempDir()
	cases := peerCases(p)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cert, chain, _, key := c.id.files(t, dir)
			addr, out := startSServer(t, "-cert", cert, "-cert_chain", chain, "-key", key)
			for vname, v := range versions {
				ccfg := clientConfig(p, nil, v)
				pkbftls.Install(ccfg, check(live))
				alerts := strings.Count(out.String(), opensslAlertNo)
				conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, ccfg)
				if err == nil {
					conn.Close()
				}
				if c.refused == nil {
					if err != nil {
						t.Fatalf("%s: a clean server: %v\n%s", vname, err, out.String())
					}
					continue
				}
				wantRefused(t, vname+" client", err, c.refused, c.where)
				if !out.waitFor(opensslAlertNo, alerts+1) {
					t.Errorf("%s: s_server did not report the alert:\n%s", vname, out.String())
				}
			}
		})
	}
}

// syncBuffer is a process's output, read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits up to 10 s for the output to hold n copies of word.
func (s *syncBuffer) waitFor(word string, n int) bool {
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(10 * time.Millisecond) {
		if strings.Count(s.String(), word) >= n {
			return true
		}
	}
	return false
}

// startSServer starts openssl s_server on a free port of 127.0.0.1 with
// args, and returns its address and output; it is stopped when the test
// ends.
func startSServer(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	cmd := exec.Command("openssl", append([]string{"s_server", "-accept", "127.0.0.1:0"}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	stdin, err := cmd.StdinPipe() // s_server stops at the end of its input
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	if !out.waitFor("ACCEPT 127.0.0.1:", 1) {
		t.Fatalf("s_server did not start:\n%s", out.String())
	}
	_, rest, _ := strings.Cut(out.String(), "ACCEPT ")
	addr, _, _ := strings.Cut(rest, "\n")
	if _, _, err := net.SplitHostPort(addr); err != nil {
		t.Fatalf("s_server's address %q: %v", addr, errors.Unwrap(err))
	}
	return addr, out
}

// unrelatedCerts are certificates a peer may present beside its chain,
// which no verified chain holds: a self-signed ML-DSA-44 one (circl), a
// second whose key the filter holds, and one of a key of an algorithm
// pkbf does not know (OID 1.3.6.1.4.1.55555.1, with a signature of junk).
type unrelatedCerts struct {
	mldsa, badMLDSA, unknown []byte
	badMLDSASPKI             []byte
	filter                   *pkbf.Filter // holds badMLDSA's key and the test PKI's compromised keys
}

func newUnrelatedCerts(t *testing.T, p *testPKI) *unrelatedCerts {
	u := &unrelatedCerts{}
	u.mldsa, _ = mldsa44Cert(t, "ML-DSA-44 stranger")
	u.badMLDSA, u.badMLDSASPKI = mldsa44Cert(t, "compromised ML-DSA-44 stranger")
	unknownSPKI := rawSPKI(t, asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 55555, 1}, bytes.Repeat([]byte{7}, 32))
	u.unknown = rawCertificate(t, "unknown algorithm", unknownSPKI, asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 2}, func([]byte) []byte { return []byte("not a signature") })
	w, err := pkbf.New(12, 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, spki := range [][]byte{u.badMLDSASPKI, p.badInter.spki(), p.bad["p256"].spki()} {
		if _, err := keycheck.AddKey(w, spki); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "f.pkbf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if u.filter, err = pkbf.Open(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.filter.Close() })
	return u
}

// secLevel0 lets OpenSSL present a certificate whose key it cannot read:
// at its default security level it refuses to ("ca key too small").
const secLevel0 = "DEFAULT:@SECLEVEL=0"

// Issue 48, item 10: the hook judges the certificates that certify the
// peer. openssl s_server presents its clean certificate and intermediate,
// then a certificate no chain uses; a Go client with the hook, verifying
// the chain, completes the handshake when that certificate's key is of an
// algorithm pkbf does not know or a clean ML-DSA-44 key (both refused
// before: pkbf knew no encoding of them), and refuses it when the filter
// holds its key. With verification the caller's (InsecureSkipVerify),
// every certificate presented may be the one trusted: the unknown key is
// refused, the clean ML-DSA-44 one passes, the compromised one is refused.
func TestRealServerUnrelatedCertificates(t *testing.T) {
	requireTools(t, "openssl")
	p := pki(t)
	u := newUnrelatedCerts(t, p)
	dir := t.TempDir()
	cert, _, _, key := p.clean["p256"].files(t, dir)
	for _, c := range []struct {
		name        string
		extra       []byte
		skipVerify  bool
		refusedWith error // nil for a completed handshake
	}{
		{"unknown algorithm, verified", u.unknown, false, nil},
		{"clean ML-DSA-44, verified", u.mldsa, false, nil},
		{"compromised ML-DSA-44, verified", u.badMLDSA, false, pkbftls.ErrCompromised},
		{"unknown algorithm, verification the caller's", u.unknown, true, keys.ErrUnsupportedKey},
		{"clean ML-DSA-44, verification the caller's", u.mldsa, true, nil},
		{"compromised ML-DSA-44, verification the caller's", u.badMLDSA, true, pkbftls.ErrCompromised},
	} {
		t.Run(c.name, func(t *testing.T) {
			chain := filepath.Join(dir, sanitize(c.name)+".chain")
			writePEM(t, chain, "CERTIFICATE", p.inter.cert.Raw, c.extra)
			addr, out := startSServer(t, "-cert", cert, "-cert_chain", chain, "-key", key, "-cipher", secLevel0)
			for vname, v := range versions {
				ccfg := clientConfig(p, nil, v)
				ccfg.InsecureSkipVerify = c.skipVerify
				pkbftls.Install(ccfg, check(u.filter))
				conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, ccfg)
				if err == nil {
					if n := len(conn.ConnectionState().PeerCertificates); n != 3 {
						t.Errorf("%s: s_server presented %d certificates, want 3", vname, n)
					}
					conn.Close()
				}
				if c.refusedWith == nil {
					if err != nil {
						t.Errorf("%s: %v\n%s", vname, err, out.String())
					}
					continue
				}
				var ke *pkbftls.KeyError
				if !errors.As(err, &ke) || !errors.Is(err, c.refusedWith) || ke.Where != "peer certificate 2" {
					t.Errorf("%s: %v, want a refusal of peer certificate 2 wrapping %v", vname, err, c.refusedWith)
				}
			}
		})
	}
}

// The same from the other side: openssl s_client presents its clean
// certificate and intermediate, then an unrelated certificate, to a Go
// mTLS server with the hook: one of an unknown algorithm, or a clean
// ML-DSA-44 one, does not refuse the client; a compromised ML-DSA-44 one
// does, and s_client reports the alert.
func TestRealClientUnrelatedCertificates(t *testing.T) {
	requireTools(t, "openssl")
	p := pki(t)
	u := newUnrelatedCerts(t, p)
	dir := t.TempDir()
	rootPEM := filepath.Join(dir, "root.pem")
	writePEM(t, rootPEM, "CERTIFICATE", p.root.chain...)
	cert, _, _, key := p.clean["rsa"].files(t, dir)
	scfg := serverConfig(p, p.clean["p256"], tls.VersionTLS12)
	pkbftls.Install(scfg, check(u.filter))
	srv := startGoServer(t, scfg)
	for _, c := range []struct {
		name    string
		extra   []byte
		refused bool
	}{
		{"unknown algorithm", u.unknown, false},
		{"clean ML-DSA-44", u.mldsa, false},
		{"compromised ML-DSA-44", u.badMLDSA, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			chain := filepath.Join(dir, sanitize(c.name)+".chain")
			writePEM(t, chain, "CERTIFICATE", p.inter.cert.Raw, c.extra)
			out, err := run(t, "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n", "openssl", "s_client", "-connect", srv.addr, "-servername", "localhost",
				"-CAfile", rootPEM, "-verify_return_error", "-cert", cert, "-cert_chain", chain, "-key", key, "-tls1_2", "-ign_eof", "-cipher", secLevel0)
			serverErr := srv.handshakeErr(t)
			if !c.refused {
				// OpenSSL 3.0 cannot read the key of the certificate it
				// presents, and s_client, its handshake complete, stops on
				// that error (exit 1) before it sends the request, as it
				// does against openssl s_server: the server's verdict is
				// what is judged here.
				if serverErr != nil || !strings.Contains(out, "Verify return code: 0 (ok)") {
					t.Fatalf("s_client: %v, server %v:\n%s", err, serverErr, out)
				}
				return
			}
			var ke *pkbftls.KeyError
			if !errors.As(serverErr, &ke) || !errors.Is(serverErr, pkbftls.ErrCompromised) || ke.Where != "peer certificate 2" || ke.Verdict.Key.Fingerprint != keys.Fingerprint(u.badMLDSASPKI) {
				t.Errorf("server: %v, want peer certificate 2 refused as compromised", serverErr)
			}
			if err == nil || !strings.Contains(out, opensslAlertNo) {
				t.Errorf("s_client did not report the alert (%v):\n%s", err, out)
			}
		})
	}
}
