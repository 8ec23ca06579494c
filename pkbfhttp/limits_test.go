package pkbfhttp

import (
	"bufio"
	"bytes"
	"context"
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
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

// Memory held for request bodies, and connections, are bounded across
// all clients.

// rawRequest sends text on a new connection and returns it, open.
func rawRequest(t *testing.T, addr, text string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, text); err != nil {
		t.Fatal(err)
	}
	return conn
}

// reply reads what the server sends on conn within a second.
func reply(conn net.Conn) string {
	conn.SetReadDeadline(time.Now().Add(time.Second))
	b, _ := io.ReadAll(conn)
	return string(b)
}

// A body over the limit is refused from its declared length alone: a
// client that asked for "100 Continue" never gets it.
func TestServeExpectContinueRefusedEarly(t *testing.T) {
	srv, _ := hostileService(t, Limits{MaxBody: 8 << 20, MaxInFlight: 4, MaxKeys: 10000})
	conn := rawRequest(t, srv.Listener.Addr().String(),
		"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\nExpect: 100-continue\r\n\r\n")
	got := reply(conn)
	if !strings.HasPrefix(got, "HTTP/1.1 413 ") || strings.Contains(got, "100 Continue") || !strings.Contains(got, "100000000 bytes is larger than 8388608") {
		t.Errorf("reply %q, want a 413 and no 100 Continue", got)
	}
}

