package update

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

// makeFilter returns a filter file with hash length l, holding keys, with
// the given revision and update time.
func makeFilter(t testing.TB, rev uint32, updated int64, l int, keys ...string) []byte {
	t.Helper()
	return makeFilterK(t, 3, rev, updated, l, keys...)
}

// makeFilterK is makeFilter with k hashes.
func makeFilterK(t testing.TB, k int, rev uint32, updated int64, l int, keys ...string) []byte {
	t.Helper()
	f, err := pkbf.New(k, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		f.Add([]byte(k))
	}
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	h := f.Header()
	h.Revision, h.Updated = rev, time.Unix(updated, 0).UTC()
	out := b.Bytes()
	if _, err := h.AppendBinary(out[:0]); err != nil {
		t.Fatal(err)
	}
	return out
}

// withHeader returns body with its header's revision and entry count
// replaced: a forged header over the data.
func withHeader(t testing.TB, body []byte, rev, entries uint32) []byte {
	t.Helper()
	b := bytes.Clone(body)
	binary.BigEndian.PutUint32(b[6:], rev)
	binary.BigEndian.PutUint32(b[18:], entries)
	if _, err := pkbf.ParseHeader(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// manyKeys returns n distinct key names starting with prefix.
func manyKeys(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint(prefix, i)
	}
	return keys
}

// server is a publisher: it serves one filter file with http.ServeContent
// (ETag, Last-Modified, Range, If-Range), and can be made to misbehave.
type server struct {
	t        testing.TB
	mu       sync.Mutex
	body     []byte
	etag     string
	modified time.Time
	requests []http.Header
	// Misbehaviour: answer the next len(statuses) requests with these
	// statuses (and retryAfter); cut the next cuts bodies (not counting
	// requests for the header) after cutAt bytes; stall after stallAt
	// bytes once; send this handler instead.
	statuses   []int
	retryAfter string
	cuts       int
	cutAt      int
	stallAt    int
	stall      chan struct{}
	handler    http.HandlerFunc
	hits       atomic.Int64
}

func newServer(t testing.TB, body []byte) (*server, *httptest.Server) {
	s := &server{t: t}
	s.set(body)
	ts := httptest.NewTLSServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

// set publishes a new file.
func (s *server) set(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body = body
	s.etag = fmt.Sprintf(`"v%d-%x"`, s.hits.Load(), len(body)^int(body[9]))
	s.modified = time.Now().Add(-time.Hour).Add(time.Duration(s.hits.Load()) * time.Second).Truncate(time.Second)
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	s.mu.Lock()
	s.requests = append(s.requests, r.Header.Clone())
	body, etag, modified := s.body, s.etag, s.modified
	var status int
	if len(s.statuses) > 0 {
		status, s.statuses = s.statuses[0], s.statuses[1:]
	}
	cut, stallAt, handler := 0, s.stallAt, s.handler
	if s.cuts > 0 && r.Header.Get("Range") != "bytes=0-23" { // not a request for the header
		s.cuts--
		cut = s.cutAt
	}
	s.stallAt = 0
	s.mu.Unlock()
	if handler != nil {
		handler(w, r)
		return
	}
	if status != 0 {
		if s.retryAfter != "" {
			w.Header().Set("Retry-After", s.retryAfter)
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	w.Header().Set("ETag", etag)
	if cut > 0 || stallAt > 0 {
		w = &brokenWriter{ResponseWriter: w, left: max(cut, stallAt), stall: stallAt > 0, unblock: s.stall}
	}
	http.ServeContent(w, r, "filter.pkbf", modified, bytes.NewReader(body))
}

// brokenWriter passes on left bytes of the body, then aborts the
// connection or, to stall, waits for unblock.
type brokenWriter struct {
	http.ResponseWriter
	left    int
	stall   bool
	unblock chan struct{}
}

func (w *brokenWriter) Write(p []byte) (int, error) {
	if len(p) <= w.left {
		w.left -= len(p)
		return w.ResponseWriter.Write(p)
	}
	w.ResponseWriter.Write(p[:w.left])
	w.left = 0
	w.ResponseWriter.(http.Flusher).Flush()
	if w.stall {
		<-w.unblock
	}
	panic(http.ErrAbortHandler) // the connection is cut
}

// askedForHeader reports whether a request asked for the filter's header
// alone, and nothing else (no conditional request).
func askedForHeader(h http.Header) bool {
	return h.Get("Range") == "bytes=0-23" && h.Get("If-Range") == "" && h.Get("If-None-Match") == "" && h.Get("If-Modified-Since") == ""
}

// allRequests returns the headers of the requests served so far.
func (s *server) allRequests() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func (s *server) lastRequest() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[len(s.requests)-1]
}

// fastOpts retries without waiting, recording the waits asked for.
func fastOpts(waits *[]time.Duration) Options {
	var mu sync.Mutex
	return Options{Client: testClient(), sleep: func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		if waits != nil {
			*waits = append(*waits, d)
		}
		return ctx.Err()
	}}
}

// testClient trusts the certificate of httptest's TLS servers and dials
// every host under example.com (which the certificate names) at
// 127.0.0.1, so that a test can redirect to another host over https;
// ip2.example.com at 127.0.0.2, another address (see listenIP2).
var testClient = sync.OnceValue(func() *http.Client {
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	ts.Close()
	dial := (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, port, err := net.SplitHostPort(addr); err == nil && strings.HasSuffix(host, ".example.com") {
				ip := "127.0.0.1"
				if host == "ip2.example.com" {
					ip = "127.0.0.2"
				}
				addr = net.JoinHostPort(ip, port)
			}
			return dial(ctx, network, addr)
		},
	}}
})

