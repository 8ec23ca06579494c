package pkbfhttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/stepca"
)

// Floods of the red team's third round (issue 48): each must leave the
// server's memory and its ordinary clients' service within bounds.

// openExample is a Live of the example filter, closed with the test.
func openExample(t *testing.T) *pkbf.Live {
	t.Helper()
	live, err := pkbf.OpenLive(exampleFilter, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	return live
}

// waitFor polls cond for up to 5 s and reports whether it came true.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// Every request counts against MaxConns until its answer is sent, GET
// ones too, over HTTP/2 as over HTTP/1 (red team B1: HTTP/2 GET streams
// whose answers could not be sent were not counted, and held 2 GB), with
// room kept beyond it for /healthz and the other monitoring paths.
func TestServeCountsEveryRequest(t *testing.T) {
	s := newService(t, openExample(t), Limits{MaxBody: 1 << 20, MaxConns: 2, MaxInFlight: 4, MaxKeys: 10000})
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	s.mux.HandleFunc("/test/hold", func(w http.ResponseWriter, r *http.Request) { <-release })
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = s.Server(log.New(io.Discard, "", 0))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	defer free()
	client := srv.Client()
	held := make(chan string, 2)
	for range 2 {
		go func() {
			resp, err := client.Get(srv.URL + "/test/hold")
			if err != nil {
				held <- err.Error()
				return
			}
			resp.Body.Close()
			held <- resp.Proto + " " + resp.Status
		}()
	}
	if !waitFor(func() bool { return s.inFlight.Load() == 2 }) {
		t.Fatalf("%d requests in flight with two GETs held, want 2", s.inFlight.Load())
	}
	resp, err := client.Get(srv.URL + "/test/hold")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("a third GET with two held: %s %s, want HTTP/2 503 with Retry-After", resp.Proto, resp.Status)
	}
	for _, p := range []string{"/healthz", "/metrics"} {
		resp, err := client.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s with every request's place taken: %s, want 200 from the room kept for it", p, resp.Status)
		}
		if p == "/metrics" && !strings.Contains(string(b), "pkbf_requests_in_flight 3\n") {
			t.Errorf("/metrics does not count the two GETs held and itself:\n%s", b)
		}
	}
	free()
	for range 2 {
		if got := <-held; got != "HTTP/2.0 200 OK" {
			t.Errorf("a held GET: %s", got)
		}
	}
	if !waitFor(func() bool { return s.inFlight.Load() == 0 }) || s.requestsRefused.Load() != 1 {
		t.Errorf("%d requests in flight after all, %d refused; want 0 and 1", s.inFlight.Load(), s.requestsRefused.Load())
	}
}

// Headers are bounded (16 KiB) over both protocols, and HTTP/2's buffers
// per connection are the least it allows (red team B1: 60 KB headers on
// 16 streams of 300 connections held 403 MB).
func TestServeBoundsHeaders(t *testing.T) {
	s := newService(t, openExample(t), Limits{MaxBody: 1 << 20, MaxInFlight: 4, MaxKeys: 10000})
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = s.Server(log.New(io.Discard, "", 0))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
		client := srv.Client()
		if proto == "HTTP/1.1" {
			tr := client.Transport.(*http.Transport).Clone()
			tr.Protocols = new(http.Protocols)
			tr.Protocols.SetHTTP1(true)
			tr.TLSClientConfig.NextProtos = nil
			client = &http.Client{Transport: tr}
		}
		for _, size := range []int{8 << 10, 40 << 10} {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/healthz", nil)
			req.Header.Set("X-Pad", strings.Repeat("a", size))
			resp, err := client.Do(req)
			ok := err == nil && resp.StatusCode == 200
			if err == nil {
				resp.Body.Close()
				if resp.Proto[:6] != proto[:6] {
					t.Fatalf("asked for %s, got %s", proto, resp.Proto)
				}
			}
			if ok != (size < maxHeader) {
				t.Errorf("%s, %d bytes of headers: %v %v", proto, size, resp, err)
			}
		}
	}
	h := s.Server(nil).HTTP2
	if h.MaxReceiveBufferPerConnection > 64<<10 || h.MaxReceiveBufferPerStream > 64<<10 || h.MaxReadFrameSize > 16<<10 ||
		h.MaxDecoderHeaderTableSize == 0 || h.MaxDecoderHeaderTableSize > 4<<10 {
		t.Errorf("HTTP/2 holds more than the least it may: %+v", h)
	}
}

