package testkit

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
// forwards every request to it and passes its answers back, except where
// told to rewrite a file (see Rewrite) or redirect a request (see
// Redirect) until Reset. Point a client at the relay's URL in place of
// the publisher's.
type Relay struct {
	*httptest.Server
	target  string
	client  *http.Client
	mu      sync.Mutex
	changes map[string]*change
	applied int
}

// change is what the relay does to the requests for one path: redirect
// them to location, or serve the publisher's file as edit changes it
// (made once, at the first request, into header and body).
type change struct {
	location string
	edit     func(h http.Header, body []byte) []byte
	made     bool
	header   http.Header
	body     []byte
	applied  bool
}

// NewRelay starts a Relay to the Publisher, stopped when the test ends.
func NewRelay(t testing.TB, to *Publisher) *Relay {
	r := &Relay{target: to.URL, client: to.Client(), changes: map[string]*change{}}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// Rewrite has the relay serve /name changed by edit until Reset: at the
// first request it fetches the publisher's whole file, and edit changes
// the answer's header in place and returns the body to serve. Every
// request is then answered from that file as an attacker would:
// conditional requests ignored, ranges of the changed body honoured.
func (r *Relay) Rewrite(name string, edit func(h http.Header, body []byte) []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes["/"+name] = &change{edit: edit}
}

// Redirect has the relay answer the requests for /name with a 302 to
// location until Reset, without asking the publisher.
func (r *Relay) Redirect(name, location string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes["/"+name] = &change{location: location}
}

// Reset drops the rewrites and redirects: the relay passes everything on.
func (r *Relay) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.changes)
}

// Rewritten is how many of the rewrites and redirects asked for were
// applied to at least one request so far.
func (r *Relay) Rewritten() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied
}

func (r *Relay) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	c := r.changes[req.URL.Path]
	if c != nil && !c.applied {
		c.applied = true
		r.applied++
	}
	r.mu.Unlock()
	switch {
	case c != nil && c.location != "":
		http.Redirect(w, req, c.location, http.StatusFound)
		return
	case c != nil:
		r.serveChanged(w, req, c)
		return
	}
	resp, body, err := r.forward(req, req.Header.Clone())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for name, values := range resp.Header {
		w.Header()[name] = values
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

// forward sends req to the publisher with header h, following no
// redirects and adding no header, and returns its answer and body.
func (r *Relay) forward(req *http.Request, h http.Header) (*http.Response, []byte, error) {
	out, err := http.NewRequestWithContext(req.Context(), req.Method, r.target+req.URL.RequestURI(), nil)
	if err != nil {
		return nil, nil, err
	}
	out.Header = h
	resp, err := r.client.Transport.RoundTrip(out)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// serveChanged answers req from the changed file of c, made at the first
// request from the publisher's whole file.
func (r *Relay) serveChanged(w http.ResponseWriter, req *http.Request, c *change) {
	r.mu.Lock()
	defer r.mu.Unlock() // the edit once, and the answers in turn
	if !c.made {
		resp, body, err := r.forward(req, http.Header{})
		if err != nil || resp.StatusCode != http.StatusOK {
			http.Error(w, fmt.Sprintf("the publisher's file: %v %v", resp, err), http.StatusBadGateway)
			return
		}
		c.header = resp.Header.Clone()
		c.body = c.edit(c.header, body)
		c.made = true
	}
	for name, values := range c.header {
		switch name {
		case "Content-Length", "Content-Range", "Accept-Ranges":
		default:
			w.Header()[name] = values
		}
	}
	req.Header.Del("If-None-Match")
	req.Header.Del("If-Modified-Since")
	http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(c.body))
}
