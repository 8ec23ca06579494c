//go:debug rsa1024min=0

// The directive above lets the test make and sign with a 512-bit RSA key,
// as pwnedkeys lists many; the package itself verifies such keys without it.

package pwnedkeys

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
)

// testKey is a key the test signs attestations with.
type testKey struct {
	name   string
	signer crypto.Signer
	alg    string
	spki   []byte
}

var (
	keysOnce sync.Once
	testSet  map[string]*testKey
)

func testKeys(t *testing.T) map[string]*testKey {
	keysOnce.Do(func() {
		testSet = map[string]*testKey{}
		add := func(name, alg string, s crypto.Signer, err error) {
			if err != nil {
				panic(err)
			}
			spki, err := x509.MarshalPKIXPublicKey(s.Public())
			if err != nil {
				panic(err)
			}
			testSet[name] = &testKey{name, s, alg, spki}
		}
		r2048, err := rsa.GenerateKey(rand.Reader, 2048)
		add("rsa2048", "RS256", r2048, err)
		r512, err := rsa.GenerateKey(rand.Reader, 512)
		add("rsa512", "RS256", r512, err)
		for _, c := range []struct {
			name, alg string
			curve     elliptic.Curve
		}{{"p256", "ES256", elliptic.P256()}, {"p384", "ES384", elliptic.P384()}, {"p521", "ES512", elliptic.P521()}} {
			k, err := ecdsa.GenerateKey(c.curve, rand.Reader)
			add(c.name, c.alg, k, err)
		}
		other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		add("other", "ES256", other, err)
		other512, err := rsa.GenerateKey(rand.Reader, 512)
		add("other512", "RS256", other512, err)
	})
	return testSet
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// sign makes a JWS signature over input with key, as pwnedkeys does.
func sign(t *testing.T, key *testKey, alg, input string) []byte {
	switch alg {
	case "RS256":
		d := sha256.Sum256([]byte(input))
		sig, err := rsa.SignPKCS1v15(rand.Reader, key.signer.(*rsa.PrivateKey), crypto.SHA256, d[:])
		if err != nil {
			t.Fatal(err)
		}
		return sig
	case "ES256", "ES384", "ES512":
		k := key.signer.(*ecdsa.PrivateKey)
		var d []byte
		switch alg {
		case "ES256":
			s := sha256.Sum256([]byte(input))
			d = s[:]
		case "ES384":
			s := sha512.Sum384([]byte(input))
			d = s[:]
		default:
			s := sha512.Sum512([]byte(input))
			d = s[:]
		}
		r, s, err := ecdsa.Sign(rand.Reader, k, d)
		if err != nil {
			t.Fatal(err)
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		return append(r.FillBytes(make([]byte, size)), s.FillBytes(make([]byte, size))...)
	}
	return nil // "none"
}

// attestation builds a JWS for fingerprint fp, changing what forge says.
type forgery struct {
	alg, kid string
	signer   *testKey // nil: the key itself
	payload  string
	header   string // raw protected header, overriding alg and kid
}

func attestation(t *testing.T, key *testKey, fp string, f forgery) []byte {
	alg, kid, signer, payload := key.alg, fp, key, "This key is pwned: its private key is public."
	if f.alg != "" {
		alg = f.alg
	}
	if f.kid != "" {
		kid = f.kid
	}
	if f.signer != nil {
		signer = f.signer
	}
	if f.payload != "" {
		payload = f.payload
	}
	header := fmt.Sprintf(`{"alg":%q,"kid":%q}`, alg, kid)
	if f.header != "" {
		header = f.header
	}
	protected, encPayload := b64([]byte(header)), b64([]byte(payload))
	sig := sign(t, signer, alg, protected+"."+encPayload)
	body, _ := json.Marshal(map[string]string{"protected": protected, "payload": encPayload, "signature": b64(sig)})
	return body
}

// server answers GET /<fingerprint> with the responses registered for it.
// Tests reach it over in-memory connections (see client), or over the
// network through httptest.NewServer(s).
type server struct {
	mu        sync.Mutex
	responses map[string][]http.HandlerFunc // consumed in order; the last repeats
	requests  atomic.Int32
	inFlight  atomic.Int32
	maxFlight atomic.Int32
}

func newServer() *server { return &server{responses: map[string][]http.HandlerFunc{}} }

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for m := s.maxFlight.Load(); n > m && !s.maxFlight.CompareAndSwap(m, n); m = s.maxFlight.Load() {
	}
	if r.Method != http.MethodGet || r.Header.Get("Accept") != "application/json" {
		http.Error(w, "want GET with Accept: application/json", http.StatusBadRequest)
		return
	}
	fp := strings.TrimPrefix(r.URL.Path, "/")
	s.mu.Lock()
	hs := s.responses[fp]
	var h http.HandlerFunc
	if len(hs) > 0 {
		h = hs[0]
		if len(hs) > 1 {
			s.responses[fp] = hs[1:]
		}
	}
	s.mu.Unlock()
	if h == nil {
		http.NotFound(w, r)
		return
	}
	h(w, r)
}

// client returns a Client that asks s over in-memory connections
// (internal/pipenet), served by a real http.Server: inside a
// testing/synctest bubble, the client's backoff and deadlines and the
// handlers' sleeps then take no real time. The server stops when the test
// ends.
func (s *server) client(t *testing.T) *Client {
	l := testkit.ListenPipes()
	srv := &http.Server{Handler: s}
	go srv.Serve(l)
	tr := &http.Transport{DialContext: l.Dial}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	return &Client{BaseURL: "http://pwnedkeys.test", HTTPClient: &http.Client{Transport: tr}}
}

func (s *server) on(fp string, hs ...http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responses[fp] = hs
}

func body(b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.Write(b) }
}

