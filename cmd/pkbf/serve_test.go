package main

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/pkbfhttp"
)

// newService is pkbfhttp's service over the example filter, or fails
// the test.
func newService(t *testing.T) *pkbfhttp.Service {
	live, err := pkbf.OpenLive(exampleFilter, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	s, err := pkbfhttp.New(live, pkbfhttp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serve's /v1/check answers as check --json does, key by key.
func TestServeAnswersAsCheckJSON(t *testing.T) {
	srv := httptest.NewServer(newService(t))
	defer srv.Close()
	body := append(testkit.ReadFile(t, key("p256.cert.pem")), testkit.ReadFile(t, key("p384.pub"))...)
	code, out := testkit.Post(t, srv.URL+"/v1/check", body)
	local := runWith(t, bytes.NewReader(body), "check", "--json", exampleFilter)
	if code != 200 || strings.ReplaceAll(out, `"request`, `"<stdin>`) != local.stdout {
		t.Errorf("status %d:\n%s\nwant what check --json prints:\n%s", code, out, local.stdout)
	}
}

// waitBodyHeld waits until serve at addr holds n bytes of request bodies:
// an upload that declared them has begun.
func waitBodyHeld(t *testing.T, addr string, n float64) {
	for held := 0.0; held != n; time.Sleep(5 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/v1/status")
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]any
		json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		held, _ = st["body_bytes_held"].(float64)
	}
}

// Asked to stop with a client mid-upload: the grace passes, the request
// is cut off, and the log says what was cut; stopping as asked exits 0.
func TestServeDrainSaysWhatWasCut(t *testing.T) {
	defer func(g time.Duration) { shutdownGrace = g }(shutdownGrace)
	shutdownGrace = 200 * time.Millisecond
	s := newService(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.Server(log.New(io.Discard, "", 0))
	go srv.Serve(s.Listener(ln))
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nssh-")
	waitBodyHeld(t, ln.Addr().String(), 1000)
	var logs bytes.Buffer
	code := drain(s, srv, errors.New("terminated"), log.New(&logs, "", 0))
	if code != exitOK || !strings.Contains(logs.String(), "terminated: shutting down") ||
		!strings.Contains(logs.String(), "cut off 1 request receiving a body, 0 requests waiting to be checked, 0 requests being checked") {
		t.Errorf("exit %d, log:\n%s", code, logs.String())
	}
}

// serve's errors about its TLS files name the flags that named them,
// whatever pkbfhttp's own wording ("certificate X, key Y", "client CA
// file X"), as they did before the service moved there.
func TestServeTLSErrorsNameFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string { return testkit.WritePEM(t, dir, name, typ, der) }
	pair := func(cn string) (certFile, keyFile string) {
		k, c := testkit.Cert(t, cn, nil, nil, nil)
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(cn+".crt", "CERTIFICATE", c.Raw), write(cn+".key", "PRIVATE KEY", der)
	}
	cert, key := pair("one")
	_, otherKey := pair("two")
	notPEM := filepath.Join(dir, "not.pem")
	os.WriteFile(notPEM, []byte("hello\n"), 0o600)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"certificate not PEM", []string{"--tls-cert", notPEM, "--tls-key", key}, "--tls-cert " + notPEM + ", --tls-key " + key + ": tls: failed to find any PEM data in certificate input"},
		{"key of another certificate", []string{"--tls-cert", cert, "--tls-key", otherKey}, "--tls-cert " + cert + ", --tls-key " + otherKey + ": tls: private key does not match public key"},
		{"client CA not PEM", []string{"--tls-cert", cert, "--tls-key", key, "--client-ca", notPEM, "--client-name", "ca"}, "--client-ca " + notPEM + " holds no PEM certificate"},
		{"client CA a key", []string{"--tls-cert", cert, "--tls-key", key, "--client-ca", key, "--client-name", "ca"}, "--client-ca " + key + " holds no PEM certificate"},
	} {
		r := runWith(t, nil, append(append([]string{"serve", "--listen", "127.0.0.1:0"}, tc.args...), exampleFilter)...)
		if r.code != exitTrouble || !strings.Contains(r.stderr, "pkbf: error: serve: "+tc.want+"\n") {
			t.Errorf("%s: exit %d, stderr %q; want %q", tc.name, r.code, r.stderr, tc.want)
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
		{"secret empty", []string{"--webhook-insecure", "--webhook-secret-file", write("empty", "\n")}, "--webhook-secret-file " + filepath.Join(dir, "empty") + ": the webhook secret is empty"},
		{"certificate missing", []string{"--tls-cert", missing, "--tls-key", notPEM}, "open " + missing + ": no such file"},
	} {
		r := runWith(t, nil, append(append([]string{"serve", "--listen", "127.0.0.1:0"}, tc.args...), exampleFilter)...)
		if r.code != exitTrouble || !strings.Contains(r.stderr, "pkbf: error: serve: "+tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", tc.name, r.code, r.stderr, tc.want)
		}
	}
}

// serve's help says where --webhook-secret-file applies: step-ca gives a
// secret only to a webhook made through its remote management; with a
// ca.json webhook the flag refuses every call (docs/stepca.md).
func TestServeWebhookSecretHelp(t *testing.T) {
	r := runWith(t, nil, "help", "serve")
	_, help, _ := strings.Cut(r.stdout, "--webhook-secret-file")
	help, _, _ = strings.Cut(help, "\n  -")
	if r.code != exitOK || !strings.Contains(help, "remote management") || !strings.Contains(help, "ca.json") {
		t.Errorf("pkbf help serve: exit %d, --webhook-secret-file's text %q; want it to say it is only for remote management, not ca.json", r.code, help)
	}
}
