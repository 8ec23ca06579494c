package pkbftls_test

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/pkbftls"
	"github.com/pkbf/pkbf/weakkeys"
)

// serverConfig is a Go server's config for id, asking for a client
// certificate under the test root.
func serverConfig(p *testPKI, id *identity, version uint16) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{id.tlsCert()},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.roots(),
		MinVersion:   version,
		MaxVersion:   version,
	}
}

// clientConfig is a Go client's config that trusts the test root and
// presents id, unless it is nil.
func clientConfig(p *testPKI, id *identity, version uint16) *tls.Config {
	c := &tls.Config{RootCAs: p.roots(), ServerName: "localhost", MinVersion: version, MaxVersion: version}
	if id != nil {
		c.Certificates = []tls.Certificate{id.tlsCert()}
	}
	return c
}

// outcome is what each end of a handshake saw.
type outcome struct {
	server, client error
	state          tls.ConnectionState // the client's
}

// goHandshake runs a Go server and a Go client on 127.0.0.1. The server
// writes "ok\n" after its handshake and the client reads to the end, so
// that a client whose TLS 1.3 handshake completed before the server
// refused its certificate sees the server's alert.
func goHandshake(t testing.TB, scfg, ccfg *tls.Config) outcome {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serverErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			serverErr <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		tc := tls.Server(c, scfg)
		err = tc.Handshake()
		if err == nil {
			_, err = tc.Write([]byte("ok\n"))
			tc.Close()
		}
		serverErr <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	tc := tls.Client(c, ccfg)
	var o outcome
	if o.client = tc.Handshake(); o.client == nil {
		o.state = tc.ConnectionState()
		var got []byte
		got, o.client = io.ReadAll(tc)
		if o.client == nil && string(got) != "ok\n" {
			o.client = errors.New("the server sent " + string(got))
		}
	}
	o.server = <-serverErr
	return o
}

// wantRefused checks the refusing end's error: a *KeyError for id's key
// in the certificate named where, wrapping ErrCompromised, whose message
// names the certificate and the fingerprint.
func wantRefused(t *testing.T, end string, err error, id *identity, where string) {
	t.Helper()
	var ke *pkbftls.KeyError
	if !errors.As(err, &ke) || !errors.Is(err, pkbftls.ErrCompromised) {
		t.Fatalf("%s: error %v, want a *KeyError wrapping ErrCompromised", end, err)
	}
	want := "pkbf: " + where + " (" + id.cert.Subject.String() + ") has a probably compromised key (SHA-256 of its SPKI " + id.fingerprint() + ")"
	if err.Error() != want || ke.Where != where || ke.Verdict.Key.Fingerprint != id.fingerprint() || ke.Certificate.Subject.String() != id.cert.Subject.String() {
		t.Errorf("%s: error %q (where %q), want %q", end, err, ke.Where, want)
	}
}

// wantAlert checks the refused end's error: the bad_certificate alert.
func wantAlert(t *testing.T, end string, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "remote error: tls: bad certificate") {
		t.Errorf("%s: error %v, want the peer's bad_certificate alert", end, err)
	}
}

var versions = map[string]uint16{"TLS 1.2": tls.VersionTLS12, "TLS 1.3": tls.VersionTLS13}