func status(code int, retryAfter string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
	}
}

func fingerprint(spki []byte) string { return keys.Fingerprint(spki) }

func TestVerifiedAttestations(t *testing.T) {
	ks := testKeys(t)
	s := newServer()
	ts := httptest.NewServer(s) // once over the network, and a BaseURL ending in a slash
	defer ts.Close()
	c := &Client{BaseURL: ts.URL + "/"}
	for _, name := range []string{"rsa2048", "rsa512", "p256", "p384", "p521"} {
		k := ks[name]
		fp := fingerprint(k.spki)
		s.on(fp, body(attestation(t, k, fp, forgery{})))
		res, err := c.Check(context.Background(), k.spki)
		if err != nil || !res.Pwned || res.Fingerprint != fp || !bytes.Contains(res.Payload, []byte("key is pwned")) {
			t.Errorf("%s: Check = %+v, %v; want a verified attestation", name, res, err)
		}
	}
	// A P-256 key asked about in compressed form: its own fingerprint, its
	// own attestation, verified against the decompressed point.
	k := ks["p256"]
	encs, err := keys.Encodings(k.spki)
	if err != nil {
		t.Fatal(err)
	}
	compressed := encs[1]
	fp := fingerprint(compressed)
	s.on(fp, body(attestation(t, k, fp, forgery{})))
	if res, err := c.Check(context.Background(), compressed); err != nil || !res.Pwned || res.Fingerprint != fp {
		t.Errorf("compressed P-256: Check = %+v, %v", res, err)
	}
}

