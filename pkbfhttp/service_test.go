package pkbfhttp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/stepca"
	"github.com/pkbf/pkbf/weakkeys"
)

const (
	exampleFilter = "../testdata/example.pkbf"
	keysDir       = "../testdata/keys"
)

func key(name string) string { return filepath.Join(keysDir, name) }

// newService is New's service, or fails the test.
func newService(t testing.TB, live *pkbf.Live, l Limits) *Service {
	t.Helper()
	s, err := New(live, Options{Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// get returns the status and body of a GET of url, or fails the test.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func newTestService(t *testing.T, maxBody int64) (*httptest.Server, *Service) {
	live, err := pkbf.OpenLive(exampleFilter, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	s := newService(t, live, Limits{MaxBody: maxBody, MaxInFlight: 4, MaxKeys: 10000})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv, s
}

// /v1/check answers key by key, one JSON line each (cmd/pkbf's
// TestServeAnswersAsCheckJSON compares them with check --json), and
// refuses what holds no key.
func TestServeCheck(t *testing.T) {
	srv, s := newTestService(t, 1<<20)
	body := append(testkit.ReadFile(t, key("p256.cert.pem")), testkit.ReadFile(t, key("p384.pub"))...)
	if code, out := testkit.Post(t, srv.URL+"/v1/check", body); code != 200 || strings.Count(out, "\n") != 2 || strings.Count(out, `"probably":true`) != 1 {
		t.Errorf("status %d:\n%s\nwant two lines, one probably", code, out)
	}
	for _, tc := range []struct {
		name   string
		method string
		body   []byte
		code   int
		want   string
	}{
		{"GET", http.MethodGet, nil, 405, "POST keys"},
		{"empty body", http.MethodPost, nil, 400, "the request body is empty"},
		{"no key", http.MethodPost, []byte("hello, server"), 400, "no key, certificate or certificate request found"},
		{"oversized", http.MethodPost, bytes.Repeat([]byte("x"), 1<<20+1), 413, "larger than 1048576 bytes"},
		{"half a key", http.MethodPost, testkit.ReadFile(t, key("p256.cert.pem"))[:300], 400, "has no END line"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+"/v1/check", bytes.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %d %q; want %d and %q", tc.name, resp.StatusCode, b, tc.code, tc.want)
		}
	}
	if s.keys.Load() != 2 || s.hits.Load() != 1 || s.badRequests.Load() != 5 {
		t.Errorf("counters: %d keys, %d hits, %d bad requests", s.keys.Load(), s.hits.Load(), s.badRequests.Load())
	}
}

func TestServeStatusHealthMetrics(t *testing.T) {
	srv, s := newTestService(t, 1<<20)
	testkit.Post(t, srv.URL+"/v1/check", testkit.ReadFile(t, key("p256.pub")))
	for path, want := range map[string]string{
		"/healthz": "ok\n",
		"/readyz":  "ready\n",
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != want {
			t.Errorf("%s: %d %q", path, resp.StatusCode, b)
		}
	}
	resp, _ := http.Get(srv.URL + "/v1/status")
	var st map[string]any
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st["entries"] != float64(5) || st["hash_count"] != float64(12) || st["reloads"] != float64(0) || st["file"] != exampleFilter {
		t.Errorf("status %v", st)
	}
	resp, _ = http.Get(srv.URL + "/metrics")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"# TYPE pkbf_keys_checked_total counter\npkbf_keys_checked_total 1\n", "pkbf_keys_probably_total 1\n", "pkbf_reloads_total 0\n", "pkbf_filter_entries 5\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q:\n%s", want, b)
		}
	}
	s.shuttingDown.Store(true)
	resp, _ = http.Get(srv.URL + "/readyz")
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("readyz while shutting down: %d", resp.StatusCode)
	}
}

// A client that sends its headers slowly, or never ends its body, is cut
// off by the server's timeouts.
func TestServeSlowClients(t *testing.T) { synctest.Test(t, serveSlowClients) }