// A Go server with the hook refuses a client whose certificate, or an
// intermediate it sends, has a compromised key, and a Go client with the
// hook such a server, in TLS 1.2 and 1.3, for RSA, ECDSA P-256 and
// Ed25519 keys; the refused end gets the bad_certificate alert. Clean
// peers complete. The server follows its filter as a *pkbf.Live, the
// client holds a *pkbf.Filter.
func TestHandshake(t *testing.T) {
	p := pki(t)
	live, filter := openFilters(t)
	type tc struct {
		name          string
		client        *identity // presented by the client; the server presents clean p256 then
		server        *identity // presented by the server; the client presents clean p256 then
		refused       *identity // the key the refusal names, nil for a clean handshake
		where         string
		serverRefuses bool
	}
	var cases []tc
	for _, kt := range keyTypes {
		cases = append(cases,
			tc{name: "server refuses a compromised " + kt + " client", client: p.bad[kt], refused: p.bad[kt], where: "peer certificate 0", serverRefuses: true},
			tc{name: "client refuses a compromised " + kt + " server", server: p.bad[kt], refused: p.bad[kt], where: "peer certificate 0"},
			tc{name: "clean " + kt + " client", client: p.clean[kt]},
			tc{name: "clean " + kt + " server", server: p.clean[kt]},
		)
	}
	cases = append(cases,
		tc{name: "server refuses a client under a compromised intermediate", client: p.underBadInter, refused: p.badInter, where: "peer certificate 1", serverRefuses: true},
		tc{name: "client refuses a server under a compromised intermediate", server: p.underBadInter, refused: p.badInter, where: "peer certificate 1"},
	)
	for vname, v := range versions {
		for _, c := range cases {
			t.Run(vname+"/"+c.name, func(t *testing.T) {
				cid, sid := c.client, c.server
				if cid == nil {
					cid = p.clean["p256"]
				}
				if sid == nil {
					sid = p.clean["p256"]
				}
				scfg, ccfg := serverConfig(p, sid, v), clientConfig(p, cid, v)
				pkbftls.Install(scfg, check(live))
				pkbftls.Install(ccfg, check(filter))
				o := goHandshake(t, scfg, ccfg)
				switch {
				case c.refused == nil:
					if o.server != nil || o.client != nil {
						t.Fatalf("a clean handshake failed: server %v, client %v", o.server, o.client)
					}
				case c.serverRefuses:
					wantRefused(t, "server", o.server, c.refused, c.where)
					wantAlert(t, "client", o.client)
				default:
					wantRefused(t, "client", o.client, c.refused, c.where)
					wantAlert(t, "server", o.server)
				}
			})
		}
	}
}

// A peer that presents no certificate is for ClientAuth to judge: with
// RequestClientCert, the hook lets it through.
func TestNoPeerCertificate(t *testing.T) {
	p := pki(t)
	live, _ := liveFilter(t)
	scfg := serverConfig(p, p.clean["p256"], tls.VersionTLS13)
	scfg.ClientAuth = tls.RequestClientCert
	pkbftls.Install(scfg, check(live))
	if o := goHandshake(t, scfg, clientConfig(p, nil, tls.VersionTLS13)); o.server != nil || o.client != nil {
		t.Fatalf("a client without a certificate: server %v, client %v", o.server, o.client)
	}
}

// What the filter cannot answer for refuses the handshake: a filter file
// cut short under the server, a key pkbf cannot read, no filter at all.
func TestFailsClosed(t *testing.T) {
	p := pki(t)
	clean := p.clean["p256"]
	state := func(certs ...*x509.Certificate) tls.ConnectionState {
		return tls.ConnectionState{PeerCertificates: certs}
	}
	junk := &x509.Certificate{Subject: pkix.Name{CommonName: "junk key"}, RawSubjectPublicKeyInfo: []byte("not a key")}
	live, _ := liveFilter(t)

	t.Run("filter file cut short", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "f.pkbf")
		writeFilter(t, path, p.compromised()...)
		f, err := pkbf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := os.Truncate(path, 0); err != nil {
			if runtime.GOOS == "windows" { // a mapped file cannot be cut short there
				t.Skip(err)
			}
			t.Fatal(err)
		}
		scfg := serverConfig(p, clean, tls.VersionTLS13)
		pkbftls.Install(scfg, check(f))
		o := goHandshake(t, scfg, clientConfig(p, clean, tls.VersionTLS13))
		var ke *pkbftls.KeyError
		if !errors.As(o.server, &ke) || !errors.Is(o.server, pkbf.ErrFileChanged) || errors.Is(o.server, pkbftls.ErrCompromised) ||
			!strings.HasPrefix(o.server.Error(), "pkbf: peer certificate 0 (CN=clean p256,O=pkbf tests): the key could not be checked, so the peer is refused: filter file "+path) {
			t.Errorf("server: %v, want a refusal wrapping ErrFileChanged naming the certificate and the file", o.server)
		}
		wantAlert(t, "client", o.client)
	})
	t.Run("key pkbf cannot read", func(t *testing.T) {
		err := pkbftls.VerifyConnection(check(live))(state(clean.cert, junk))
		var ke *pkbftls.KeyError
		if !errors.As(err, &ke) || !errors.Is(err, keys.ErrInvalidKey) || ke.Where != "peer certificate 1" || !strings.HasPrefix(err.Error(), "pkbf: peer certificate 1 (CN=junk key): the key could not be checked") {
			t.Errorf("error %v, want a refusal of certificate 1 wrapping keys.ErrInvalidKey", err)
		}
	})
}

