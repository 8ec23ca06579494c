package stepca

import (
	"bytes"
	"crypto"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/weakkeys"
)

// fixture is a filter holding the compromised keys, and keys it does not
// hold.
type fixture struct {
	filter                               []byte // the filter file's bytes
	cleanP256, cleanRSA, cleanEd25519    crypto.PublicKey
	pwnedRSA, pwnedP256, pwnedEd25519    crypto.PublicKey
	pwnedP256Compressed                  []byte // an SPKI with the point compressed
	pwnedP256Fingerprint, pwnedRSAFinger string
}

var (
	fixtureOnce sync.Once
	theFixture  fixture
	fixtureErr  error
)

func spkiOf(t testing.TB, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// newFixture makes the keys and the filter once per test binary run: RSA
// key generation takes a while.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	fixtureOnce.Do(func() {
		fx := &theFixture
		gen := func(kind string) crypto.PublicKey { return testkit.Signer(t, kind).Public() }
		fx.cleanP256, fx.cleanRSA, fx.cleanEd25519 = gen("P-256"), gen("RSA"), gen("Ed25519")
		fx.pwnedRSA, fx.pwnedP256, fx.pwnedEd25519 = gen("RSA"), gen("P-256"), gen("Ed25519")
		w, err := pkbf.New(8, 20)
		if err != nil {
			fixtureErr = err
			return
		}
		for _, pub := range []crypto.PublicKey{fx.pwnedRSA, fx.pwnedP256, fx.pwnedEd25519} {
			der, _ := x509.MarshalPKIXPublicKey(pub)
			if _, err := keycheck.AddKey(w, der); err != nil {
				fixtureErr = err
				return
			}
		}
		der, _ := x509.MarshalPKIXPublicKey(fx.pwnedP256)
		encodings, err := keys.Encodings(der)
		if err != nil {
			fixtureErr = err
			return
		}
		for _, e := range encodings {
			if len(e) == 59 { // 26 bytes of algorithm and curve, a 33-byte point
				fx.pwnedP256Compressed = e
			}
		}
		fx.pwnedP256Fingerprint = keys.Fingerprint(der)
		rsaDER, _ := x509.MarshalPKIXPublicKey(fx.pwnedRSA)
		fx.pwnedRSAFinger = keys.Fingerprint(rsaDER)
		var buf bytes.Buffer
		_, fixtureErr = w.WriteTo(&buf)
		fx.filter = buf.Bytes()
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	if theFixture.filter == nil {
		t.Fatal("the fixture failed in an earlier test")
	}
	if theFixture.pwnedP256Compressed == nil {
		t.Fatal("keys.Encodings gave no compressed form of a P-256 key")
	}
	return &theFixture
}

// openLive writes the fixture's filter into the test's directory and
// follows it.
func openLive(t testing.TB, fx *fixture) *pkbf.Live {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pwned.pkbf")
	if err := os.WriteFile(path, fx.filter, 0o644); err != nil {
		t.Fatal(err)
	}
	live, err := pkbf.OpenLive(path, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	return live
}

// checker is the KeyChecker over live a Handler is given.
func checker(live *pkbf.Live) *keycheck.Checker { return keycheck.New(live, keycheck.Options{}) }

// x509Body is a webhook request body as step-ca v0.30.2 sends it for an
// X.509 certificate (webhook.RequestBody), with the fields a webhook
// reads.
func x509Body(field string, spki []byte) []byte {
	b, _ := json.Marshal(map[string]any{
		"timestamp": "2026-01-01T00:00:00Z",
		field: map[string]any{
			"subject":            map[string]any{"commonName": "host.example.com"},
			"dnsNames":           []string{"host.example.com"},
			"publicKey":          spki,
			"publicKeyAlgorithm": "ECDSA",
			"notBefore":          "2026-01-01T00:00:00Z",
			"notAfter":           "2026-01-02T00:00:00Z",
		},
	})
	return b
}

// sshBody is a webhook request body for an SSH certificate: the key in
// the SSH wire format.
func sshBody(t testing.TB, field string, pub crypto.PublicKey) []byte {
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{
		"timestamp": "2026-01-01T00:00:00Z",
		field:       map[string]any{"publicKey": k.Marshal(), "type": "user", "keyId": "alice", "principals": []string{"alice"}},
	})
	return b
}

