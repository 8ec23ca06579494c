package update

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/pkbf/pkbf/internal/perr"
)

// ErrPlainHTTP is wrapped by the error Update returns, before any request
// or when a redirect leads there, for a plain http URL without
// Options.AllowHTTP, and for one with credentials (Options.Header, or a
// user in the URL) whatever the options: anyone on the path of plain http
// can read what is sent and replace what comes back.
var ErrPlainHTTP = perr.New("plain http is refused")

// checkURL parses a URL Update is to fetch: http or https, with a host;
// plain http only with Options.AllowHTTP and never with credentials.
func (up *updater) checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, perr.Errorf("update: %q is not an http or https URL", raw)
	}
	if u.Scheme == "http" {
		switch {
		case len(up.opts.Header) > 0 || u.User != nil:
			return nil, perr.Kind(ErrPlainHTTP, perr.Errorf("update: %s is plain http: credentials are never sent over it (use https)", redactURL(u)))
		case !up.opts.AllowHTTP:
			return nil, perr.Kind(ErrPlainHTTP, perr.Errorf("update: %s is plain http: anyone on the path could replace the filter; use https, or allow http and pin the filter", redactURL(u)))
		}
	}
	return u, nil
}

// swappedHint says that the arguments look swapped: a path given where
// the URL goes and a URL where the path goes.
func swappedHint(path string) string {
	if u, err := url.Parse(path); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return fmt.Sprintf(" (%s is a URL: the URL comes first, then the filter's path)", redactURL(u))
	}
	return ""
}

func defaultClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = http.ProxyFromEnvironment
	t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 30 * time.Second
	t.ResponseHeaderTimeout = 60 * time.Second
	return &http.Client{Transport: t}
}

// redirectPolicy refuses a redirect to plain http unless allowHTTP,
// removes the caller's headers h (and any Authorization or Cookie) from a
// request a redirect sends to another host or over http, and the Referer
// from every redirected request (net/http sets it to the URL before,
// query and all, which may hold a token), then applies next (the client's
// own policy, or the default of at most 10 redirects).
func redirectPolicy(next func(*http.Request, []*http.Request) error, h http.Header, allowHTTP bool) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "https" && req.URL.Scheme != "http" {
			return &permanentError{perr.Errorf("redirected to %s, not an http or https URL: refused", redactURL(req.URL))}
		}
		if req.URL.Scheme != "https" && !allowHTTP {
			return perr.Kind(ErrPlainHTTP, perr.Errorf("redirected to %s, plain http: refused (anyone on the path could replace the filter)", redactURL(req.URL)))
		}
		req.Header.Del("Referer")
		if req.URL.Scheme != "https" || req.URL.Host != via[0].URL.Host {
			for name := range h {
				req.Header.Del(name)
			}
			req.Header.Del("Authorization")
			req.Header.Del("Cookie")
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return &permanentError{errors.New("stopped after 10 redirects")}
		}
		return nil
	}
}

// clientError words an error from the client about a request to where:
// retried, unless a redirect to plain http was refused.
func (up *updater) clientError(where string, err error) error {
	var ue *url.Error
	if errors.Is(err, ErrPlainHTTP) && errors.As(err, &ue) {
		return perr.Errorf("update from %s: %w", where, ue.Err) // the refusal's own words, and its kind
	}
	var pe *permanentError
	if errors.As(err, &pe) {
		return perr.Errorf("update from %s: %w", where, pe.err)
	}
	return retry(perr.Errorf("update from %s: %v", where, redact(err)))
}

// redact removes the URL from a client error (the message names it
// without its query or user information, which may hold credentials).
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// stateURL is how the state file names a URL: as it is, or, when it
// holds credentials (a user, a query), without them and with the SHA-256
// of the whole URL, so that the file tells one URL from another without
// keeping a password or a token.
func stateURL(u *url.URL) string {
	if u.User == nil && u.RawQuery == "" && u.Fragment == "" {
		return u.String()
	}
	return fmt.Sprintf("%s (credentials not kept; URL sha256 %x)", redactURL(u), sha256.Sum256([]byte(u.String())))
}

func redactURL(u *url.URL) string {
	c := *u
	c.RawQuery, c.User, c.Fragment = "", nil, ""
	return c.String()
}

// source is where responses came from: the origin of every URL of their
// redirect chains (the URL asked for included), and every address
// resolved for them or connected to. It is safe for concurrent use (a
// dial may try several addresses at once).
type source struct {
	mu      sync.Mutex
	origins map[string]bool
	addrs   map[netip.Addr]bool
}

// addURL records u's origin.
func (s *source) addURL(u *url.URL) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.origins == nil {
		s.origins = map[string]bool{}
	}
	s.origins[origin(u)] = true
}

// addChain records the origin of every request of a redirect chain, from
// the last, req, back to the first.
func (s *source) addChain(req *http.Request) {
	for r := req; r != nil; {
		s.addURL(r.URL)
		if r.Response == nil {
			break
		}
		r = r.Response.Request
	}
}

// addAddr records the IP address of hostport ("ip:port", or an IP).
func (s *source) addAddr(hostport string) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addrs == nil {
		s.addrs = map[netip.Addr]bool{}
	}
	s.addrs[a.Unmap().WithZone("")] = true
}

// traceSource returns ctx set to record in s the addresses that the
// requests made with it, redirects included, resolve and connect to.
func traceSource(ctx context.Context, s *source) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		DNSDone: func(info httptrace.DNSDoneInfo) {
			for _, a := range info.Addrs {
				s.addAddr(a.IP.String())
			}
		},
		ConnectStart: func(_, addr string) { s.addAddr(addr) },
		GotConn:      func(info httptrace.GotConnInfo) { s.addAddr(info.Conn.RemoteAddr().String()) },
	})
}

// sameSource reports whether a and b may be one server, or pass through
// one: a shared origin, a shared address (two names of one server, two
// ports of one machine, one proxy through which servers cannot be told
// apart), or no address known for either (a client that does not say).
// A server can only add to what it shares with the other, so it can only
// make them one source.
func sameSource(a, b *source) bool {
	aOrigins, aAddrs := a.seen()
	bOrigins, bAddrs := b.seen()
	if len(aAddrs) == 0 || len(bAddrs) == 0 {
		return true
	}
	for o := range aOrigins {
		if bOrigins[o] {
			return true
		}
	}
	for addr := range aAddrs {
		if bAddrs[addr] {
			return true
		}
	}
	return false
}

// seen returns copies of the origins and addresses recorded.
func (s *source) seen() (origins map[string]bool, addrs map[netip.Addr]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.origins), maps.Clone(s.addrs)
}

// origin is u's scheme, host and port, written one way: the host in lower
// case without a final dot (an IP address as netip writes it), the port
// always, the scheme's default if none is given. A name and an address
// are different origins, even where the name resolves to the address.
func origin(u *url.URL) string {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(host, port)
}