// The webhook's body is charged to MaxBodyMemory as /v1/check's are
// (red team B2: 1 MiB webhook bodies on 1024 streams held 1.38 GB while
// the budget showed none): with the budget full, it is refused unread.
func TestServeWebhookBodyCharged(t *testing.T) {
	live := openExample(t)
	s, err := New(live, Options{Limits: Limits{MaxBody: 1 << 20, MaxBodyMemory: 4 << 20, MaxInFlight: 4, MaxKeys: 10000},
		StepCA: stepca.NewHandler(keycheck.New(live, keycheck.Options{}), stepca.Options{Unauthenticated: true})})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	body := []byte(`{"x509Certificate":{"publicKey":"` + base64.StdEncoding.EncodeToString(testkit.ReadFile(t, key("p384.spki.der"))) + `"}}`)
	full := s.bodies.size
	if !s.bodies.take(full, false) {
		t.Fatal("the budget is not empty")
	}
	if code, out := testkit.Post(t, srv.URL+StepCAPath, body); code != http.StatusServiceUnavailable || !strings.Contains(out, "request bodies") {
		t.Errorf("the webhook with the body budget full: %d %s, want 503", code, out)
	}
	s.bodies.give(full)
	if code, out := testkit.Post(t, srv.URL+StepCAPath, body); code != 200 || out != `{"allow":true}`+"\n" {
		t.Errorf("the webhook with the budget free: %d %s, want allowed", code, out)
	}
	if got := s.bodies.held(); got != 0 {
		t.Errorf("%d bytes held after the webhook's calls", got)
	}
}

// A request's PKCS#12 files may ask for at most MaxKDFWork iterations in
// all (413), and requests that derive keys have slots of their own, so
// that they cannot keep ordinary checks waiting (red team C1: 32 requests
// of 60 files of 2^21 iterations kept every check waiting 60 s).
func TestServeCostlyRequestsBounded(t *testing.T) {
	// MaxInFlight 4: one slot for requests that derive keys. The default
	// work bound is two costlyPFX.
	srv, s := hostileService(t, Limits{MaxBody: 1 << 20, MaxInFlight: 4, MaxKeys: 10000})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/check", bytes.NewReader(bytes.Repeat(costlyPFX(), 2)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	if !waitFor(func() bool { return s.checking.Load() == 1 }) {
		t.Fatal("the first costly request is not being checked")
	}
	code, out := testkit.Post(t, srv.URL+"/v1/check", costlyPFX())
	if code != http.StatusServiceUnavailable || !strings.Contains(out, "derive keys") {
		t.Errorf("a second costly request beside the first: %d %q, want 503", code, out)
	}
	if code, out := testkit.Post(t, srv.URL+"/v1/check", testkit.ReadFile(t, key("p384.pub"))); code != 200 || !strings.Contains(out, `"probably":`) {
		t.Errorf("an ordinary check beside a costly one: %d %q", code, out)
	}
	if code := <-first; code != http.StatusBadRequest { // the files hold no key
		t.Errorf("two costly files, within the bound: %d, want them read (400: no key in them)", code)
	}
	code, out = testkit.Post(t, srv.URL+"/v1/check", bytes.Repeat(costlyPFX(), 3))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(out, "key derivation") {
		t.Errorf("three costly files, past the bound: %d %q, want 413", code, out)
	}
	if got := s.kdfRefused.Load(); got != 2 {
		t.Errorf("%d requests counted as refused for their key derivations, want 2", got)
	}
}