func TestForgeriesAndFailures(t *testing.T) {
	ks := testKeys(t)
	k := ks["p256"]
	fp := fingerprint(k.spki)
	rsaKey := ks["rsa2048"]
	rsaFP := fingerprint(rsaKey.spki)
	bad := func(f forgery) http.HandlerFunc { return body(attestation(t, k, fp, f)) }
	huge := bytes.Repeat([]byte("x"), maxBody+100)
	tests := []struct {
		name      string
		key       *testKey
		responses []http.HandlerFunc
		want      string // "pwned", "clean", "bad: ..." or "fail: ..."
	}{
		{"404", k, []http.HandlerFunc{status(404, "")}, "clean"},
		{"signed by another key", k, []http.HandlerFunc{bad(forgery{signer: ks["other"]})}, "bad: signature does not verify"},
		{"RSA-512 signed by another RSA-512 key", ks["rsa512"], []http.HandlerFunc{body(attestation(t, ks["rsa512"], fingerprint(ks["rsa512"].spki), forgery{signer: ks["other512"]}))}, "bad: signature does not verify"},
		{"RSA-2048 signed by another key", rsaKey, []http.HandlerFunc{body(attestation(t, rsaKey, rsaFP, forgery{signer: ks["other512"]}))}, "bad: signature does not verify"},
		{"wrong kid", k, []http.HandlerFunc{bad(forgery{kid: fingerprint(ks["other"].spki)})}, "bad: kid is"},
		{"kid in upper case", k, []http.HandlerFunc{bad(forgery{kid: strings.ToUpper(fp)})}, "bad: kid is"},
		{"alg of another curve", k, []http.HandlerFunc{bad(forgery{alg: "ES384", signer: ks["p384"]})}, `bad: alg is "ES384", but the key signs with ES256`},
		{"RS256 on an EC key", k, []http.HandlerFunc{bad(forgery{alg: "RS256", signer: rsaKey})}, `bad: alg is "RS256"`},
		{"ES256 on an RSA key", rsaKey, []http.HandlerFunc{body(attestation(t, rsaKey, rsaFP, forgery{alg: "ES256", signer: k}))}, `bad: alg is "ES256", but the key signs with RS256`},
		{"alg none", k, []http.HandlerFunc{bad(forgery{alg: "none"})}, `bad: alg is "none"`},
		{"HS256", k, []http.HandlerFunc{bad(forgery{header: fmt.Sprintf(`{"alg":"HS256","kid":%q}`, fp), alg: "none"})}, `bad: alg is "HS256"`},
		{"critical extension", k, []http.HandlerFunc{bad(forgery{header: fmt.Sprintf(`{"alg":"ES256","kid":%q,"crit":["b64"],"b64":false}`, fp)})}, "bad: protected header has critical extensions"},
		{"payload without the phrase", k, []http.HandlerFunc{bad(forgery{payload: "this key is fine"})}, `bad: payload does not say "key is pwned"`},
		{"payload too long", k, []http.HandlerFunc{bad(forgery{payload: "key is pwned" + strings.Repeat(".", 1100)})}, "bad: payload is 1112 bytes, more than 1024"},
		{"oversized body", k, []http.HandlerFunc{body(huge)}, "bad: answer is larger than 65536 bytes"},
		{"not JSON", k, []http.HandlerFunc{body([]byte("<html>key is pwned</html>"))}, "bad: answer is not a flattened JWS"},
		{"padded base64", k, []http.HandlerFunc{body(append(bytes.TrimSuffix(attestation(t, k, fp, forgery{}), []byte(`"}`)), `=="}`...))}, "bad: protected, payload or signature is not unpadded base64url"},
		{"empty signature", k, []http.HandlerFunc{body(bytes.Replace(attestation(t, k, fp, forgery{}), []byte(`"signature":"`), []byte(`"signature":"","x":"`), 1))}, "bad: signature is empty"},
		{"no payload", k, []http.HandlerFunc{body([]byte(`{"protected":"e30","signature":"AAAA"}`))}, "bad: answer lacks protected or payload"},
		{"403 is a failure, not a no", k, []http.HandlerFunc{status(403, "")}, "fail: answered 403 Forbidden"},
		{"503 then 200", k, []http.HandlerFunc{status(503, ""), bad(forgery{})}, "pwned"},
		{"429 with Retry-After, then 200", k, []http.HandlerFunc{status(429, "0"), bad(forgery{})}, "pwned"},
		{"500 every time", k, []http.HandlerFunc{status(500, "")}, "fail: answered 500 Internal Server Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newServer()
				s.on(fingerprint(tt.key.spki), tt.responses...)
				res, err := s.client(t).Check(context.Background(), tt.key.spki)
				kind, detail, _ := strings.Cut(tt.want, ": ")
				switch kind {
				case "pwned":
					if err != nil || !res.Pwned {
						t.Fatalf("Check = %+v, %v; want pwned", res, err)
					}
				case "clean":
					if err != nil || res.Pwned {
						t.Fatalf("Check = %+v, %v; want not pwned, no error", res, err)
					}
				case "bad", "fail":
					if err == nil || res.Pwned || errors.Is(err, ErrBadAttestation) != (kind == "bad") || !strings.Contains(err.Error(), detail) {
						t.Fatalf("Check = %+v, %v; want a %s error containing %q", res, err, kind, detail)
					}
				}
			})
		})
	}
}