// A config cannot be made without its check: VerifyConnection, Install
// and Config panic at once on a nil KeyChecker, and keycheck.New on a
// nil filter (an open whose error was lost), where a hook made anyway
// would leave every peer unchecked.
func TestNoKeyChecker(t *testing.T) {
	var live *pkbf.Live
	var c *keycheck.Checker
	for name, make := range map[string]func(){
		"VerifyConnection(nil)":                func() { pkbftls.VerifyConnection(nil) },
		"Install(cfg, nil)":                    func() { pkbftls.Install(&tls.Config{}, nil) },
		"Config(nil, nil)":                     func() { pkbftls.Config(nil, nil) },
		"Config(nil, a nil *keycheck.Checker)": func() { pkbftls.Config(nil, c) },
		"keycheck.New(a nil *pkbf.Live)":       func() { keycheck.New(live, keycheck.Options{}) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "no KeyChecker") && !strings.Contains(fmt.Sprint(r), "without a filter") {
					t.Errorf("%s: panic %v, want one saying there is no KeyChecker or filter", name, r)
				}
			}()
			make()
		}()
	}
}

// Certificates of the verified chains that the peer did not present (a
// platform verifier's intermediates) are checked; each chain's trust
// anchor is not. A certificate presented outside the chains is refused
// when its key is compromised, not when pkbf cannot read it.
func TestVerifiedChains(t *testing.T) {
	p := pki(t)
	live, _ := liveFilter(t)
	leaf := p.clean["p256"].cert
	junk := &x509.Certificate{Raw: []byte("junk"), Subject: pkix.Name{CommonName: "junk key"}, RawSubjectPublicKeyInfo: []byte("not a key")}
	for _, c := range []struct {
		name  string
		cs    tls.ConnectionState
		where string // "" for a pass
	}{
		{"intermediate the peer did not send", tls.ConnectionState{
			PeerCertificates: []*x509.Certificate{leaf},
			VerifiedChains:   [][]*x509.Certificate{{leaf, p.inter.cert, p.root.cert}, {leaf, p.badInter.cert, p.root.cert}},
		}, "certificate 1 of verified chain 1"},
		{"compromised trust anchor", tls.ConnectionState{
			PeerCertificates: []*x509.Certificate{leaf},
			VerifiedChains:   [][]*x509.Certificate{{leaf, p.inter.cert, p.badInter.cert}},
		}, ""},
		{"empty chain", tls.ConnectionState{
			PeerCertificates: []*x509.Certificate{leaf},
			VerifiedChains:   [][]*x509.Certificate{{}},
		}, ""},
		// Issue 48, item 10: what the peer presents beside its chains.
		{"key pkbf cannot read, outside the verified chains", tls.ConnectionState{
			PeerCertificates: []*x509.Certificate{leaf, p.inter.cert, junk},
			VerifiedChains:   [][]*x509.Certificate{{leaf, p.inter.cert, p.root.cert}},
		}, ""},
		{"compromised key, outside the verified chains", tls.ConnectionState{
			PeerCertificates: []*x509.Certificate{leaf, p.inter.cert, p.badInter.cert},
			VerifiedChains:   [][]*x509.Certificate{{leaf, p.inter.cert, p.root.cert}},
		}, "peer certificate 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := pkbftls.VerifyConnection(check(live))(c.cs)
			if c.where == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantRefused(t, "hook", err, p.badInter, c.where)
		})
	}
}

