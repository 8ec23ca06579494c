package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkbf/pkbf/internal/testkit"
)

// settledRSS waits until process pid's peak resident memory (VmHWM) has
// not grown for two seconds, at most a minute, and returns it.
func settledRSS(t *testing.T, pid int) int64 {
	peak, since := peakRSS(t, pid), time.Now()
	for deadline := time.Now().Add(time.Minute); time.Since(since) < 2*time.Second && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if now := peakRSS(t, pid); now > peak {
			peak, since = now, time.Now()
		}
	}
	return peak
}

// controlLines returns n authorized_keys lines, each an Ed25519 key with
// a comment of \x01 bytes as long as a line may be: each such byte is six
// in the JSON answer (\u0001).
func controlLines(t *testing.T, n int) []byte {
	key := strings.Fields(string(testkit.ReadFile(t, key("ed25519.pub"))))
	line := key[0] + " " + key[1] + " " + strings.Repeat("\x01", 65000-len(key[0])-len(key[1])-3) + "\n"
	return []byte(strings.Repeat(line, n))
}

// uploadUnread sends each of clients a POST /v1/check of body, declared
// length, and never reads the answers; it returns once every body is
// sent, leaving the connections open until the test ends.
func uploadUnread(t *testing.T, addr string, clients int, body []byte) {
	var wg sync.WaitGroup
	for range clients {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		wg.Go(func() {
			fmt.Fprintf(conn, "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(body))
			if _, err := conn.Write(body); err != nil {
				t.Errorf("upload: %v", err)
			}
		})
	}
	wg.Wait()
}

// metric reads one value of pkbf serve's /metrics, -1 if it is absent.
func metric(t *testing.T, client *http.Client, base, name string) float64 {
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// serveMemoryBound is what a test allows pkbf serve's peak memory under
// its default limits: its heap's limit (--max-body-memory, which bounds
// the bodies and answers held, and room for the rest: serveHeapRoom) and
// 32 MiB for what is not heap (the program's code, stacks, the filter).
const serveMemoryBound = 64<<20 + serveHeapRoom + 32<<20

// checkServeRSS holds a peak RSS to serveMemoryBound, but under the race
// detector, whose shadow memory multiplies a process's (a run of the
// tests without it holds the bound; this one checks the rest).
func checkServeRSS(t *testing.T, rss int64, what string) {
	t.Helper()
	switch {
	case testkit.RaceEnabled:
		t.Logf("race detector: peak RSS %d MiB %s not held to %d MiB", rss>>20, what, serveMemoryBound>>20)
	case rss > serveMemoryBound:
		t.Errorf("peak RSS %d MiB %s, want at most %d MiB", rss>>20, what, serveMemoryBound>>20)
	}
}

// Issue 48, item 13: 20 clients upload 42 authorized_keys lines each (2.7
// MB), every comment 65 000 bytes of \x01, and never read their answers
// (16 MB each, six bytes of JSON a comment byte). The answers are charged
// to the body budget, so pkbf serve's peak memory stays within its bound;
// before, it reached 674-800 MB.
func TestServeAnswersWithinTheBodyBudget(t *testing.T) {
	cmd, addr, _ := startServe(t, exampleFilter)
	uploadUnread(t, addr, 20, controlLines(t, 42))
	rss := settledRSS(t, cmd.Process.Pid)
	t.Logf("peak RSS %d MiB", rss>>20)
	checkServeRSS(t, rss, "with 20 unread answers of 16 MB")
}

// Issue 48, item 13: 32 clients upload 1 MB each (16 such lines) and
// never read their answers; an ordinary one-key check is answered at
// once: a check gives its slot back when its answer is made, not when a
// slow client has read it. Before, the check waited 57 s, for the write
// timeout to free a slot. (The client's 30 s timeout only ends the wait.)
func TestServeSlowReadersDoNotStarveChecks(t *testing.T) {
	cmd, addr, _ := startServe(t, exampleFilter)
	uploadUnread(t, addr, 32, controlLines(t, 16))
	settledRSS(t, cmd.Process.Pid)
	base := "http://" + addr
	client := &http.Client{Timeout: 30 * time.Second}
	if n := metric(t, client, base, "pkbf_requests_checking"); n != 0 {
		t.Errorf("%v requests hold a check slot while their clients do not read, want 0", n)
	}
	resp, err := client.Post(base+"/v1/check", "text/plain", bytes.NewReader(testkit.ReadFile(t, key("p256.pub"))))
	if err != nil {
		t.Fatalf("an ordinary check while 32 answers are unread: %v", err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(out), `"probably":true`) {
		t.Errorf("an ordinary check while 32 answers are unread: %d %s", resp.StatusCode, out)
	}
	t.Logf("peak RSS %d MiB", peakRSS(t, cmd.Process.Pid)>>20)
}

// h2Frame writes one HTTP/2 frame.
func h2Frame(w io.Writer, typ, flags byte, stream uint32, payload []byte) error {
	var h [9]byte
	h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	h[3], h[4] = typ, flags
	binary.BigEndian.PutUint32(h[5:], stream)
	_, err := w.Write(append(h[:], payload...))
	return err
}

// hpackLiteral appends a header field as HPACK's "literal without
// indexing, new name", without Huffman coding (RFC 7541, 6.2.2).
func hpackLiteral(b []byte, name, value string) []byte {
	b = append(b, 0)
	for _, s := range []string{name, value} {
		n := len(s)
		if n < 127 {
			b = append(b, byte(n))
		} else {
			b = append(b, 127)
			for n -= 127; n >= 128; n >>= 7 {
				b = append(b, byte(n%128+128))
			}
			b = append(b, byte(n))
		}
		b = append(b, s...)
	}
	return b
}

// h2Flood opens conns TLS connections to addr speaking HTTP/2 and, on
// each, streams requests: the headers of a POST /v1/check declaring a
// 100-byte body, with 8 KB of padding headers, and no body ever. Frames
// from the server are read and dropped (its SETTINGS acknowledged). The
// connections stay open until the test ends.
func h2Flood(t *testing.T, addr string, conns, streams int) {
	block := hpackLiteral(nil, ":method", "POST")
	block = hpackLiteral(block, ":scheme", "https")
	block = hpackLiteral(block, ":path", "/v1/check")
	block = hpackLiteral(block, ":authority", "127.0.0.1")
	block = hpackLiteral(block, "content-length", "100")
	block = hpackLiteral(block, "x-pad", strings.Repeat("p", 8<<10))
	h2FloodWith(t, addr, conns, streams, block, nil, 0)
}

// h2FloodWith is h2Flood with each stream's header block, the client's
// SETTINGS (6 bytes a setting) and data bytes of DATA sent on each
// stream after its headers.
func h2FloodWith(t *testing.T, addr string, conns, streams int, block, settings []byte, data int) {
	var wg sync.WaitGroup
	for range conns {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
			t.Fatalf("negotiated %q, want h2", p)
		}
		var mu sync.Mutex
		write := func(typ, flags byte, stream uint32, payload []byte) error {
			mu.Lock()
			defer mu.Unlock()
			return h2Frame(c, typ, flags, stream, payload)
		}
		io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
		write(0x4, 0, 0, settings)
		go func() {
			r := bufio.NewReader(c)
			var h [9]byte
			for {
				if _, err := io.ReadFull(r, h[:]); err != nil {
					return
				}
				n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
				if _, err := r.Discard(n); err != nil {
					return
				}
				if h[3] == 0x4 && h[4]&1 == 0 {
					write(0x4, 1, 0, nil) // SETTINGS ACK
				}
			}
		}()
		wg.Go(func() {
			for s := range streams {
				if err := write(0x1, 0x4, uint32(2*s+1), block); err != nil { // HEADERS, END_HEADERS
					return
				}
				if data > 0 && write(0x0, 0, uint32(2*s+1), make([]byte, data)) != nil { // DATA
					return
				}
			}
		})
	}
	wg.Wait()
}

// Issue 48, item 14: with --tls-cert, 200 HTTP/2 connections each open
// 250 streams of POST /v1/check headers (8 KB, content-length: 100) and
// send no body. Requests are bounded across connections and streams (a
// few streams a connection, --max-conns requests in all), /metrics counts
// those held and those refused, and pkbf serve's peak memory stays within
// its bound; before, 50 000 requests were held until the read timeout, in
// 1.07 GB, and /metrics showed nothing busy.
func TestServeHTTP2StreamsBounded(t *testing.T) {
	dir := t.TempDir()
	k, c := testkit.Cert(t, "127.0.0.1", nil, nil, func(c *x509.Certificate) { c.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)} })
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cmd, addr, _ := startServe(t, "--tls-cert", testkit.WritePEM(t, dir, "serve.crt", "CERTIFICATE", c.Raw), "--tls-key", testkit.WritePEM(t, dir, "serve.key", "PRIVATE KEY", der), exampleFilter)
	h2Flood(t, addr, 200, 250)
	rss := settledRSS(t, cmd.Process.Pid)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	base := "https://" + addr
	held, refused := metric(t, client, base, "pkbf_requests_in_flight"), metric(t, client, base, "pkbf_requests_refused_total")
	t.Logf("peak RSS %d MiB; %v requests in flight, %v refused", rss>>20, held, refused)
	// The request to /metrics counts too, in the room kept for monitoring.
	if held < 1 || held > 1024+1 || refused < 1 {
		t.Errorf("/metrics: %v requests in flight, %v refused; want some and at most --max-conns (1024) and itself, and the rest refused", held, refused)
	}
	checkServeRSS(t, rss, "under 200 x 250 HTTP/2 streams")
}