func TestRetriesStopAtTheDeadline(t *testing.T) {
	k := testKeys(t)["p256"]
	synctest.Test(t, func(t *testing.T) { retriesStopAtTheDeadline(t, k) })
}

func retriesStopAtTheDeadline(t *testing.T, k *testKey) {
	s := newServer()
	c := s.client(t)
	s.on(fingerprint(k.spki), status(503, "30")) // asks for a 30 s wait
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Check(ctx, k.spki)
	if err == nil || !strings.Contains(err.Error(), "no time left to retry") || time.Since(start) != 0 {
		t.Errorf("Check = %v after %v; want a prompt failure", err, time.Since(start))
	}
	if n := s.requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	// Without a deadline the retries stop after a few attempts.
	s.on(fingerprint(k.spki), status(502, ""))
	s.requests.Store(0)
	if _, err := s.client(t).Check(context.Background(), k.spki); err == nil || s.requests.Load() != attempts {
		t.Errorf("Check = %v after %d requests, want an error after %d", err, s.requests.Load(), attempts)
	}
}

func TestServerThatNeverAnswers(t *testing.T) {
	k := testKeys(t)["p256"]
	synctest.Test(t, func(t *testing.T) { serverThatNeverAnswers(t, k) })
}

func serverThatNeverAnswers(t *testing.T, k *testKey) {
	release := make(chan struct{})
	s := newServer()
	c := s.client(t)
	s.on(fingerprint(k.spki), func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := c.Check(ctx, k.spki)
	if !errors.Is(err, context.DeadlineExceeded) || res.Pwned || time.Since(start) != 200*time.Millisecond {
		t.Errorf("Check = %+v, %v after %v; want the deadline's error, promptly", res, err, time.Since(start))
	}
	// A body that trickles forever is cut off by ctx too.
	s.on(fingerprint(k.spki), func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"protected":"`))
		for {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
				w.Write([]byte("A"))
				w.(http.Flusher).Flush()
			}
		}
	})
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if _, err := c.Check(ctx2, k.spki); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("trickling body: %v, want the deadline's error", err)
	}
}

func TestUnverifiableKeys(t *testing.T) {
	s := newServer()
	c := s.client(t)
	for name, spki := range map[string][]byte{"junk": []byte("junk"), "ed25519": mustEd25519SPKI(t)} {
		if res, err := c.Check(context.Background(), spki); err == nil || res.Pwned || !strings.Contains(err.Error(), "cannot verify attestations") {
			t.Errorf("%s: Check = %+v, %v", name, res, err)
		}
	}
	if n := s.requests.Load(); n != 0 {
		t.Errorf("%d requests for keys that could never be verified", n)
	}
}