// At MaxConns the connection idle the longest makes room for a new one
// (red team C2: 1024 idle keep-alive connections held every other client
// out for 120 s).
func TestServeIdleConnectionsMakeRoom(t *testing.T) {
	s := newService(t, openExample(t), Limits{MaxBody: 1 << 20, MaxConns: 3, MaxInFlight: 4, MaxKeys: 10000})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.Server(log.New(io.Discard, "", 0))
	go srv.Serve(s.Listener(ln))
	defer srv.Close()
	addr := ln.Addr().String()
	var idle []net.Conn
	for range 3 {
		c := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		b := make([]byte, 4096)
		if n, err := c.Read(b); err != nil || !strings.HasPrefix(string(b[:n]), "HTTP/1.1 200 ") {
			t.Fatalf("a first request: %q %v", b[:n], err)
		}
		idle = append(idle, c)
	}
	var got string
	waitFor(func() bool {
		got = reply(rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
		return strings.HasPrefix(got, "HTTP/1.1 200 ")
	})
	if !strings.HasPrefix(got, "HTTP/1.1 200 ") {
		t.Fatalf("a fourth connection beside three idle ones: %q", got)
	}
	closed := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed != 1 || s.connsEvicted.Load() != 1 {
		t.Errorf("%d idle connections closed, %d evicted; want 1 and 1", closed, s.connsEvicted.Load())
	}
}

// A connection refused over TLS is closed, not answered in plaintext its
// client would read as a broken handshake (red team C2: curl exit 35).
func TestServeRefusalOverTLS(t *testing.T) {
	s := newService(t, openExample(t), Limits{MaxBody: 1 << 20, MaxConns: 1, MaxInFlight: 4, MaxKeys: 10000})
	release := make(chan struct{})
	defer close(release)
	s.mux.HandleFunc("/test/hold", func(w http.ResponseWriter, r *http.Request) { <-release })
	key, cert := testkit.Cert(t, "127.0.0.1", nil, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.Server(log.New(io.Discard, "", 0))
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key}}}
	go srv.ServeTLS(s.Listener(ln), "", "")
	defer srv.Close()
	addr := ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	go client.Get("https://" + addr + "/test/hold") // busy: held, not evicted
	if !waitFor(func() bool { return s.inFlight.Load() == 1 }) {
		t.Fatal("the first connection's request is not held")
	}
	if got := reply(rawRequest(t, addr, "")); got != "" || s.connsRefused.Load() != 1 {
		t.Errorf("a connection past the limit over TLS: %q (%d refused), want it closed unanswered", got, s.connsRefused.Load())
	}
}

// Connections that send nothing, not even a TLS handshake, are idle from
// the moment they are accepted: at the limit they make room as idle
// keep-alives do (red team R5 A1: 1,024 silent connections, each closed
// after 5 s and opened again, refused every other client, step-ca's
// webhook included).
func TestServeSilentConnectionsMakeRoom(t *testing.T) {
	key, cert := testkit.Cert(t, "127.0.0.1", nil, nil, nil)
	for _, overTLS := range []bool{false, true} {
		s := newService(t, openExample(t), Limits{MaxBody: 1 << 20, MaxConns: 3, MaxInFlight: 4, MaxKeys: 10000})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := s.Server(log.New(io.Discard, "", 0))
		base := "http://" + ln.Addr().String()
		if overTLS {
			srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key}}}
			go srv.ServeTLS(s.Listener(ln), "", "")
			base = "https://" + ln.Addr().String()
		} else {
			go srv.Serve(s.Listener(ln))
		}
		defer srv.Close()
		for range 3 {
			rawRequest(t, ln.Addr().String(), "")
		}
		if !waitFor(func() bool { return s.conns.Load() == 3 }) {
			t.Fatalf("TLS %v: %d connections held, want the 3 silent ones", overTLS, s.conns.Load())
		}
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := client.Get(base + "/healthz")
		if err != nil {
			t.Fatalf("TLS %v: a client beside 3 silent connections at the limit: %v", overTLS, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || s.connsEvicted.Load() != 1 {
			t.Errorf("TLS %v: a client beside 3 silent connections: %s, %d evicted; want 200 and 1", overTLS, resp.Status, s.connsEvicted.Load())
		}
	}
}
