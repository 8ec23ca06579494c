package testkit

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// MaxRequestHeader is the request header size a Publisher serves: its
// fields, each counted as "Name: value\r\n". nginx (large_client_header_buffers
// 4 8k) and Apache (LimitRequestFieldSize 8190) refuse about this much.
const MaxRequestHeader = 8 << 10

// Publisher is a filter publisher's web server for tests: https on
// 127.0.0.1 (httptest's certificate), serving the files published with
// http.ServeContent (ETag, Last-Modified, If-None-Match,
// If-Modified-Since, Range, If-Range), and answering 431 to a request
// whose header is over MaxRequestHeader. It is safe for concurrent use.
type Publisher struct {
	*httptest.Server
	// NoETag serves no ETag, as Go's http.FileServer does: conditional
	// requests then rest on Last-Modified alone.
	NoETag   bool
	mu       sync.Mutex
	files    map[string]publishedFile
	requests []http.Header
}

type publishedFile struct {
	body     []byte
	modified time.Time
}

// NewPublisher starts a Publisher, stopped when the test ends.
func NewPublisher(t testing.TB) *Publisher {
	p := &Publisher{files: map[string]publishedFile{}}
	p.Server = httptest.NewTLSServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

// Publish makes body the file at /name, last modified at modified (to the
// second, as HTTP dates are); its ETag is a digest of body.
func (p *Publisher) Publish(name string, body []byte, modified time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files["/"+name] = publishedFile{bytes.Clone(body), modified.Truncate(time.Second)}
}

// FileURL is the URL of the file published as name.
func (p *Publisher) FileURL(name string) string { return p.URL + "/" + name }

// Requests returns the headers of the requests served so far, refused
// ones included.
func (p *Publisher) Requests() []http.Header {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]http.Header(nil), p.requests...)
}

// RequestHeaderSize is the size of r's header as MaxRequestHeader counts it.
func RequestHeaderSize(h http.Header) int {
	n := 0
	for name, values := range h {
		for _, v := range values {
			n += len(name) + len(": ") + len(v) + len("\r\n")
		}
	}
	return n
}

func (p *Publisher) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.requests = append(p.requests, r.Header.Clone())
	f, ok := p.files[r.URL.Path]
	noETag := p.NoETag
	p.mu.Unlock()
	if RequestHeaderSize(r.Header) > MaxRequestHeader {
		http.Error(w, "request header fields too large", http.StatusRequestHeaderFieldsTooLarge)
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	if !noETag {
		sum := sha256.Sum256(f.body)
		w.Header().Set("ETag", fmt.Sprintf(`"%x"`, sum[:8]))
	}
	http.ServeContent(w, r, "", f.modified, bytes.NewReader(f.body))
}

// Relay is someone on the path to a Publisher: an https server that
// forwards every request to it and passes its answers back, except that
// it can rewrite one answer (see Rewrite). Point a client at the relay's
// URL in place of the publisher's.
type Relay struct {
	*httptest.Server
	target  string
	client  *http.Client
	mu      sync.Mutex
	rewrite map[string]func(h http.Header, body []byte) []byte
	applied int
}

// NewRelay starts a Relay to the Publisher, stopped when the test ends.
func NewRelay(t testing.TB, to *Publisher) *Relay {
	r := &Relay{target: to.URL, client: to.Client(), rewrite: map[string]func(http.Header, []byte) []byte{}}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// Rewrite has edit change the next 200 answer for /name: its header in
// place, and its body to what edit returns (the Content-Length follows).
func (r *Relay) Rewrite(name string, edit func(h http.Header, body []byte) []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rewrite["/"+name] = edit
}

// Rewritten is how many answers were rewritten so far.
func (r *Relay) Rewritten() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied
}

func (r *Relay) serve(w http.ResponseWriter, req *http.Request) {
	out, err := http.NewRequestWithContext(req.Context(), req.Method, r.target+req.URL.RequestURI(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = req.Header.Clone()
	resp, err := r.client.Transport.RoundTrip(out) // no redirects followed, no headers added
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if resp.StatusCode == http.StatusOK {
		r.mu.Lock()
		edit := r.rewrite[req.URL.Path]
		if edit != nil {
			delete(r.rewrite, req.URL.Path)
			r.applied++
		}
		r.mu.Unlock()
		if edit != nil {
			body = edit(resp.Header, body)
			resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		}
	}
	for name, values := range resp.Header {
		w.Header()[name] = values
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}