// Bodies take their declared length from the budget before they are
// read: one more than it holds gets 503 at once, a small request still
// goes through, and the bytes come back when the requests end.
func TestServeBodyBudget(t *testing.T) {
	srv, s := hostileService(t, Limits{MaxBody: 1 << 20, MaxBodyMemory: 4 << 20, MaxInFlight: 4, MaxKeys: 10000})
	addr := srv.Listener.Addr().String()
	var held []net.Conn
	for range 3 { // 3 MiB of the 3.5 large bodies may take
		held = append(held, rawRequest(t, addr, "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\nssh-"))
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.bodies.held() != 3<<20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := s.bodies.held(); got != 3<<20 {
		t.Fatalf("%d bytes held by three bodies in progress, want %d", got, 3<<20)
	}
	over := rawRequest(t, addr, "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\nExpect: 100-continue\r\n\r\n")
	if got := reply(over); !strings.HasPrefix(got, "HTTP/1.1 503 ") || !strings.Contains(got, "Retry-After: 1") || strings.Contains(got, "100 Continue") {
		t.Errorf("a fourth large body: %q, want 503 with Retry-After", got)
	}
	chunked := rawRequest(t, addr, "POST /v1/check HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	fmt.Fprintf(chunked, "%x\r\n%s\r\n", 600<<10, bytes.Repeat([]byte("a"), 600<<10))
	if got := reply(chunked); !strings.HasPrefix(got, "HTTP/1.1 503 ") {
		t.Errorf("a chunked body past the budget: %.100q, want 503", got)
	}
	if code, out := testkit.Post(t, srv.URL+"/v1/check", testkit.ReadFile(t, key("p384.pub"))); code != 200 || !strings.Contains(out, `"probably":`) {
		t.Errorf("a small request beside the large ones: %d %q", code, out)
	}
	for _, c := range held {
		c.Close()
	}
	for s.bodies.held() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := s.bodies.held(); got != 0 {
		t.Errorf("%d bytes still held after every request ended", got)
	}
	if s.busy.Load() != 2 {
		t.Errorf("busy counter %d, want 2", s.busy.Load())
	}
}

// A body within MaxBody is never told to retry when no other request
// holds the budget, chunked or not, however small the limits (serve
// --max-body 2000 --max-body-memory 4000 answered every chunked request
// 503 Retry-After: 1, its first read taking 64 KiB of the 4000 bytes), or
// however close MaxBody is to MaxBodyMemory (a 1 MiB body under 1 MiB of
// each was kept to 7/8 of it). One byte over MaxBody is 413.
func TestServeBodyWithinLimitsFits(t *testing.T) {
	pub := testkit.ReadFile(t, key("p256.pub"))
	body := func(n int) []byte { // the key, then white space up to n bytes
		return append(bytes.Clone(pub), bytes.Repeat([]byte("\n"), n-len(pub))...)
	}
	for _, tc := range []struct {
		name            string
		maxBody, memory int64
		size            int
		chunked         bool
		want            int
	}{
		{"chunked, small limits", 2000, 4000, len(pub), true, 200},
		{"chunked, small limits, MaxBody bytes", 2000, 4000, 2000, true, 200},
		{"chunked, small limits, one byte over", 2000, 4000, 2001, true, 413},
		{"chunked, MaxBody the whole memory", 2000, 2000, 2000, true, 200},
		{"chunked, 1 MiB of 1 MiB", 1 << 20, 1 << 20, 1 << 20, true, 200},
		{"chunked, 1 MiB of 1 MiB, one byte over", 1 << 20, 1 << 20, 1<<20 + 1, true, 413},
		{"chunked, 1 MiB of 4 MiB", 1 << 20, 4 << 20, 1 << 20, true, 200},
		{"declared, small limits, MaxBody bytes", 2000, 4000, 2000, false, 200},
		{"declared, 1 MiB of 1 MiB", 1 << 20, 1 << 20, 1 << 20, false, 200},
		{"declared, 1 MiB of 1 MiB, one byte over", 1 << 20, 1 << 20, 1<<20 + 1, false, 413},
	} {
		srv, s := hostileService(t, Limits{MaxBody: tc.maxBody, MaxBodyMemory: tc.memory, MaxInFlight: 4, MaxKeys: 10000})
		var r io.Reader = bytes.NewReader(body(tc.size))
		if tc.chunked {
			r = struct{ io.Reader }{r} // no length: sent chunked
		}
		resp, err := http.Post(srv.URL+"/v1/check", "text/plain", r)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || tc.want == 200 && !bytes.Contains(b, []byte(`"probably":true`)) {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, b, tc.want)
		}
		if got := s.bodies.held(); got != 0 || s.busy.Load() != 0 {
			t.Errorf("%s: %d bytes held after the request, %d told to retry", tc.name, got, s.busy.Load())
		}
	}
}

// A chunked body is read in buffers that double, so its copies cost
// memory linear in its size: grown 1 MiB at a time, each step copied the
// whole body again (a 32 MiB body allocated 529 MiB).
func TestChunkedBodyAllocatesLinearly(t *testing.T) {
	live, err := pkbf.OpenLive(exampleFilter, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	const size = 32 << 20
	s := newService(t, live, Limits{MaxBody: size, MaxBodyMemory: size, MaxInFlight: 4, MaxKeys: 10000})
	r := httptest.NewRequest("POST", "/v1/check", struct{ io.Reader }{bytes.NewReader(bytes.Repeat([]byte("k"), size))})
	r.ContentLength = -1 // chunked
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	body, release, ok := s.readBody(httptest.NewRecorder(), r)
	runtime.ReadMemStats(&after)
	if !ok || len(body) != size {
		t.Fatalf("readBody: ok %v, %d bytes", ok, len(body))
	}
	release()
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*size {
		t.Errorf("reading a %d MiB chunked body allocated %d MiB", size>>20, got>>20)
	}
}

// One connection more than --max-conns, with every connection busy, is
// answered 503 and closed, not left waiting with its memory held.
func TestServeConnectionLimit(t *testing.T) {
	live, err := pkbf.OpenLive(exampleFilter, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	s := newService(t, live, Limits{MaxBody: 1 << 20, MaxBodyMemory: 8 << 20, MaxConns: 3, MaxInFlight: 4, MaxKeys: 10000})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	s.mux.HandleFunc("/test/hold", func(w http.ResponseWriter, r *http.Request) { <-release })
	srv := s.Server(log.New(io.Discard, "", 0))
	go srv.Serve(s.Listener(ln))
	defer srv.Close()
	addr := ln.Addr().String()
	for range 3 {
		rawRequest(t, addr, "GET /test/hold HTTP/1.1\r\nHost: x\r\n\r\n") // busy, held
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.inFlight.Load() != 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	extra := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if got := reply(extra); !strings.HasPrefix(got, "HTTP/1.1 503 ") || !strings.Contains(got, "too many connections") {
		t.Errorf("a fourth connection: %q", got)
	}
	if s.conns.Load() != 3 || s.connsRefused.Load() != 1 {
		t.Errorf("%d connections, %d refused; want 3 and 1", s.conns.Load(), s.connsRefused.Load())
	}
}

// A filter file truncated in place is not valid: healthz and readyz say so,
// and recover once a good file is renamed over it; status describes the
// state now, not past reload errors.
func TestServeHealthFollowsFilter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	good := testkit.ReadFile(t, exampleFilter)
	os.WriteFile(path, good, 0o644)
	live, err := pkbf.OpenLive(path, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	srv := httptest.NewServer(newService(t, live, Limits{MaxBody: 1 << 20, MaxInFlight: 4, MaxKeys: 10000}))
	defer srv.Close()
	get := func(p string) (int, string) {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	os.Truncate(path, 100)
	live.Reload() // fails: the file there is not valid
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := get(p); code != 503 || !strings.Contains(body, "the filter file is not valid") || !strings.Contains(body, "it is 100 bytes") {
			t.Errorf("%s with the filter truncated: %d %q", p, code, body)
		}
	}
	if _, body := get("/v1/status"); !strings.Contains(body, `"filter_error"`) || !strings.Contains(body, `"last_reload_error"`) {
		t.Errorf("status with the filter truncated: %s", body)
	}
	tmp := filepath.Join(dir, "new")
	os.WriteFile(tmp, good, 0o644)
	os.Rename(tmp, path)
	if err := live.Reload(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := get(p); code != 200 {
			t.Errorf("%s after a good file replaced it: %d %q", p, code, body)
		}
	}
	_, body := get("/v1/status")
	var st map[string]any
	json.Unmarshal([]byte(body), &st)
	if _, ok := st["last_reload_error"]; ok || st["filter_error"] != nil || st["reloads"] != float64(1) || st["reload_errors"] != float64(1) {
		t.Errorf("status after a good reload: %s", body)
	}
}

// Shutdown with a client mid-upload: the context ends, the request is
// cut off, its connection closed, and Shutdown says what was cut; readyz
// answers 503 from the start.
func TestServeShutdownSaysWhatWasCut(t *testing.T) {
	live, err := pkbf.OpenLive(exampleFilter, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	s := newService(t, live, Limits{MaxBody: 1 << 20, MaxInFlight: 4, MaxKeys: 10000})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.Server(log.New(io.Discard, "", 0))
	go srv.Serve(s.Listener(ln))
	conn := rawRequest(t, ln.Addr().String(), "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nssh-")
	for s.receiving.Load() != 1 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	cut, err := s.Shutdown(ctx, srv)
	if !errors.Is(err, context.DeadlineExceeded) || cut != (InFlight{Receiving: 1}) {
		t.Errorf("Shutdown: %+v, %v; want one request cut off receiving its body", cut, err)
	}
	if !s.shuttingDown.Load() {
		t.Error("readyz does not answer shutting down")
	}
	if _, err := bufio.NewReader(conn).ReadByte(); err == nil {
		t.Error("the cut-off client's connection is still open")
	}
}

// An encrypted key in a request gets an error that says what to send
// instead, not a passphrase option serve does not have.
func TestServeEncryptedKeyHint(t *testing.T) {
	srv, _ := hostileService(t, Limits{MaxBody: 1 << 20, MaxInFlight: 4, MaxKeys: 10000})
	code, out := testkit.Post(t, srv.URL+"/v1/check", testkit.ReadFile(t, filepath.Join(keysDir, "more", "chain-password.p12")))
	if code != http.StatusBadRequest || !strings.Contains(out, "pkbf serve takes no passphrase: send the public key or the certificate") || strings.Contains(out, "--passphrase-file") {
		t.Errorf("%d %s", code, out)
	}
}

// Issue 48, item 13: an answer is charged to the body budget with its
// body: one that fits is answered, one that can never fit (here six times
// its 1 MiB body, a comment's control characters written \u0001) is 413,
// and the room comes back either way.
func TestServeAnswerCharged(t *testing.T) {
	srv, s := hostileService(t, Limits{MaxBody: 1 << 20, MaxBodyMemory: 2 << 20, MaxInFlight: 4, MaxKeys: 10000})
	fields := strings.Fields(string(testkit.ReadFile(t, key("ed25519.pub"))))
	line := fields[0] + " " + fields[1] + " " + strings.Repeat("\x01", 65000) + "\n"
	for _, tc := range []struct {
		lines int
		code  int
		want  string
	}{
		{2, 200, `\u0001\u0001`},
		{16, 413, "the answer would be larger than"},
	} {
		code, out := testkit.Post(t, srv.URL+"/v1/check", []byte(strings.Repeat(line, tc.lines)))
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%d lines: %d %.200q, want %d and %q", tc.lines, code, out, tc.code, tc.want)
		}
		deadline := time.Now().Add(5 * time.Second) // the handler ends after its client has the answer
		for s.bodies.held() != 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if got := s.bodies.held(); got != 0 {
			t.Errorf("%d lines: %d bytes still held once answered", tc.lines, got)
		}
	}
}

// An invalid file renamed over the path leaves /healthz 200: the copy in
// use is intact, and every instance out of rotation for one bad
// publication would be an outage (red team L1). /v1/status says why,
// and /metrics' pkbf_reload_failing is 1 until a valid file is loaded.
func TestServeHealthAfterBadPublication(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	good := testkit.ReadFile(t, exampleFilter)
	os.WriteFile(path, good, 0o644)
	live, err := pkbf.OpenLive(path, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	srv := httptest.NewServer(newService(t, live, Limits{MaxBody: 1 << 20, MaxInFlight: 4, MaxKeys: 10000}))
	defer srv.Close()
	publish := func(b []byte) error {
		tmp := filepath.Join(dir, "new")
		os.WriteFile(tmp, b, 0o644)
		os.Rename(tmp, path)
		return live.Reload()
	}
	if err := publish(make([]byte, len(good))); err == nil {
		t.Fatal("a file of zeros was loaded")
	}
	if code, body := get(t, srv.URL+"/healthz"); code != 200 {
		t.Errorf("/healthz after a bad publication: %d %q, want 200", code, body)
	}
	if _, body := get(t, srv.URL+"/v1/status"); !strings.Contains(body, `"last_reload_error"`) {
		t.Errorf("status after a bad publication: %s", body)
	}
	if _, body := get(t, srv.URL+"/metrics"); !strings.Contains(body, "\npkbf_reload_failing 1\n") {
		t.Errorf("metrics after a bad publication lack pkbf_reload_failing 1:\n%s", body)
	}
	if err := publish(good); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, srv.URL+"/metrics"); !strings.Contains(body, "\npkbf_reload_failing 0\n") {
		t.Errorf("metrics after a good publication lack pkbf_reload_failing 0:\n%s", body)
	}
}
