package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keys"
)

// attest makes the attestation pwnedkeys serves for the key in the PKCS#8
// file name, signed by the key in signerName.
func attest(t *testing.T, name, signerName string) []byte {
	spki, err := keys.SPKI(testkit.ReadFile(t, key(name)))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(testkit.ReadFile(t, key(signerName)))
	priv, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	alg := "ES256"
	if _, ok := priv.(*rsa.PrivateKey); ok {
		alg = "RS256"
	}
	enc := base64.RawURLEncoding.EncodeToString
	protected := enc(fmt.Appendf(nil, `{"alg":%q,"kid":%q}`, alg, keys.Fingerprint(spki)))
	payload := enc([]byte("this key is pwned"))
	digest := sha256.Sum256([]byte(protected + "." + payload))
	var sig []byte
	switch k := priv.(type) {
	case *rsa.PrivateKey:
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, digest[:])
	case *ecdsa.PrivateKey:
		r, s, e := ecdsa.Sign(rand.Reader, k, digest[:])
		sig, err = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...), e
	}
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{"protected": protected, "payload": payload, "signature": enc(sig)})
	return body
}

// apiServer serves the given bodies by fingerprint path, 404 otherwise.
func apiServer(t *testing.T, bodies map[string][]byte) (*httptest.Server, *atomic.Int32) {
	var requests atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if b, ok := bodies[strings.TrimPrefix(r.URL.Path, "/")]; ok {
			w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(s.Close)
	return s, &requests
}

// sshFP is the ssh-keygen fingerprint and comment of a .pub file, as
// ssh-keygen -l prints them (the command: ssh-keygen -lf NAME).
func sshFP(t *testing.T, name string) string {
	f := strings.Fields(string(testkit.ReadFile(t, key(name))))
	blob, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(blob)
	return strings.TrimSpace("SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:]) + " " + strings.Join(f[2:], " "))
}

func fpOf(t *testing.T, name string) string {
	spki, err := keys.SPKI(testkit.ReadFile(t, key(name)))
	if err != nil {
		t.Fatal(err)
	}
	return keys.Fingerprint(spki)
}

func TestCheckConfirm(t *testing.T) {
	// In the example filter: p256 (compromised, says the API), rsa2048 (not
	// known to the API: a false positive), rsa512 (a forged proof, signed
	// by the p256 key). Not in it: p384 (no request made).
	s, requests := apiServer(t, map[string][]byte{
		fpOf(t, "p256.pub"):        attest(t, "p256.pkcs8.pem", "p256.pkcs8.pem"),
		fpOf(t, "rsa512.spki.pem"): attest(t, "rsa512.spki.pem", "p256.pkcs8.pem"),
	})
	files := []string{key("p256.pub"), key("rsa2048.pub"), key("p384.pub"), key("rsa512.spki.pem")}
	r := runWith(t, nil, append([]string{"check", "-confirm", "-api", s.URL, exampleFilter}, files...)...)
	want := []string{
		"compromised\t" + fpOf(t, "p256.pub") + "\t" + key("p256.pub") + ": line 1\t" + sshFP(t, "p256.pub"),
		"false-positive\t" + fpOf(t, "rsa2048.pub") + "\t" + key("rsa2048.pub") + ": line 1\t" + sshFP(t, "rsa2048.pub"),
		"no\t" + fpOf(t, "p384.pub") + "\t" + key("p384.pub") + ": line 1\t" + sshFP(t, "p384.pub"),
		"unconfirmed\t" + fpOf(t, "rsa512.spki.pem") + "\t" + key("rsa512.spki.pem") + ": block 1 (line 1)",
	}
	if got := strings.Split(strings.TrimSpace(r.stdout), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("check -confirm:\n%s\nwant\n%s", r.stdout, strings.Join(want, "\n"))
	}
	if r.code != 1 || !strings.Contains(r.stderr, "bad attestation: alg is \"ES256\", but the key signs with RS256") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("%d API requests, want 3 (none for the key the filter does not hold)", n)
	}
	// Only verified keys make exit 1: a false positive alone exits 0, an
	// unconfirmed one 2.
	if r := runWith(t, nil, "check", "-confirm", "-api", s.URL, exampleFilter, key("rsa2048.pub")); r.code != 0 {
		t.Errorf("false positive alone: exit %d, %s", r.code, r.stderr)
	}
	if r := runWith(t, nil, "check", "-confirm", "-api", s.URL, exampleFilter, key("rsa512.spki.pem")); r.code != 2 {
		t.Errorf("bad proof alone: exit %d", r.code)
	}
	// JSON says the verdict, and the error.
	r = runWith(t, nil, "check", "-json", "-confirm", "-api", s.URL, exampleFilter, key("p256.pub"), key("rsa512.spki.pem"))
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var first, second map[string]any
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[1]), &second) != nil {
		t.Fatalf("JSON output %q", r.stdout)
	}
	if first["verdict"] != "compromised" || first["probably"] != true || second["verdict"] != "unconfirmed" || !strings.Contains(fmt.Sprint(second["error"]), "bad attestation") {
		t.Errorf("JSON verdicts %v / %v", first, second)
	}
	// An API that is down is a failure to answer, not a no.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusForbidden) }))
	defer down.Close()
	if r := runWith(t, nil, "check", "-confirm", "-api", down.URL, exampleFilter, key("p256.pub")); r.code != 2 || !strings.Contains(r.stdout, "unconfirmed") || !strings.Contains(r.stderr, "403 Forbidden") {
		t.Errorf("API down: %+v", r)
	}
}

// An API that answers 503 with Retry-After: 60 to everything: check
// -confirm gives up at its -timeout, with every hit unconfirmed, instead of
// waiting out the pause (and its retries) key by key.
func TestCheckConfirmTimeout(t *testing.T) {
	var requests atomic.Int32
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After", "60")
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	defer busy.Close()
	in := strings.Repeat(string(testkit.ReadFile(t, key("p256.pub"))), 50)
	start := time.Now()
	r := runWith(t, strings.NewReader(in), "check", "-confirm", "-timeout", "2s", "-api", busy.URL, exampleFilter)
	if took := time.Since(start); took > 10*time.Second || r.code != 2 || strings.Count(r.stdout, "unconfirmed") != 50 || !strings.Contains(r.stderr, "no time left to retry") {
		t.Errorf("after %v: exit %d, %d unconfirmed, stderr %.300q", took, r.code, strings.Count(r.stdout, "unconfirmed"), r.stderr)
	}
	if n := requests.Load(); n > confirmInFlight {
		t.Errorf("%d requests to an API that asked for a 60 s pause, want at most %d", n, confirmInFlight)
	}
}
