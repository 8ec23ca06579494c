package pkbfhttp

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

// Requests an attacker would send to serve.

func hostileService(t *testing.T, l Limits) (*httptest.Server, *Service) {
	live, err := pkbf.OpenLive(exampleFilter, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	s := newService(t, live, l)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv, s
}

// A request may hold at most the key limit: 8 MiB of empty DER objects
// (4M keys) is refused after the limit's worth of scanning, in memory a
// small multiple of the body.
func TestServeKeyLimit(t *testing.T) {
	line := testkit.ReadFile(t, key("p384.pub"))
	srv, _ := hostileService(t, Limits{MaxBody: 16 << 20, MaxInFlight: 4, MaxKeys: 3})
	if code, out := testkit.Post(t, srv.URL+"/v1/check", bytes.Repeat(line, 3)); code != 200 || strings.Count(out, "\n") != 3 {
		t.Errorf("3 keys with a limit of 3: status %d, %q", code, out)
	}
	code, out := testkit.Post(t, srv.URL+"/v1/check", bytes.Repeat(line, 4))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(out, "more than 3 keys") {
		t.Errorf("4 keys with a limit of 3: status %d, %q", code, out)
	}

	srv, _ = hostileService(t, Limits{MaxBody: 16 << 20, MaxInFlight: 4, MaxKeys: 10000})
	empty := bytes.Repeat([]byte{0x30, 0}, 4<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	code, out = testkit.Post(t, srv.URL+"/v1/check", empty)
	runtime.ReadMemStats(&after)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(out, "more than 10000 keys") {
		t.Errorf("8 MiB of empty DER objects: status %d, %.200q", code, out)
	}
	// The client's copy, the server's and the items: well under 5 bodies.
	if used := after.TotalAlloc - before.TotalAlloc; used > 5*uint64(len(empty)) {
		t.Errorf("8 MiB of empty DER objects: %d MiB allocated", used>>20)
	}
	t.Logf("8 MiB of empty DER objects: %v, %d MiB allocated", time.Since(start), (after.TotalAlloc-before.TotalAlloc)>>20)
}

// A request takes one of the slots that bound the checks at once only
// when its whole body has arrived: clients sending their bodies a byte a
// second hold only their own connections.
func TestServeSlowBodiesHoldNoSlot(t *testing.T) {
	srv, _ := hostileService(t, Limits{MaxBody: 1 << 20, MaxInFlight: 1, MaxKeys: 10000})
	for range 3 {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprint(conn, "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nssh-")
	}
	time.Sleep(100 * time.Millisecond) // the slow requests reach the handler
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Post(srv.URL+"/v1/check", "text/plain", bytes.NewReader(testkit.ReadFile(t, key("p384.pub"))))
	if err != nil {
		t.Fatalf("a normal request behind three slow bodies: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a normal request behind three slow bodies: status %d", resp.StatusCode)
	}
}

// costlyPFX is a PKCS#12 file whose MAC asks for 2^21 iterations, tried
// twice for the empty password: about a second of work for 90 bytes.
func costlyPFX() []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1Int64(3)
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1ObjectIdentifier([]int{1, 2, 840, 113549, 1, 7, 1})
			b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
				b.AddASN1OctetString([]byte{0x30, 0})
			})
		})
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
					b.AddASN1ObjectIdentifier([]int{1, 3, 14, 3, 2, 26})
					b.AddASN1NULL()
				})
				b.AddASN1OctetString(make([]byte, 20))
			})
			b.AddASN1OctetString([]byte("salt"))
			b.AddASN1Int64(1 << 21)
		})
	})
	return b.BytesOrPanic()
}

// A request of costly objects stops between two of them when its client
// goes away, and frees its slot.
func TestServeStopsWhenClientLeaves(t *testing.T) {
	srv, s := hostileService(t, Limits{MaxBody: 1 << 20, MaxInFlight: 1, MaxKeys: 10000})
	body := bytes.Repeat(costlyPFX(), 60) // about 20 s of work here
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/check", bytes.NewReader(body))
	start := time.Now()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the costly request answered %d within 300 ms", resp.StatusCode)
	}
	for s.abandoned.Load() == 0 && time.Since(start) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if s.abandoned.Load() != 1 {
		t.Fatalf("the server still works on a request its client left %v ago", time.Since(start))
	}
	// The slot is free: a normal request is answered.
	if code, _ := testkit.Post(t, srv.URL+"/v1/check", testkit.ReadFile(t, key("p384.pub"))); code != 200 {
		t.Errorf("a request after the costly one: status %d", code)
	}
	t.Logf("the server stopped %v after the request began", time.Since(start))
}