// Red team B1 (issue 48): 1 000 HTTP/2 connections each open 16 GET
// streams with 8 KB of headers and 4 KiB of DATA no handler reads, and
// let no answer through (SETTINGS_INITIAL_WINDOW_SIZE 0: a handler waits
// for the write timeout). Every request counts, GET too, until its
// answer is sent, and pkbf serve's peak memory stays within its bound;
// before, GET streams were not counted, and such floods held 1.34-2.19
// GB while /metrics showed nothing in flight.
func TestServeHTTP2GetStreamsBounded(t *testing.T) {
	dir := t.TempDir()
	k, c := testkit.Cert(t, "127.0.0.1", nil, nil, func(c *x509.Certificate) { c.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)} })
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cmd, addr, _ := startServe(t, "--tls-cert", testkit.WritePEM(t, dir, "serve.crt", "CERTIFICATE", c.Raw), "--tls-key", testkit.WritePEM(t, dir, "serve.key", "PRIVATE KEY", der), exampleFilter)
	block := hpackLiteral(nil, ":method", "GET")
	block = hpackLiteral(block, ":scheme", "https")
	block = hpackLiteral(block, ":path", "/v1/check") // 405, with a body to send
	block = hpackLiteral(block, ":authority", "127.0.0.1")
	block = hpackLiteral(block, "x-pad", strings.Repeat("p", 8<<10))
	h2FloodWith(t, addr, 1000, 16, block, []byte{0, 4, 0, 0, 0, 0}, 4<<10) // SETTINGS_INITIAL_WINDOW_SIZE 0
	rss := settledRSS(t, cmd.Process.Pid)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	base := "https://" + addr
	held, refused := metric(t, client, base, "pkbf_requests_in_flight"), metric(t, client, base, "pkbf_requests_refused_total")
	t.Logf("peak RSS %d MiB; %v requests in flight, %v refused", rss>>20, held, refused)
	// The request to /metrics counts too, in the room kept for monitoring.
	// The streams held let go 10 s after they were sent (an answer's
	// stall limit), which a slow flood (the race detector's) outlasts: so
	// what shows that every GET counts is how many were refused (none
	// before), at most 1,024 places taken by each 10 s of the flood.
	if held > 1024+1 || refused < 10000 {
		t.Errorf("/metrics: %v requests in flight, %v refused; want at most --max-conns (1024) and itself, and most of the 16,000 refused", held, refused)
	}
	checkServeRSS(t, rss, "under 1 000 x 16 HTTP/2 GET streams whose answers cannot be sent")
}