// listenIP2 starts the https server s on 127.0.0.2 (which Linux's
// loopback answers for; the test skips where it does not), stopped when
// the test ends, and returns its URL as ip2.example.com, a name
// testClient dials there.
func listenIP2(t *testing.T, s *httptest.Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address here: %v", err)
	}
	s.Listener.Close()
	s.Listener = l
	s.StartTLS()
	t.Cleanup(s.Close)
	return "https://ip2.example.com:" + fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

// checkFiles fails if dir holds files other than the filter and the
// documented ones beside it (.download only if allowed).
func checkFiles(t *testing.T, dir string, downloadAllowed bool) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		switch name := e.Name(); name {
		case "filter.pkbf", ".filter.pkbf.update.json", ".filter.pkbf.update.lock":
		case ".filter.pkbf.download":
			if !downloadAllowed {
				t.Errorf("%s left behind", name)
			}
		default:
			t.Errorf("stray file %s", name)
		}
	}
}

// updateOver serves body and updates a filter file holding installed
// from it, in a new directory: it returns the server's URL, the filter's
// path and what Update returned.
func updateOver(t *testing.T, installed, body []byte) (url, path string, res Result, err error) {
	return updateOverWith(t, installed, body, false)
}

// updateOverWith is updateOver, with the body pinned by its SHA-256 when
// pin is set (as a publisher's digest would be).
func updateOverWith(t *testing.T, installed, body []byte, pin bool) (url, path string, res Result, err error) {
	t.Helper()
	_, ts := newServer(t, body)
	path = filepath.Join(t.TempDir(), "filter.pkbf")
	os.WriteFile(path, installed, 0o644)
	opts := fastOpts(nil)
	if pin {
		sum := sha256.Sum256(body)
		opts.SHA256 = hex.EncodeToString(sum[:])
	}
	res, err = Update(context.Background(), ts.URL, path, opts)
	return ts.URL, path, res, err
}

// feed is a publisher (testkit.Publisher: an 8 KiB request header limit,
// conditional GET, ranges) with someone on the path to it (a Relay that
// rewrites one answer when told to), and a filter kept current from it
// through the relay.
type feed struct {
	t     *testing.T
	pub   *testkit.Publisher
	relay *testkit.Relay
	path  string
	sig   *signer // signs what is published, if set
}

func newFeed(t *testing.T) *feed {
	pub := testkit.NewPublisher(t)
	return &feed{t: t, pub: pub, relay: testkit.NewRelay(t, pub), path: filepath.Join(t.TempDir(), "filter.pkbf")}
}

// publish makes body the publisher's filter (and its signature), last
// modified at modified.
func (f *feed) publish(body []byte, modified time.Time) {
	f.pub.Publish("filter.pkbf", body, modified)
	if f.sig != nil {
		f.pub.Publish("filter.pkbf.sig", f.sig.sign(f.t, body, "pkbf"), modified)
	}
}

// opts are the options of an update from the feed: signed when it is.
func (f *feed) opts() Options {
	o := fastOpts(nil)
	if f.sig != nil {
		o.SignatureURL, o.SignerKeys = f.relay.URL+"/filter.pkbf.sig", []ssh.PublicKey{f.sig.pub}
	}
	return o
}

// update updates the filter from the feed, through the relay, whose
// rewrites and redirects end with it.
func (f *feed) update(opts Options) (Result, error) {
	defer f.relay.Reset()
	return Update(context.Background(), f.relay.URL+"/filter.pkbf", f.path, opts)
}

// installed is the header of the filter installed.
func (f *feed) installed() pkbf.Header {
	f.t.Helper()
	h, err := pkbf.ParseHeader(testkit.ReadFile(f.t, f.path))
	if err != nil {
		f.t.Fatal(err)
	}
	return h
}

// ago is a Unix time d before now.
func ago(d time.Duration) int64 { return time.Now().Add(-d).Unix() }

// confirm runs the update after an unpinned install, which downloads the
// server's filter whole to confirm the bytes installed: it fails the test
// unless that run finds the installed filter current after a whole
// download.
func confirm(t testing.TB, url, path string) {
	t.Helper()
	res, err := Update(context.Background(), url, path, fastOpts(nil))
	if err != nil || res.Updated || res.Received != res.Size {
		t.Fatalf("the run after an unpinned install: %+v, %v; want the installed filter confirmed by a whole download", res, err)
	}
}