type answer struct {
	Allow bool `json:"allow"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// verified is the connection state of a request whose client
// certificate the server verified.
var verified = clientState(testClient)

// testClient is the common name of step-ca's certificate in the tests.
const testClient = "Step Online CA"

// clientState is the state of a connection whose client certificate the
// server verified, with the subject common names given.
func clientState(commonNames ...string) *tls.ConnectionState {
	leaf := &x509.Certificate{}
	for _, cn := range commonNames {
		leaf.Subject.Names = append(leaf.Subject.Names, pkix.AttributeTypeAndValue{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: cn})
	}
	return &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf}}}
}

func sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// The handler allows a key the filter does not hold, refuses one it holds
// (X.509 and SSH, every algorithm, compressed points), and refuses
// everything it cannot read or authenticate, with a code and a message.
func TestHandler(t *testing.T) {
	fx := newFixture(t)
	live := openLive(t, fx)
	var logs bytes.Buffer
	secret := []byte("webhook secret")
	plain := NewHandler(checker(live), Options{ClientName: testClient, Logger: log.New(&logs, "", 0)})
	signed := NewHandler(checker(live), Options{ClientName: testClient, Secret: secret})
	small := NewHandler(checker(live), Options{ClientName: testClient, MaxBody: 512})
	clean := slices.Clip(x509Body("x509Certificate", spkiOf(t, fx.cleanP256))) // appended to below
	b64 := base64.StdEncoding.EncodeToString
	for _, tc := range []struct {
		name    string
		h       *Handler
		method  string
		body    []byte
		tls     *tls.ConnectionState
		sig     string
		status  int
		code    string // "" for allowed
		message string
	}{
		{name: "clean x509 P-256", body: clean, status: 200},
		{name: "clean x509 RSA", body: x509Body("x509Certificate", spkiOf(t, fx.cleanRSA)), status: 200},
		{name: "clean x509 Ed25519", body: x509Body("x509Certificate", spkiOf(t, fx.cleanEd25519)), status: 200},
		{name: "clean SSH certificate", body: sshBody(t, "sshCertificate", fx.cleanEd25519), status: 200},
		{name: "clean SSH RSA certificate", body: sshBody(t, "sshCertificate", fx.cleanRSA), status: 200},
		{name: "compromised x509 RSA", body: x509Body("x509Certificate", spkiOf(t, fx.pwnedRSA)), status: 200, code: CodeCompromised, message: "pkbf: the certificate's public key is reported as compromised (pwnedkeys fingerprint " + fx.pwnedRSAFinger + ")"},
		{name: "compromised x509 P-256", body: x509Body("x509Certificate", spkiOf(t, fx.pwnedP256)), status: 200, code: CodeCompromised, message: fx.pwnedP256Fingerprint},
		{name: "compromised x509 Ed25519", body: x509Body("x509Certificate", spkiOf(t, fx.pwnedEd25519)), status: 200, code: CodeCompromised, message: "reported as compromised"},
		{name: "compromised x509 P-256 compressed", body: x509Body("x509Certificate", fx.pwnedP256Compressed), status: 200, code: CodeCompromised, message: fx.pwnedP256Fingerprint},
		{name: "compromised x509 certificate request", body: x509Body("x509CertificateRequest", spkiOf(t, fx.pwnedP256)), status: 200, code: CodeCompromised, message: "the certificate request's public key is reported"},
		{name: "compromised SSH Ed25519 certificate", body: sshBody(t, "sshCertificate", fx.pwnedEd25519), status: 200, code: CodeCompromised, message: "the SSH certificate's public key is reported"},
		{name: "compromised SSH P-256 certificate", body: sshBody(t, "sshCertificate", fx.pwnedP256), status: 200, code: CodeCompromised, message: fx.pwnedP256Fingerprint},
		{name: "compromised SSH RSA certificate request", body: sshBody(t, "sshCertificateRequest", fx.pwnedRSA), status: 200, code: CodeCompromised, message: fx.pwnedRSAFinger},
		{name: "garbage", body: []byte("hello, webhook"), status: 400, code: CodeBadRequest, message: "pkbf: the request body is not a step-ca webhook request: invalid character"},
		{name: "empty body", body: nil, status: 400, code: CodeBadRequest, message: "not a step-ca webhook request: EOF"},
		{name: "JSON after the object", body: append(clean, "{}"...), status: 400, code: CodeBadRequest, message: "more after its JSON object"},
		{name: "missing key", body: []byte(`{"timestamp":"2026-01-01T00:00:00Z"}`), status: 400, code: CodeBadRequest, message: "has no x509Certificate, sshCertificate or certificate request"},
		{name: "certificate without publicKey", body: []byte(`{"x509Certificate":{"publicKeyAlgorithm":"ECDSA"}}`), status: 400, code: CodeBadRequest, message: "x509Certificate has no publicKey"},
		{name: "publicKey null", body: []byte(`{"x509Certificate":{"publicKey":null}}`), status: 400, code: CodeBadRequest, message: "has no publicKey"},
		{name: "publicKey not base64", body: []byte(`{"x509Certificate":{"publicKey":"not base64!"}}`), status: 400, code: CodeBadRequest, message: "illegal base64"},
		{name: "two certificates", body: []byte(`{"x509Certificate":{"publicKey":"MAA="},"sshCertificate":{"publicKey":"MAA="}}`), status: 400, code: CodeBadRequest, message: "more than one certificate or request: [x509Certificate sshCertificate]"},
		{name: "publicKey not DER", body: x509Body("x509Certificate", []byte("-----BEGIN PUBLIC KEY-----")), status: 200, code: CodeInvalidKey, message: "not a DER SubjectPublicKeyInfo"},
		{name: "publicKey DER garbage", body: x509Body("x509Certificate", []byte{0x30, 0x03, 0x02, 0x01, 0x00}), status: 200, code: CodeInvalidKey, message: "pkbf: the certificate's public key cannot be checked: invalid key"},
		{name: "publicKey cut short", body: x509Body("x509Certificate", spkiOf(t, fx.pwnedP256)[:40]), status: 200, code: CodeInvalidKey, message: "cannot be checked"},
		{name: "SSH key garbage", body: []byte(`{"sshCertificate":{"publicKey":"AAAAB3NzaC1yc2EAAAAB"}}`), status: 200, code: CodeInvalidKey, message: "the SSH certificate's public key cannot be checked: invalid key"},
		{name: "SSH key of unknown type", body: []byte(`{"sshCertificate":{"publicKey":"AAAAB3NzaC1mb28="}}`), status: 200, code: CodeInvalidKey, message: "not supported"},
		// Item 3 of the step-ca review: encoding/json keeps the last of
		// duplicated keys and matches names in any case.
		{name: "duplicated certificate key", body: []byte(`{"x509Certificate":{"publicKey":"` + b64(spkiOf(t, fx.pwnedP256)) + `"},"x509Certificate":{"publicKey":"` + b64(spkiOf(t, fx.cleanP256)) + `"}}`), status: 400, code: CodeBadRequest, message: `the request body has the key "x509Certificate" twice in one object`},
		{name: "duplicated publicKey", body: []byte(`{"x509Certificate":{"publicKey":"` + b64(spkiOf(t, fx.pwnedP256)) + `","publicKey":"` + b64(spkiOf(t, fx.cleanP256)) + `"}}`), status: 400, code: CodeBadRequest, message: `the key "publicKey" twice`},
		{name: "certificate key in another case", body: []byte(`{"X509Certificate":{"publicKey":"` + b64(spkiOf(t, fx.cleanP256)) + `"}}`), status: 400, code: CodeBadRequest, message: `the request body has the key "X509Certificate", not spelled "x509Certificate"`},
		{name: "publicKey in another case", body: []byte(`{"x509Certificate":{"publickey":"` + b64(spkiOf(t, fx.cleanP256)) + `"}}`), status: 400, code: CodeBadRequest, message: `not spelled "publicKey"`},
		{name: "publicKey beside PUBLICKEY", body: []byte(`{"x509Certificate":{"publicKey":"` + b64(spkiOf(t, fx.pwnedP256)) + `","PUBLICKEY":"` + b64(spkiOf(t, fx.cleanP256)) + `"}}`), status: 400, code: CodeBadRequest, message: `"PUBLICKEY", not spelled "publicKey"`},
		{name: "sshCertificate with a long s", body: []byte(`{"ſshCertificate":{"publicKey":"AAAA"}}`), status: 400, code: CodeBadRequest, message: `not spelled "sshCertificate"`},
		{name: "duplicated key in a nested array", body: []byte(`{"x509Certificate":{"publicKey":"` + b64(spkiOf(t, fx.cleanP256)) + `","extensions":[{"id":"1","id":"2"}]}}`), status: 400, code: CodeBadRequest, message: `the key "id" twice`},
		{name: "same key in sibling objects", body: []byte(`{"x509Certificate":{"publicKey":"` + b64(spkiOf(t, fx.cleanP256)) + `","extensions":[{"id":"1"},{"id":"2"}],"id":"3"}}`), status: 200},
		{name: "nested 32 levels", body: []byte(`{"x509Certificate":{"publicKey":"` + b64(spkiOf(t, fx.cleanP256)) + `","a":` + strings.Repeat("[", 30) + strings.Repeat("]", 30) + `}}`), status: 200},
		{name: "nested 33 levels", body: []byte(`{"x509Certificate":{"publicKey":"` + b64(spkiOf(t, fx.cleanP256)) + `","a":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}}`), status: 400, code: CodeBadRequest, message: "nested deeper than 32 levels"},
		{name: "GET", method: http.MethodGet, status: 405, code: CodeBadRequest, message: "POST requests, not GET"},
		{name: "no client certificate", tls: &tls.ConnectionState{}, body: clean, status: 403, code: CodeUnauthenticated, message: "no verified client certificate"},
		// Item 2 of the step-ca review: the CA's root also verifies its
		// subscribers' certificates.
		{name: "a subscriber's certificate", tls: clientState("host.example.com"), body: clean, status: 403, code: CodeUnauthenticated, message: `the client certificate's subject common names ["host.example.com"] are not the CA's "Step Online CA"`},
		{name: "client certificate without a common name", tls: clientState(), body: clean, status: 403, code: CodeUnauthenticated, message: "common names [] are not the CA's"},
		{name: "client name in another case", tls: clientState("step online ca"), body: clean, status: 403, code: CodeUnauthenticated, message: "are not the CA's"},
		{name: "client certificate with two common names", tls: clientState("host.example.com", testClient), body: clean, status: 403, code: CodeUnauthenticated, message: "are not the CA's"},
		{name: "no client name set", h: NewHandler(checker(live), Options{}), body: clean, status: 403, code: CodeUnauthenticated, message: "no client name is set"},
		{name: "plain HTTP", tls: nil, body: clean, status: 403, code: CodeUnauthenticated, message: "no verified client certificate"},
		{name: "body over the limit", h: small, body: append(clean, bytes.Repeat([]byte(" "), 512)...), status: 413, code: CodeBadRequest, message: "larger than 512 bytes"},
		{name: "good HMAC", h: signed, body: clean, sig: sign(secret, clean), status: 200},
		{name: "good HMAC, compromised key", h: signed, body: x509Body("x509Certificate", spkiOf(t, fx.pwnedP256)), sig: sign(secret, x509Body("x509Certificate", spkiOf(t, fx.pwnedP256))), status: 200, code: CodeCompromised},
		{name: "no HMAC", h: signed, body: clean, status: 403, code: CodeUnauthenticated, message: "no X-Smallstep-Signature header"},
		{name: "bad HMAC", h: signed, body: clean, sig: sign([]byte("other secret"), clean), status: 403, code: CodeUnauthenticated, message: "does not match the webhook secret"},
		// Issue 48, item 11: what step-ca sends for a webhook of ca.json,
		// which has no secret; the refusal says why.
		{name: "HMAC with the empty key", h: signed, body: clean, sig: sign(nil, clean), status: 403, code: CodeUnauthenticated, message: "an HMAC under the empty key, not the webhook secret: step-ca has no secret for this webhook (it ignores a secret in ca.json"},
		{name: "HMAC not hex", h: signed, body: clean, sig: "zz", status: 403, code: CodeUnauthenticated, message: "does not match"},
		{name: "HMAC of another body", h: signed, body: clean, sig: sign(secret, append(clean, ' ')), status: 403, code: CodeUnauthenticated, message: "does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, method, state := tc.h, tc.method, tc.tls
			if h == nil {
				h = plain
			}
			if method == "" {
				method = http.MethodPost
			}
			if state == nil && tc.name != "plain HTTP" {
				state = verified
			}
			r := httptest.NewRequest(method, "/v1/step-ca/authorize", bytes.NewReader(tc.body))
			r.TLS = state
			if tc.sig != "" {
				r.Header.Set(SignatureHeader, tc.sig)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			var a answer
			if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
				t.Fatalf("answer %q is not JSON: %v", w.Body, err)
			}
			if w.Code != tc.status || w.Header().Get("Content-Type") != "application/json" {
				t.Errorf("status %d (%s), want %d", w.Code, w.Header().Get("Content-Type"), tc.status)
			}
			switch {
			case tc.code == "" && (!a.Allow || a.Error != nil):
				t.Errorf("answer %s, want {\"allow\":true}", w.Body)
			case tc.code != "" && (a.Allow || a.Error == nil || a.Error.Code != tc.code || !strings.Contains(a.Error.Message, tc.message) || !strings.HasPrefix(a.Error.Message, "pkbf: ")):
				t.Errorf("answer %s, want allow false, code %s and a message with %q", w.Body, tc.code, tc.message)
			}
		})
	}
	if s := plain.Stats(); s.Compromised != 8 || s.Allowed != 7 {
		t.Errorf("stats %+v: want 8 compromised, 7 allowed", s)
	}
	if !strings.Contains(logs.String(), "step-ca: refused (pkbf-compromised-key): pkbf: the certificate's public key is reported as compromised (pwnedkeys fingerprint "+fx.pwnedP256Fingerprint) {
		t.Errorf("the log does not name the refused key:\n%s", logs.String())
	}
}

// Over TLS, the handler takes the client certificate the server's
// tls.Config verified: a call with the CA's certificate is answered, one
// without is refused, one with a certificate from another CA fails the
// handshake.
func TestHandlerClientCertificate(t *testing.T) {
	fx := newFixture(t)
	h := NewHandler(checker(openLive(t, fx)), Options{ClientName: testClient})
	isCA := func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid, c.KeyUsage = true, true, x509.KeyUsageCertSign
	}
	caKey, ca := testkit.Cert(t, "root", nil, nil, isCA)
	otherKey, other := testkit.Cert(t, "other root", nil, nil, isCA)
	leaf := func(name string, parent *x509.Certificate, parentKey crypto.Signer) *tls.Certificate {
		key, cert := testkit.Cert(t, name, parent, parentKey, func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth} })
		return &tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key}
	}
	srv := httptest.NewUnstartedServer(h)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	srv.StartTLS()
	defer srv.Close()
	body := x509Body("x509Certificate", spkiOf(t, fx.pwnedP256))
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
		code string
		err  string
	}{
		{"the CA's certificate", leaf(testClient, ca, caKey), CodeCompromised, ""},
		{"no certificate", nil, CodeUnauthenticated, ""},
		{"a subscriber's certificate from the CA", leaf("host.example.com", ca, caKey), CodeUnauthenticated, ""},
		{"another CA's certificate", leaf(testClient, other, otherKey), "", "unknown certificate authority"},
	} {
		tr := srv.Client().Transport.(*http.Transport).Clone()
		if tc.cert != nil { // sent whatever CAs the server names
			tr.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return tc.cert, nil }
		}
		client := &http.Client{Transport: tr}
		resp, err := client.Post(srv.URL, "application/json", bytes.NewReader(body))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want a failed handshake (%s)", tc.name, err, tc.err)
			}
			if err == nil {
				resp.Body.Close()
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var a answer
		json.Unmarshal(b, &a)
		if a.Allow || a.Error == nil || a.Error.Code != tc.code {
			t.Errorf("%s: %d %s, want code %s", tc.name, resp.StatusCode, b, tc.code)
		}
	}
}

// A Disabled handler refuses every call, whatever it holds, in the shape
// step-ca reads (403, allow false) with its message, or a default for an
// empty one, and counts the refusals.
func TestDisabled(t *testing.T) {
	fx := newFixture(t)
	for _, tc := range []struct{ name, message, want string }{
		{"with a message", "off here: see the docs", "pkbf: off here: see the docs"},
		{"empty message", "", "pkbf: the webhook is not enabled on this server"},
	} {
		h := Disabled(tc.message)
		for _, body := range [][]byte{x509Body("x509Certificate", spkiOf(t, fx.cleanP256)), []byte("not JSON"), nil} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
			var a answer
			if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || rec.Code != http.StatusForbidden || a.Allow || a.Error == nil ||
				a.Error.Code != CodeDisabled || a.Error.Message != tc.want {
				t.Errorf("%s, body %q: %d %s, want 403 %s %q", tc.name, body, rec.Code, rec.Body, CodeDisabled, tc.want)
			}
		}
		if s := h.Stats(); s.Refused != 3 || s.Allowed != 0 {
			t.Errorf("%s: stats %+v, want 3 refused", tc.name, s)
		}
	}
}

// BenchmarkHandler measures one webhook call as the handler answers it,
// from the request body to the JSON answer, without the network: the cost
// pkbf adds to each certificate step-ca signs (docs/stepca.md).
func BenchmarkHandler(b *testing.B) {
	fx := newFixture(b)
	live := openLive(b, fx)
	secret := []byte("webhook secret")
	for _, bc := range []struct {
		name   string
		opts   Options
		pub    crypto.PublicKey
		status int
	}{
		{"clean P-256", Options{ClientName: testClient}, fx.cleanP256, 200},
		{"clean RSA 2048", Options{ClientName: testClient}, fx.cleanRSA, 200},
		{"compromised P-256", Options{ClientName: testClient}, fx.pwnedP256, 200},
		{"clean P-256 HMAC", Options{ClientName: testClient, Secret: secret}, fx.cleanP256, 200},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := NewHandler(checker(live), bc.opts)
			body := x509Body("x509Certificate", spkiOf(b, bc.pub))
			sig := sign(secret, body)
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "/v1/step-ca/authorize", bytes.NewReader(body))
				r.TLS = verified
				r.Header.Set(SignatureHeader, sig)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != bc.status {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

// FuzzHandler: whatever the body, the answer is JSON, and it allows only
// a body whose one public key the handler could read and the filter does
// not hold; a refusal carries a code and a message with pkbf's prefix.
func FuzzHandler(f *testing.F) {
	fx := newFixture(f)
	live := openLive(f, fx)
	h := NewHandler(checker(live), Options{Unauthenticated: true})
	f.Add(x509Body("x509Certificate", spkiOf(f, fx.cleanP256)))
	f.Add(x509Body("x509Certificate", spkiOf(f, fx.pwnedP256)))
	f.Add(x509Body("x509CertificateRequest", fx.pwnedP256Compressed))
	f.Add(sshBody(f, "sshCertificate", fx.cleanEd25519))
	f.Add([]byte(`{"x509Certificate":{"publicKey":"MAA="},"sshCertificate":{"publicKey":"MAA="}}`))
	f.Add([]byte(`{"x509Certificate":{"publicKey":"MAA=","PublicKey":"MAA=","a":[{"b":1,"b":2}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var a answer
		if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
			t.Fatalf("answer %q is not JSON: %v", w.Body, err)
		}
		if !a.Allow {
			if a.Error == nil || a.Error.Code == "" || !strings.HasPrefix(a.Error.Message, "pkbf: ") {
				t.Fatalf("refusal without a code or pkbf's message: %s", w.Body)
			}
			return
		}
		der, _, ref := publicKeyOf(body)
		if ref != nil {
			t.Fatalf("allowed a body whose key cannot be read: %v", ref)
		}
		if keycheck.New(live, keycheck.Options{}).Contains(der) || w.Code != 200 {
			t.Fatalf("allowed a key the filter holds (status %d)", w.Code)
		}
	})
}