func serveSlowClients(t *testing.T) {
	live, err := pkbf.OpenLive(exampleFilter, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	srv := newService(t, live, Limits{MaxBody: 1 << 20, MaxInFlight: 4, MaxKeys: 10000}).Server(log.New(io.Discard, "", 0))
	ln := testkit.ListenPipes()
	go srv.Serve(ln)
	defer srv.Close()
	for name, tc := range map[string]struct {
		request string
		held    time.Duration
	}{
		"slow headers": {"POST /v1/check HTTP/1.1\r\nHost: x\r\n", readHeaderTimeout},
		"endless body": {"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nssh-", readTimeout},
	} {
		conn, err := ln.Dial(context.Background(), "", "")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		fmt.Fprint(conn, tc.request)
		reply, _ := io.ReadAll(bufio.NewReader(conn))
		conn.Close()
		// After its timeout the server may linger up to net/http's
		// rstAvoidanceDelay (500 ms) before it closes a connection whose
		// request it did not read to the end: Go 1.27 does, on the
		// endless body.
		if d := time.Since(start); d < tc.held || d > tc.held+500*time.Millisecond {
			t.Errorf("%s: the server held the connection for %v, want %v (and at most 500ms more)", name, d, tc.held)
		}
		if len(reply) > 0 && !bytes.Contains(reply, []byte(" 400 ")) && !bytes.Contains(reply, []byte(" 408 ")) {
			t.Errorf("%s: reply %q", name, reply)
		}
	}
}

// Without Options.StepCA (pkbf serve without --client-ca or
// --webhook-insecure), step-ca's webhook is refused, never answered: a
// plain HTTP server cannot authenticate the CA. The refusal is in the
// shape step-ca reads (403, allow false), says the webhook is not enabled
// and which flags enable it, and is counted with the other refusals.
func TestServeStepCAWebhookNotEnabled(t *testing.T) {
	srv, _ := newTestService(t, 1<<20)
	body := []byte(`{"x509Certificate":{"publicKey":"` + base64.StdEncoding.EncodeToString(testkit.ReadFile(t, key("p384.spki.der"))) + `"}}`)
	for name, body := range map[string][]byte{"a clean key": body, "not JSON": []byte("hello")} {
		code, out := testkit.Post(t, srv.URL+StepCAPath, body)
		var answer struct {
			Allow *bool
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal([]byte(out), &answer); err != nil || code != http.StatusForbidden || answer.Allow == nil || *answer.Allow ||
			answer.Error.Code != stepca.CodeDisabled || answer.Error.Message != "pkbf: "+webhookDisabled {
			t.Errorf("%s to a server without the webhook: %d %s (%v), want 403 %s", name, code, out, err, stepca.CodeDisabled)
		}
	}
	for _, flag := range []string{"not enabled on this server", "--tls-cert", "--tls-key", "--client-ca", "--client-name", "docs/stepca.md"} {
		if !strings.Contains(webhookDisabled, flag) {
			t.Errorf("the refusal does not say %q: %s", flag, webhookDisabled)
		}
	}
	if _, b := get(t, srv.URL+"/metrics"); !strings.Contains(b, "pkbf_stepca_refused_total 2\n") || !strings.Contains(b, "pkbf_stepca_allowed_total 0\n") {
		t.Errorf("metrics do not count the two refusals:\n%s", b)
	}
}

// With an unauthenticated handler (--webhook-insecure) the webhook is
// answered, for local tests.
func TestServeStepCAWebhookInsecure(t *testing.T) {
	_, s := newTestService(t, 1<<20)
	body := []byte(`{"x509Certificate":{"publicKey":"` + base64.StdEncoding.EncodeToString(testkit.ReadFile(t, key("p384.spki.der"))) + `"}}`)
	s, err := New(s.live, Options{Limits: s.limits, StepCA: stepca.NewHandler(keycheck.New(s.live, keycheck.Options{}), stepca.Options{Unauthenticated: true})})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	if code, out := testkit.Post(t, srv.URL+"/v1/step-ca/authorize", body); code != 200 || out != `{"allow":true}`+"\n" {
		t.Errorf("--webhook-insecure: %d %s, want allowed", code, out)
	}
	pwned := []byte(`{"x509Certificate":{"publicKey":"` + base64.StdEncoding.EncodeToString(testkit.ReadFile(t, key("p256.spki.der"))) + `"}}`)
	if code, out := testkit.Post(t, srv.URL+"/v1/step-ca/authorize", pwned); code != 200 || !strings.Contains(out, `"allow":false,"error":{"code":"pkbf-compromised-key"`) {
		t.Errorf("--webhook-insecure, a key the filter holds: %d %s, want refused", code, out)
	}
	_, b := get(t, srv.URL+"/metrics")
	for _, want := range []string{"pkbf_stepca_allowed_total 1\n", "pkbf_stepca_refused_total 1\n", "pkbf_stepca_compromised_total 1\n"} {
		if !strings.Contains(b, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestServeCheckWeak: with Options.Weak, /v1/check answers each key's
// weak-key findings beside the filter's answer, a bare modulus's too, and
// /metrics counts the weak keys.
func TestServeCheckWeak(t *testing.T) {
	live, err := pkbf.OpenLive(exampleFilter, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	weak, err := weakkeys.New(weakkeys.WithRSASizes(3072))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(live, Options{Weak: weak})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	body := append(testkit.ReadFile(t, key("p256.cert.pem")), testkit.ReadFile(t, key("rsa1024.pub"))...)
	code, out := testkit.Post(t, srv.URL+"/v1/check", body)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 200 || len(lines) != 2 ||
		!strings.Contains(lines[0], `"probably":true,"findings":[{"rule":"debian-not-covered","detail":"P-256",`) || !strings.Contains(lines[0], `"verdict":"probably"`) ||
		!strings.Contains(lines[1], `"probably":false,"findings":[{"rule":"rsa-size","detail":"1024",`) || !strings.Contains(lines[1], `"verdict":"weak"`) {
		t.Errorf("status %d:\n%s", code, out)
	}
	if code, out := testkit.Post(t, srv.URL+"/v1/check", []byte("0xc0ffee\n")); code != 200 || !strings.Contains(out, `"rule":"rsa-size","detail":"24"`) || !strings.Contains(out, `"error":"invalid key: not looked up in the filter`) {
		t.Errorf("a bare modulus: %d %s", code, out)
	}
	if _, m := get(t, srv.URL+"/metrics"); !strings.Contains(m, "\npkbf_keys_weak_total 3\n") {
		t.Errorf("metrics:\n%s", m)
	}
}