// Red team R5, B1: HTTP/2 streams whose client opens no window for their
// answers, sent once, hold every request's place, monitoring's too, for
// as long as an answer may wait for its client (10 s), not the whole
// write timeout (60 s); then checks are answered again.
func TestServeStalledStreamsLetGo(t *testing.T) {
	dir := t.TempDir()
	k, c := testkit.Cert(t, "127.0.0.1", nil, nil, func(c *x509.Certificate) { c.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)} })
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	_, addr, _ := startServe(t, "--max-conns", "8", "--tls-cert", testkit.WritePEM(t, dir, "serve.crt", "CERTIFICATE", c.Raw), "--tls-key", testkit.WritePEM(t, dir, "serve.key", "PRIVATE KEY", der), exampleFilter)
	block := hpackLiteral(nil, ":method", "GET")
	block = hpackLiteral(block, ":scheme", "https")
	block = hpackLiteral(block, ":path", "/metrics")
	block = hpackLiteral(block, ":authority", "127.0.0.1")
	start := time.Now()
	h2FloodWith(t, addr, 2, 16, block, []byte{0, 4, 0, 0, 0, 0}, 0) // SETTINGS_INITIAL_WINDOW_SIZE 0: 32 streams, 24 places
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	status := func() int {
		resp, err := client.Get("https://" + addr + "/healthz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(); got != http.StatusServiceUnavailable {
		t.Fatalf("/healthz with every place held by stalled streams: %d, want 503", got)
	}
	for status() != http.StatusOK {
		if time.Since(start) > 40*time.Second {
			t.Fatal("/healthz still refused 40 s after the stalled streams were sent: they hold their places past the 10 s an answer may wait")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("answered again %v after the streams were sent", time.Since(start).Round(100*time.Millisecond))
}