// ParseSecret reads the secret as step-ca prints it, base64 with white
// space around, and refuses what would not authenticate.
func TestParseSecret(t *testing.T) {
	for _, tc := range []struct {
		name, text, want, err string
	}{
		{"base64", "c2VjcmV0", "secret", ""},
		{"line end", "  c2VjcmV0\n", "secret", ""},
		{"not base64", "secret!", "", "not the base64 secret step-ca holds"},
		{"empty", "\n", "", "the webhook secret is empty"},
	} {
		got, err := ParseSecret([]byte(tc.text))
		if string(got) != tc.want || (tc.err == "") != (err == nil) || err != nil && (!strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "pkbf: ")) {
			t.Errorf("%s: %q, %v; want %q, %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestHandlerWeak: with a KeyChecker that makes the weak-key checks, the
// handler refuses a weak key the filter does not hold (CodeWeak) and one
// it holds (CodeCompromised), X.509 and SSH, with every finding's rule and
// reason in the message step-ca logs; without a filter, the weak-key
// checks alone refuse.
func TestHandlerWeak(t *testing.T) {
	fx := newFixture(t)
	live := openLive(t, fx)
	weak, err := weakkeys.New(weakkeys.WithRSASizes(3072)) // every 2048-bit key is weak
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	h := NewHandler(keycheck.New(live, keycheck.Options{Weak: weak}), Options{ClientName: testClient, Logger: log.New(&logs, "", 0)})
	for _, tc := range []struct {
		name, code string
		body       []byte
		message    []string
	}{
		{"weak x509 RSA", CodeWeak, x509Body("x509Certificate", spkiOf(t, fx.cleanRSA)),
			[]string{"the certificate's public key is refused (pwnedkeys fingerprint " + keys.Fingerprint(spkiOf(t, fx.cleanRSA)) + "): rsa-size: RSA-2048 is not among the sizes this checker allows (3072); debian-not-covered: "}},
		{"weak SSH RSA", CodeWeak, sshBody(t, "sshCertificate", fx.cleanRSA), []string{"the SSH certificate's public key is refused", "rsa-size: RSA-2048"}},
		{"weak Ed25519", CodeWeak, x509Body("x509Certificate", spkiOf(t, fx.cleanEd25519)), []string{"algorithm: Ed25519 keys are not allowed"}},
		{"compromised and weak", CodeCompromised, x509Body("x509Certificate", spkiOf(t, fx.pwnedRSA)),
			[]string{"(pwnedkeys fingerprint " + fx.pwnedRSAFinger + "): probably compromised: a filter of compromised keys holds it; rsa-size: "}},
		{"P-256 without Debian lists", CodeWeak, x509Body("x509Certificate", spkiOf(t, fx.cleanP256)), []string{"debian-not-covered: no Debian weak-key list of this checker covers P-256 keys"}},
	} {
		r := httptest.NewRequest(http.MethodPost, "/v1/step-ca/authorize", bytes.NewReader(tc.body))
		r.TLS = verified
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var a answer
		if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || a.Allow || a.Error == nil || a.Error.Code != tc.code {
			t.Errorf("%s: %s, want %s", tc.name, w.Body, tc.code)
			continue
		}
		for _, m := range tc.message {
			if !strings.Contains(a.Error.Message, m) || !strings.Contains(logs.String(), m) {
				t.Errorf("%s: message %q (logged: %v), want %q", tc.name, a.Error.Message, strings.Contains(logs.String(), m), m)
			}
		}
	}
	if s := h.Stats(); s.Weak != 4 || s.Compromised != 1 || s.Allowed != 0 {
		t.Errorf("stats %+v", s)
	}
	// The weak-key checks alone, without a filter.
	ok, err := weakkeys.New(weakkeys.WithRSASizes(2048, 3072))
	if err != nil {
		t.Fatal(err)
	}
	h = NewHandler(keycheck.New(nil, keycheck.Options{Weak: ok}), Options{ClientName: testClient})
	r := httptest.NewRequest(http.MethodPost, "/v1/step-ca/authorize", bytes.NewReader(x509Body("x509Certificate", spkiOf(t, fx.pwnedRSA))))
	r.TLS = verified
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if !strings.Contains(w.Body.String(), `"code":"pkbf-weak-key"`) || !strings.Contains(w.Body.String(), "debian-not-covered") || strings.Contains(w.Body.String(), "compromised") {
		t.Errorf("no filter, RSA-2048 without Debian lists: %s", w.Body)
	}
}
