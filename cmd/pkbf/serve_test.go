package main

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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/pipenet"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/stepca"
)

func newTestService(t *testing.T, maxBody int64) (*httptest.Server, *service) {
	live, err := pkbf.OpenLive(exampleFilter, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	s := newService(live, limits{body: maxBody, inFlight: 4, keys: 10000})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv, s
}

func post(t *testing.T, url string, body []byte) (int, string) {
	resp, err := http.Post(url, "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// /v1/check answers as check --json does, key by key.
func TestServeCheck(t *testing.T) {
	srv, s := newTestService(t, 1<<20)
	body := append(append(testkit.ReadFile(t, key("p256.cert.pem")), testkit.ReadFile(t, key("p384.pub"))...), testkit.ReadFile(t, key("bundle.der"))[:0]...)
	code, out := post(t, srv.URL+"/v1/check", body)
	local := runWith(t, bytes.NewReader(body), "check", "--json", exampleFilter)
	if code != 200 || strings.ReplaceAll(out, `"request`, `"<stdin>`) != local.stdout {
		t.Errorf("status %d:\n%s\nwant what check --json prints:\n%s", code, out, local.stdout)
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
	post(t, srv.URL+"/v1/check", testkit.ReadFile(t, key("p256.pub")))
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
	srv := newHTTPServer(newService(live, limits{body: 1 << 20, inFlight: 4, keys: 10000}), log.New(io.Discard, "", 0))
	ln := pipenet.Listen()
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
		if d := time.Since(start); d != tc.held {
			t.Errorf("%s: the server held the connection for %v, want %v", name, d, tc.held)
		}
		if len(reply) > 0 && !bytes.Contains(reply, []byte(" 400 ")) && !bytes.Contains(reply, []byte(" 408 ")) {
			t.Errorf("%s: reply %q", name, reply)
		}
	}
}

// The TLS and webhook flags are checked before anything is served: each
// wrong combination or unreadable file is an error naming it.
func TestServeStepCAFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notPEM := write("not.pem", "hello\n")
	secret := write("secret", base64.StdEncoding.EncodeToString([]byte("webhook secret"))+"\n")
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"--tls-cert without --tls-key", []string{"--tls-cert", notPEM}, "--tls-cert and --tls-key go together"},
		{"--tls-key without --tls-cert", []string{"--tls-key", notPEM}, "--tls-cert and --tls-key go together"},
		{"--client-ca over plain HTTP", []string{"--client-ca", notPEM}, "--client-ca needs --tls-cert and --tls-key"},
		{"--client-ca without --client-name", []string{"--tls-cert", notPEM, "--tls-key", notPEM, "--client-ca", notPEM}, "--client-ca needs --client-name: step-ca's root also signs its subscribers' certificates"},
		{"--client-name without --client-ca", []string{"--tls-cert", notPEM, "--tls-key", notPEM, "--client-name", "Step Online CA"}, "--client-name needs --client-ca"},
		{"--webhook-insecure with --client-ca", []string{"--tls-cert", notPEM, "--tls-key", notPEM, "--client-ca", notPEM, "--client-name", "Step Online CA", "--webhook-insecure"}, "--webhook-insecure answers step-ca without the client certificate --client-ca requires: give one or the other"},
		{"--webhook-secret-file alone", []string{"--webhook-secret-file", secret}, "--webhook-secret-file needs --client-ca"},
		{"secret file missing", []string{"--webhook-insecure", "--webhook-secret-file", missing}, "open " + missing + ": no such file"},
		{"secret not base64", []string{"--webhook-insecure", "--webhook-secret-file", notPEM}, "--webhook-secret-file " + notPEM + ": not the base64 secret step-ca holds"},
		{"secret empty", []string{"--webhook-insecure", "--webhook-secret-file", write("empty", "\n")}, "--webhook-secret-file " + filepath.Join(dir, "empty") + " is empty"},
		{"certificate missing", []string{"--tls-cert", missing, "--tls-key", notPEM}, "open " + missing + ": no such file"},
		{"certificate not PEM", []string{"--tls-cert", notPEM, "--tls-key", notPEM}, "--tls-cert " + notPEM + ", --tls-key " + notPEM + ": tls: failed to find any PEM data"},
	} {
		r := runWith(t, nil, append(append([]string{"serve", "--listen", "127.0.0.1:0"}, tc.args...), exampleFilter)...)
		if r.code != exitTrouble || !strings.Contains(r.stderr, "pkbf: error: serve: "+tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", tc.name, r.code, r.stderr, tc.want)
		}
	}
}

// Without --client-ca (or --webhook-insecure), step-ca's webhook is
// refused, never answered: a plain HTTP server cannot authenticate the
// CA. With --webhook-insecure it is answered, for local tests.
func TestServeStepCAWebhookDisabled(t *testing.T) {
	srv, s := newTestService(t, 1<<20)
	body := []byte(`{"x509Certificate":{"publicKey":"` + base64.StdEncoding.EncodeToString(testkit.ReadFile(t, key("p384.spki.der"))) + `"}}`)
	code, out := post(t, srv.URL+"/v1/step-ca/authorize", body)
	if code != http.StatusForbidden || !strings.Contains(out, "only with --client-ca") {
		t.Errorf("webhook not enabled: %d %s, want 403", code, out)
	}
	s.webhook = stepca.NewHandler(s.live, stepca.Options{Unauthenticated: true})
	if code, out := post(t, srv.URL+"/v1/step-ca/authorize", body); code != 200 || out != `{"allow":true}`+"\n" {
		t.Errorf("--webhook-insecure: %d %s, want allowed", code, out)
	}
	pwned := []byte(`{"x509Certificate":{"publicKey":"` + base64.StdEncoding.EncodeToString(testkit.ReadFile(t, key("p256.spki.der"))) + `"}}`)
	if code, out := post(t, srv.URL+"/v1/step-ca/authorize", pwned); code != 200 || !strings.Contains(out, `"allow":false,"error":{"code":"pkbf-compromised-key"`) {
		t.Errorf("--webhook-insecure, a key the filter holds: %d %s, want refused", code, out)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"pkbf_stepca_allowed_total 1\n", "pkbf_stepca_refused_total 1\n", "pkbf_stepca_compromised_total 1\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