// Install keeps the config's own VerifyConnection, which runs first, and
// checks the configs a server's GetConfigForClient returns.
func TestInstall(t *testing.T) {
	p := pki(t)
	live, _ := liveFilter(t)
	bad := p.bad["ed25519"]
	own := errors.New("own check refused")

	t.Run("own check refuses", func(t *testing.T) {
		scfg := serverConfig(p, p.clean["p256"], tls.VersionTLS13)
		scfg.VerifyConnection = func(tls.ConnectionState) error { return own }
		pkbftls.Install(scfg, check(live))
		if o := goHandshake(t, scfg, clientConfig(p, p.clean["rsa"], tls.VersionTLS13)); !errors.Is(o.server, own) {
			t.Errorf("server: %v, want the config's own error", o.server)
		}
	})
	t.Run("own check passes, the key is refused", func(t *testing.T) {
		ran := 0
		scfg := serverConfig(p, p.clean["p256"], tls.VersionTLS13)
		scfg.VerifyConnection = func(tls.ConnectionState) error { ran++; return nil }
		pkbftls.Install(scfg, check(live))
		o := goHandshake(t, scfg, clientConfig(p, bad, tls.VersionTLS13))
		wantRefused(t, "server", o.server, bad, "peer certificate 0")
		if ran != 1 {
			t.Errorf("the config's own check ran %d times", ran)
		}
	})
	t.Run("GetConfigForClient", func(t *testing.T) {
		inner := serverConfig(p, p.clean["p256"], tls.VersionTLS13)
		scfg := &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return inner, nil }}
		pkbftls.Install(scfg, check(live))
		o := goHandshake(t, scfg, clientConfig(p, bad, tls.VersionTLS13))
		wantRefused(t, "server", o.server, bad, "peer certificate 0")
		if inner.VerifyConnection != nil {
			t.Error("Install changed the config GetConfigForClient returned")
		}
		if o := goHandshake(t, scfg, clientConfig(p, p.clean["p256"], tls.VersionTLS13)); o.server != nil || o.client != nil {
			t.Errorf("a clean client: server %v, client %v", o.server, o.client)
		}
	})
}

// F1 of the pkbftls review: a VerifyConnection or GetConfigForClient set
// on a config after Install replaced the check. Config returns a copy, so
// the same changes made to the base config afterwards leave the check in
// place.
func TestConfig(t *testing.T) {
	p := pki(t)
	live, _ := liveFilter(t)
	bad := p.bad["ed25519"]
	for _, c := range []struct {
		name   string
		change func(base *tls.Config)
	}{
		{"base unchanged", func(*tls.Config) {}},
		{"VerifyConnection set on the base afterwards", func(base *tls.Config) {
			base.VerifyConnection = func(tls.ConnectionState) error { return nil }
		}},
		{"GetConfigForClient set on the base afterwards", func(base *tls.Config) {
			inner := serverConfig(p, p.clean["p256"], tls.VersionTLS13)
			base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) { return inner, nil }
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := serverConfig(p, p.clean["p256"], tls.VersionTLS13)
			cfg := pkbftls.Config(base, check(live))
			c.change(base)
			o := goHandshake(t, cfg, clientConfig(p, bad, tls.VersionTLS13))
			wantRefused(t, "server", o.server, bad, "peer certificate 0")
			if o := goHandshake(t, cfg, clientConfig(p, p.clean["rsa"], tls.VersionTLS13)); o.server != nil || o.client != nil {
				t.Errorf("a clean client: server %v, client %v", o.server, o.client)
			}
		})
	}
	t.Run("nil base", func(t *testing.T) {
		cfg := pkbftls.Config(nil, check(live))
		if cfg == nil || cfg.VerifyConnection == nil {
			t.Fatalf("Config(nil, f) = %+v, want a config with the check", cfg)
		}
		if err := cfg.VerifyConnection(p.cleanState("p256")); err != nil {
			t.Errorf("a clean chain: %v", err)
		}
	})
}

// A session resumed after the filter learned the client's key is refused:
// the hook runs on resumption, with the certificates of the session, and
// a Live filter answers from the file renamed over its path.
func TestResumedSessionChecked(t *testing.T) {
	p := pki(t)
	live, path := liveFilter(t)
	client := p.clean["rsa"]
	for vname, v := range versions {
		t.Run(vname, func(t *testing.T) {
			writeFilter(t, path, p.compromised()...)
			if err := live.Reload(); err != nil {
				t.Fatal(err)
			}
			scfg := serverConfig(p, p.clean["p256"], v)
			pkbftls.Install(scfg, check(live))
			ccfg := clientConfig(p, client, v)
			ccfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
			if o := goHandshake(t, scfg, ccfg); o.server != nil || o.client != nil {
				t.Fatalf("first handshake: server %v, client %v", o.server, o.client)
			}
			if o := goHandshake(t, scfg, ccfg); o.server != nil || o.client != nil || !o.state.DidResume {
				t.Fatalf("second handshake: server %v, client %v, resumed %v", o.server, o.client, o.state.DidResume)
			}
			writeFilter(t, path, append(p.compromised(), client)...)
			if err := live.Reload(); err != nil {
				t.Fatal(err)
			}
			o := goHandshake(t, scfg, ccfg)
			wantRefused(t, "server", o.server, client, "peer certificate 0")
			wantAlert(t, "client", o.client)
		})
	}
}