func mustEd25519SPKI(t *testing.T) []byte {
	spki, err := keys.SPKI([]byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBswAqzIW47r2ex5K+XpaApknyxEeUQlYvsiWUXHw8KV"))
	if err != nil {
		t.Fatal(err)
	}
	return spki
}

func TestChecker(t *testing.T) {
	ks := testKeys(t)
	synctest.Test(t, func(t *testing.T) { checker(t, ks) })
}

func checker(t *testing.T, ks map[string]*testKey) {
	s := newServer()
	s.on(fingerprint(ks["p256"].spki), body(attestation(t, ks["p256"], fingerprint(ks["p256"].spki), forgery{})))
	f, _ := pkbf.New(5, 16)
	f.Add(ks["p256"].spki) // compromised
	f.Add(ks["p384"].spki) // a false positive of the filter: the API says 404
	// The same answers in front of a Filter and of a Live filter following
	// a file that holds the same keys.
	path := filepath.Join(t.TempDir(), "f.pkbf")
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	live, err := pkbf.OpenLive(path, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	var c *Checker
	for i, filter := range []keycheck.Querier{f, live} {
		c = &Checker{Filter: keycheck.New(filter, keycheck.Options{}), Client: s.client(t), MaxInFlight: 3}
		for _, tt := range []struct {
			key                string
			probably, pwned    bool
			requestsAfterwards int32
		}{
			{"rsa2048", false, false, 0},
			{"p256", true, true, 1},
			{"p384", true, false, 2},
			{"p521", false, false, 2},
		} {
			probably, res, err := c.Check(context.Background(), ks[tt.key].spki)
			if err != nil || probably != tt.probably || res.Pwned != tt.pwned || s.requests.Load() != int32(i)*2+tt.requestsAfterwards {
				t.Errorf("%T: %s: probably %v, %+v, %v after %d requests", filter, tt.key, probably, res, err, s.requests.Load())
			}
		}
		// What the filter cannot answer for is an error, never a "no".
		if probably, _, err := c.Check(context.Background(), []byte("not a key")); probably || !errors.Is(err, keys.ErrInvalidKey) {
			t.Errorf("%T: a key that cannot be read: probably %v, error %v; want ErrInvalidKey", filter, probably, err)
		}
	}
	// No more than MaxInFlight requests at a time.
	slow := newServer()
	slow.on(fingerprint(ks["p384"].spki), func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(30 * time.Millisecond)
		http.NotFound(w, r)
	})
	c = &Checker{Filter: keycheck.New(f, keycheck.Options{}), Client: slow.client(t), MaxInFlight: 3}
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Check(context.Background(), ks["p384"].spki)
		}()
	}
	wg.Wait()
	if m := slow.maxFlight.Load(); m > 3 || slow.requests.Load() != 12 {
		t.Errorf("%d requests, at most %d at once; want 12, at most 3", slow.requests.Load(), m)
	}
}

// A struggling server (503, Retry-After 60) and many keys in flight: the
// pause it asks for holds for all of them, so after the first answers no
// more requests are made, and everything ends at the deadline at the
// latest instead of each key waiting (and retrying) on its own.
func TestSharedBackoff(t *testing.T) {
	ks := testKeys(t)
	synctest.Test(t, func(t *testing.T) { sharedBackoff(t, ks) })
}

func sharedBackoff(t *testing.T, ks map[string]*testKey) {
	s := newServer()
	spki := ks["p256"].spki
	s.on(fingerprint(spki), func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		status(503, "60")(w, r)
	})
	client := s.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := client.Check(ctx, spki); err != nil {
				failed.Add(1)
			}
		}()
		time.Sleep(5 * time.Millisecond) // keys arrive one after another
	}
	wg.Wait()
	if failed.Load() != 40 || time.Since(start) > 2*time.Second {
		t.Errorf("%d of 40 checks failed after %v; want all, before the deadline", failed.Load(), time.Since(start))
	}
	if n := s.requests.Load(); n > 10 {
		t.Errorf("%d requests to a server that asked for a 60 s pause; want only those made before its first answer", n)
	}
	t.Logf("%d requests for 40 keys", s.requests.Load())
}