// The hook allocates nothing for a clean chain, with either kind of
// filter.
func TestHookAllocs(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("allocation counts mean nothing under the race detector")
	}
	p := pki(t)
	live, filter := openFilters(t)
	for _, kt := range keyTypes {
		cs := p.cleanState(kt)
		for name, f := range map[string]keycheck.Querier{"Live": live, "Filter": filter} {
			hook := pkbftls.VerifyConnection(check(f))
			if n := testing.AllocsPerRun(100, func() {
				if err := hook(cs); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("%s, %s chain: %.0f allocations a handshake", name, kt, n)
			}
		}
	}
}

// The subject a refusal names is the peer's text: quoted when it holds
// what is not printable, cut when long.
func TestErrorSubject(t *testing.T) {
	v := keycheck.Verdict{Probably: true, Key: keycheck.Key{Fingerprint: "ff"}}
	for _, c := range []struct {
		name string
		cn   string
		want string
	}{
		{"plain", "client.example", "(CN=client.example) has"},
		{"empty subject", "", "(empty subject) has"},
		{"line feed", "a\nb", `("CN=a\nb") has`},
		{"long", strings.Repeat("x", 300), "(CN=" + strings.Repeat("x", 253) + "...) has"},
		// F3 of the pkbftls review: the cut fell inside a character,
		// leaving a stray byte unquoted, and the escape sequence past the
		// cut went unnoticed.
		{"cut inside a character", strings.Repeat("é", 127) + "\x1b[2J", `("CN=` + strings.Repeat("é", 126) + `"...) has`},
		{"long, not printable past the cut", strings.Repeat("x", 300) + "\x1b[2J", `("CN=` + strings.Repeat("x", 253) + `"...) has`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cert := &x509.Certificate{}
			if c.cn != "" {
				cert.Subject.CommonName = c.cn
			}
			msg := (&pkbftls.KeyError{Where: "peer certificate 0", Certificate: cert, Verdict: v}).Error()
			if !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 0 || !utf8.ValidString(msg) {
				t.Errorf("%q, want it to contain %q", msg, c.want)
			}
		})
	}
}

// TestHandshakeWeak: with a KeyChecker that makes the weak-key checks, a
// server refuses a client whose key the filter does not hold but the
// checks refuse (Ed25519, which the Baseline Requirements do not allow):
// a *KeyError wrapping ErrWeak, not ErrCompromised, whose message gives
// the finding; a compromised key is still ErrCompromised.
func TestHandshakeWeak(t *testing.T) {
	p := pki(t)
	live, _ := openFilters(t)
	weak, err := weakkeys.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		client *identity
		want   error
		msg    string
	}{
		{p.clean["ed25519"], pkbftls.ErrWeak, ") has a key to refuse (SHA-256 of its SPKI " + p.clean["ed25519"].fingerprint() + "): algorithm: Ed25519 keys are not allowed"},
		{p.bad["ed25519"], pkbftls.ErrCompromised, "probably compromised: a filter of compromised keys holds it; algorithm: Ed25519"},
	} {
		scfg := serverConfig(p, p.clean["p256"], tls.VersionTLS13)
		pkbftls.Install(scfg, keycheck.New(live, keycheck.Options{Weak: weak}))
		o := goHandshake(t, scfg, clientConfig(p, tc.client, tls.VersionTLS13))
		var ke *pkbftls.KeyError
		if !errors.As(o.server, &ke) || !errors.Is(o.server, tc.want) || errors.Is(o.server, pkbftls.ErrWeak) == errors.Is(o.server, pkbftls.ErrCompromised) ||
			!strings.Contains(o.server.Error(), tc.msg) || ke.Where != "peer certificate 0" {
			t.Errorf("server: %v, want a *KeyError wrapping %v with %q", o.server, tc.want, tc.msg)
		}
		wantAlert(t, "client", o.client)
	}
}
