package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/jsontext"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/stepca"
)

// serve: a small HTTP service over one filter file, for programs in any
// language. Standard library net/http: it has every timeout and limit a
// public-facing server needs.

type serveFlags struct {
	listen      *string
	poll        *time.Duration
	maxBody     *sizeFlag
	maxMemory   *sizeFlag
	maxConns    *int
	maxInFlight *int
	maxKeys     *int

	tlsCert, tlsKey, clientCA, clientName, webhookSecretFile *string
	webhookInsecure                                          *bool
}

func serveCommand(stdout, stderr io.Writer) (*command, *serveFlags) {
	c := newCommand("serve", "serve [--listen ADDR] [flags] FILTER", stdout, stderr)
	fl := &serveFlags{
		listen:      c.String("listen", "127.0.0.1:8080", "listen on `ADDR` (host:port; :0 picks a free port)"),
		poll:        c.Duration("poll", time.Second, "check the filter path for a new file every `DURATION` (SIGHUP checks at once)"),
		maxBody:     newSizeFlag(8 << 20),
		maxMemory:   newSizeFlag(64 << 20),
		maxConns:    c.Int("max-conns", 1024, "hold at most `N` connections at once; more are answered 503 and closed"),
		maxInFlight: c.Int("max-in-flight", 32, "check at most `N` requests at once; others wait"),
		maxKeys:     c.Int("max-keys", 10000, "refuse requests holding more than `N` keys, certificates and requests (413)"),
	}
	fl.tlsCert = c.String("tls-cert", "", "serve HTTPS with the certificate (and its chain) in PEM `FILE`; with --tls-key")
	fl.tlsKey = c.String("tls-key", "", "the private key of --tls-cert, in PEM `FILE`")
	fl.clientCA = c.String("client-ca", "", "require of every client a certificate chained to a CA certificate in PEM `FILE` (step-ca's root), and answer step-ca's webhook at /v1/step-ca/authorize")
	fl.clientName = c.String("client-name", "", "answer step-ca's webhook only for a client certificate whose subject common name is `NAME`: ca.json's \"commonName\" (\"Step Online CA\" when unset); needed with --client-ca")
	fl.webhookSecretFile = c.String("webhook-secret-file", "", "require step-ca's X-Smallstep-Signature, an HMAC-SHA256 under the base64 secret in `FILE`")
	fl.webhookInsecure = c.Bool("webhook-insecure", false, "answer step-ca's webhook without a client certificate, over plain HTTP too: local tests only")
	c.Var(fl.maxBody, "max-body", "refuse request bodies over `SIZE` (413, before reading them)")
	c.Var(fl.maxMemory, "max-body-memory", "hold at most `SIZE` of request bodies at once, all connections together; a request over it gets 503 (before its body is read when its length is declared)")
	c.alias("l", "listen")
	return c, fl
}

// Server timeouts: a slow or idle client cannot hold a connection for
// ever. Variables, for tests.
var (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	shutdownGrace     = 10 * time.Second
)

// newHTTPServer is the server around the service, with every timeout set.
func newHTTPServer(h http.Handler, logger *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          logger,
	}
}

func runServe(args []string, stdout, stderr io.Writer) int {
	c, fl := serveCommand(stdout, stderr)
	if ok, code := c.parse(args, 1, 1); !ok {
		return code
	}
	l := limits{body: int64(*fl.maxBody), memory: int64(*fl.maxMemory), conns: *fl.maxConns, inFlight: *fl.maxInFlight, keys: *fl.maxKeys}
	if l.body < 1 || l.memory < 1 || l.conns < 1 || l.inFlight < 1 || l.keys < 1 {
		_, code := c.fail("--max-body, --max-body-memory, --max-conns, --max-in-flight and --max-keys must be positive")
		return code
	}
	if l.body > l.memory {
		_, code := c.fail(fmt.Sprintf("--max-body %s is more than --max-body-memory %s: no body that size could ever be taken", fl.maxBody, fl.maxMemory))
		return code
	}
	if os.Getenv("GOGC") == "" {
		// What serve holds is bounded by its limits; collect as often as
		// Go's default, not as check's throughput setting (main), so that
		// memory stays near them.
		debug.SetGCPercent(100)
	}
	tlsConfig, cert, webhook, err := stepCAOptions(fl)
	if err != nil {
		_, code := c.fail(message(err))
		return code
	}
	logger := log.New(stderr, "pkbf: serve: ", log.LstdFlags)
	webhook.Logger = logger
	path := c.Arg(0)
	live, err := pkbf.OpenLive(path, pkbf.LiveOptions{
		Interval: *fl.poll,
		OnReload: func(h pkbf.Header) {
			logger.Printf("reloaded %s: revision %d, %d entries", path, h.Revision, h.EntryCount)
		},
		OnChange: func(was, h pkbf.Header) {
			logger.Printf("%s changed in place: revision %d -> %d, %d -> %d entries, updated %s (keys added in place, or a filter copied over it)",
				path, was.Revision, h.Revision, was.EntryCount, h.EntryCount, updatedText(h))
		},
		OnError: func(err error) { logger.Printf("%s", message(err)) },
	})
	if err != nil {
		errorf(stderr, "%s", message(err))
		return exitTrouble
	}
	defer live.Close()
	ln, err := net.Listen("tcp", *fl.listen)
	if err != nil {
		errorf(stderr, "%s", message(err))
		return exitTrouble
	}
	h := newService(live, l)
	if *fl.clientCA != "" || *fl.webhookInsecure {
		h.webhook = stepca.NewHandler(live, webhook)
	}
	srv := newHTTPServer(h, logger)
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(signals)
	served := make(chan error, 1)
	scheme := "http"
	if tlsConfig != nil {
		srv.TLSConfig, scheme = tlsConfig, "https"
		go func() { served <- srv.ServeTLS(h.limitConns(ln), "", "") }()
	} else {
		go func() { served <- srv.Serve(h.limitConns(ln)) }()
	}
	logger.Printf("serving %s on %s://%s", path, scheme, ln.Addr())
	if h.webhook != nil {
		logger.Printf("step-ca webhook at %s://%s%s", scheme, ln.Addr(), stepCAPath)
	}
	for {
		select {
		case err := <-served:
			errorf(stderr, "%v", err)
			return exitTrouble
		case sig := <-signals:
			if sig == syscall.SIGHUP {
				if err := live.Reload(); err == nil {
					logger.Printf("SIGHUP: %s checked", path)
				}
				if cert != nil {
					if err := cert.load(); err != nil {
						logger.Printf("SIGHUP: keeping the certificate in use: %s", message(err))
					} else {
						logger.Printf("SIGHUP: %s reloaded", cert.certFile)
					}
				}
				continue
			}
			return h.shutdown(srv, sig, logger)
		}
	}
}

// shutdown stops srv on sig: no new connections, requests in flight given
// shutdownGrace to finish, then the rest cut off, saying what they were
// doing. Being asked to stop and stopping is a success, whatever was cut.
func (s *service) shutdown(srv *http.Server, sig os.Signal, logger *log.Logger) int {
	logger.Printf("%v: shutting down, letting requests in flight finish (at most %v)", sig, shutdownGrace)
	s.shuttingDown.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(ctx); err == nil {
		logger.Printf("stopped")
		return exitOK
	}
	receiving, waiting, checking := s.receiving.Load(), s.waiting.Load(), s.checking.Load()
	srv.Close()
	logger.Printf("stopped after %v: cut off %s receiving a body, %s waiting to be checked, %s being checked (their clients get no answer)",
		shutdownGrace, plural(int(receiving), "request", "requests"), plural(int(waiting), "request", "requests"), plural(int(checking), "request", "requests"))
	return exitOK
}

// limits bound what one request, and all of them together, may ask of
// the service.
type limits struct {
	body     int64 // bytes in a request body
	memory   int64 // bytes of request bodies held at once
	conns    int   // connections held at once
	inFlight int   // requests checked at once
	keys     int   // objects in a request body
}

// maxAnswer bounds the answer to one request: with the key limit, it is
// reached only by keys with long error messages.
const maxAnswer = 16 << 20

// service is the HTTP API.
type service struct {
	live         *pkbf.Live
	limits       limits
	slots        chan struct{}
	bodies       *budget // the bytes of request bodies held
	conns        atomic.Int64
	started      time.Time
	shuttingDown atomic.Bool
	mux          *http.ServeMux
	webhook      *stepca.Handler // step-ca's webhook, or nil when not enabled

	// What requests are doing now, for shutdown's report.
	receiving, waiting, checking atomic.Int64

	// Counters, exposed by /metrics.
	requests, badRequests, keys, hits, keyErrors, filterErrors, abandoned, busy, connsRefused atomic.Int64
}

func newService(live *pkbf.Live, l limits) *service {
	if l.memory == 0 { // tests that do not care
		l.memory = max(l.body, 64<<20)
	}
	if l.conns == 0 {
		l.conns = 1024
	}
	s := &service{live: live, limits: l, slots: make(chan struct{}, l.inFlight), bodies: newBudget(l.memory), started: time.Now(), mux: http.NewServeMux()}
	s.mux.HandleFunc("/v1/check", s.check)
	s.mux.HandleFunc("/healthz", s.healthz)
	s.mux.HandleFunc("/readyz", s.readyz)
	s.mux.HandleFunc("/v1/status", s.status)
	s.mux.HandleFunc("/metrics", s.metrics)
	s.mux.HandleFunc(stepCAPath, s.stepCA)
	return s
}

// stepCAPath is where step-ca's AUTHORIZING webhook is answered.
const stepCAPath = "/v1/step-ca/authorize"

// stepCA answers step-ca's webhook, or refuses it when serve was not
// started to answer it (403, which step-ca takes as a refusal).
func (s *service) stepCA(w http.ResponseWriter, r *http.Request) {
	if s.webhook != nil {
		s.webhook.ServeHTTP(w, r)
		return
	}
	s.httpError(w, http.StatusForbidden, "pkbf serve answers step-ca's webhook only with --client-ca and --client-name (and --tls-cert, --tls-key): see docs/stepca.md")
}

// servingCert is the server's certificate, read again from its files on
// SIGHUP: certificates from a CA such as step-ca live for a day.
type servingCert struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// load reads the certificate and key; on an error the one in use stays.
func (c *servingCert) load() error {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &pathErr):
		return err
	case err != nil:
		return perr.Errorf("--tls-cert %s, --tls-key %s: %v", c.certFile, c.keyFile, err)
	}
	c.cur.Store(&pair)
	return nil
}

func (c *servingCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.cur.Load(), nil }

// stepCAOptions reads the TLS and webhook flags: the server's TLS
// configuration and certificate (nil for plain HTTP), and the webhook's
// options.
func stepCAOptions(fl *serveFlags) (*tls.Config, *servingCert, stepca.Options, error) {
	var opts stepca.Options
	cert, key, ca, secret := *fl.tlsCert, *fl.tlsKey, *fl.clientCA, *fl.webhookSecretFile
	switch {
	case (cert == "") != (key == ""):
		return nil, nil, opts, perr.Errorf("--tls-cert and --tls-key go together")
	case ca != "" && cert == "":
		return nil, nil, opts, perr.Errorf("--client-ca needs --tls-cert and --tls-key: client certificates come over TLS")
	case ca != "" && *fl.clientName == "":
		return nil, nil, opts, perr.Errorf("--client-ca needs --client-name: step-ca's root also signs its subscribers' certificates, and only the common name of step-ca's own tells it apart (see docs/stepca.md)")
	case *fl.clientName != "" && ca == "":
		return nil, nil, opts, perr.Errorf("--client-name needs --client-ca: it names a certificate --client-ca verifies")
	case ca != "" && *fl.webhookInsecure:
		return nil, nil, opts, perr.Errorf("--webhook-insecure answers step-ca without the client certificate --client-ca requires: give one or the other")
	case secret != "" && ca == "" && !*fl.webhookInsecure:
		return nil, nil, opts, perr.Errorf("--webhook-secret-file needs --client-ca: step-ca is authenticated by its client certificate first")
	}
	opts.Unauthenticated, opts.ClientName = *fl.webhookInsecure, *fl.clientName
	if secret != "" {
		b, err := os.ReadFile(secret)
		if err != nil {
			return nil, nil, opts, err
		}
		opts.Secret, err = base64.StdEncoding.DecodeString(string(bytes.TrimSpace(b)))
		switch {
		case err != nil:
			return nil, nil, opts, perr.Errorf("--webhook-secret-file %s: not the base64 secret step-ca holds: %v", secret, err)
		case len(opts.Secret) == 0:
			return nil, nil, opts, perr.Errorf("--webhook-secret-file %s is empty", secret)
		}
	}
	if cert == "" {
		return nil, nil, opts, nil
	}
	sc := &servingCert{certFile: cert, keyFile: key}
	if err := sc.load(); err != nil {
		return nil, nil, opts, err
	}
	config := &tls.Config{GetCertificate: sc.get, MinVersion: tls.VersionTLS12}
	if ca != "" {
		b, err := os.ReadFile(ca)
		if err != nil {
			return nil, nil, opts, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, nil, opts, perr.Errorf("--client-ca %s holds no PEM certificate", ca)
		}
		config.ClientAuth, config.ClientCAs = tls.RequireAndVerifyClientCert, pool
	}
	return config, sc, opts, nil
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// httpError answers with a status and a JSON error.
func (s *service) httpError(w http.ResponseWriter, code int, msg string) {
	if code < 500 {
		s.badRequests.Add(1)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	b := jsontext.AppendString([]byte(`{"error":`), msg)
	w.Write(append(b, "}\n"...))
}

// check answers POST /v1/check: a body of keys in any form check reads;
// one JSON line per key, as check --json prints them.
//
// A request is read whole before it takes one of the slots that bound the
// requests checked at once, so that slow clients hold only their own
// connections. Its work stops between two keys when the client goes away
// or the write timeout passes (no answer could be written after it).
func (s *service) check(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.httpError(w, http.StatusMethodNotAllowed, "POST keys, certificates or requests to /v1/check")
		return
	}
	body, release, ok := s.readBody(w, r)
	if !ok {
		return
	}
	defer release()
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	s.waiting.Add(1)
	select {
	case s.slots <- struct{}{}:
		s.waiting.Add(-1)
		defer func() { <-s.slots }()
	case <-ctx.Done():
		s.waiting.Add(-1)
		s.stopped(w, ctx)
		return
	}
	s.checking.Add(1)
	defer s.checking.Add(-1)
	out, found, status := s.answer(ctx, body)
	switch {
	case status == http.StatusRequestEntityTooLarge:
		s.httpError(w, status, fmt.Sprintf("the request body holds more than %d keys, certificates and requests: send them in several requests", s.limits.keys))
		return
	case ctx.Err() != nil:
		s.stopped(w, ctx)
		return
	case status == http.StatusServiceUnavailable:
		s.filterErrors.Add(1)
		s.live.Reload()
		s.httpError(w, status, string(out)+"; reloading: try again")
		return
	case found == 0 && len(out) == 0:
		s.httpError(w, http.StatusBadRequest, "no key, certificate or request in the request body")
		return
	case len(out) > maxAnswer:
		s.httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the answer would be larger than %d bytes: send fewer keys a request", maxAnswer))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	if found == 0 { // nothing in the body could be read as a key
		s.badRequests.Add(1)
		w.WriteHeader(http.StatusBadRequest)
	}
	w.Write(out)
}

// readBody reads a request's body within the service's budget, or
// answers the error and reports false. Call release once done with the
// body. A body over the limit, or one the budget has no room for, is
// refused before a byte of it is read when its length is declared: no
// "100 Continue" goes to a client that asked, and the connection is
// closed rather than drained.
func (s *service) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	n := r.ContentLength
	if n > s.limits.body {
		w.Header().Set("Connection", "close")
		s.httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is larger than %d bytes", n, s.limits.body))
		return nil, nil, false
	}
	s.receiving.Add(1)
	defer s.receiving.Add(-1)
	held := int64(0)
	release = func() { s.bodies.give(held) }
	refuse := func(code int, msg string) ([]byte, func(), bool) {
		release()
		w.Header().Set("Connection", "close")
		if code == http.StatusServiceUnavailable {
			s.busy.Add(1)
			w.Header().Set("Retry-After", "1")
		}
		s.httpError(w, code, msg)
		return nil, nil, false
	}
	busy := fmt.Sprintf("the server holds as many request bodies as it may (%d bytes in all): try again shortly", s.limits.memory)
	if n >= 0 { // the length is declared: take it all at once
		if !s.bodies.take(n) {
			return refuse(http.StatusServiceUnavailable, busy)
		}
		held = n
		buf := make([]byte, n)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return refuse(http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		body = buf
	} else { // chunked: take the budget as the body grows
		var buf bytes.Buffer
		lr := http.MaxBytesReader(w, r.Body, s.limits.body)
		for {
			if buf.Available() == 0 {
				step := int64(min(max(buf.Cap(), 64<<10), 1<<20))
				if !s.bodies.take(step) {
					return refuse(http.StatusServiceUnavailable, busy)
				}
				held += step
				buf.Grow(int(step))
			}
			m, err := lr.Read(buf.AvailableBuffer()[:buf.Available()])
			buf.Write(buf.AvailableBuffer()[:m])
			if err == io.EOF {
				break
			}
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", s.limits.body))
			}
			if err != nil {
				return refuse(http.StatusBadRequest, "reading the request body: "+err.Error())
			}
		}
		body = buf.Bytes()
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return refuse(http.StatusBadRequest, "the request body is empty: POST keys, certificates or requests")
	}
	return body, release, true
}

// budget is a number of bytes shared by all requests: a request takes
// its body's size before reading it and gives it back when done. Bodies
// of more than smallBody bytes may take only largeShare of it, so that
// small requests always find room while large uploads fill the rest.
type budget struct {
	mu         sync.Mutex
	used, size int64
}

const (
	smallBody  = 64 << 10
	largeShare = 0.875
)

func newBudget(size int64) *budget { return &budget{size: size} }

func (b *budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	limit := b.size
	if n > smallBody {
		limit = int64(float64(b.size) * largeShare)
	}
	if b.used+n > limit && n > 0 {
		return false
	}
	b.used += n
	return true
}

func (b *budget) held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

func (b *budget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
}

// limitConns wraps ln so that at most limits.conns connections are held
// at once; one more is answered 503 and closed at once, instead of
// waiting for a free one with its memory held.
func (s *service) limitConns(ln net.Listener) net.Listener {
	return &connLimiter{Listener: ln, s: s}
}

type connLimiter struct {
	net.Listener
	s *service
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.s.conns.Add(1) <= int64(l.s.limits.conns) {
			return &countedConn{Conn: c, s: l.s}, nil
		}
		l.s.conns.Add(-1)
		l.s.connsRefused.Add(1)
		refuseConn(c)
	}
}

// tooManyConns is the whole answer to a connection over the limit.
var tooManyConns = func() string {
	body := `{"error":"too many connections: try again shortly"}` + "\n"
	return "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n" +
		"Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}()

// refuseConn answers 503 on c and closes it, without waiting for the
// client: the write is small enough for the socket's buffer.
func refuseConn(c net.Conn) {
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	io.WriteString(c, tooManyConns)
	c.Close()
}

// countedConn gives its place back when closed.
type countedConn struct {
	net.Conn
	s    *service
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.s.conns.Add(-1) })
	return c.Conn.Close()
}

// stopped answers a request whose work stopped: 503 if it ran out of
// time, nothing if the client went away.
func (s *service) stopped(w http.ResponseWriter, ctx context.Context) {
	s.abandoned.Add(1)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		s.httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("checking the request took longer than %v: send fewer keys a request", writeTimeout))
	}
}

// answer checks the keys of a request body in the current filter, as
// check --json does, and returns the answer's body and how many of its
// objects could be read as keys. Its status is 413 past the key limit,
// 503 when the filter's file failed while in use (out is then the
// reason), else 0.
func (s *service) answer(ctx context.Context, body []byte) (out []byte, found, status int) {
	request := pkbf.Bytes("request", body)
	objects := 0
	s.live.Do(func(f *pkbf.Filter) {
		// One goroutine a request: requests run in parallel already.
		for v := range f.Check(ctx, request, pkbf.CheckOptions{Workers: 1}) {
			if objects++; objects > s.limits.keys {
				status = http.StatusRequestEntityTooLarge
				return
			}
			switch {
			case errors.Is(v.Err, pkbf.ErrFileChanged):
				out, status = []byte(message(v.Err)), http.StatusServiceUnavailable
				return
			case v.Err != nil:
				s.keyErrors.Add(1)
				if errors.Is(v.Err, keys.ErrEncryptedKey) {
					v.Err = perr.Errorf("%w; pkbf serve takes no passphrase: send the public key or the certificate", v.Err)
				}
			default:
				found++
				s.keys.Add(1)
				if v.Probably {
					s.hits.Add(1)
				}
			}
			if len(out) <= maxAnswer {
				out = v.AppendJSON(out)
			}
		}
	})
	return out, found, status
}

// filterErr reports whether the filter in use can answer: nil, or why not
// (its file was cut short or overwritten in place, and no valid file has
// been renamed over it yet).
func (s *service) filterErr() (err error) {
	s.live.Do(func(f *pkbf.Filter) { err = f.FileChanged() })
	return err
}

// healthz answers 200 while the filter can answer checks, else 503 with
// the reason.
func (s *service) healthz(w http.ResponseWriter, r *http.Request) {
	if err := s.filterErr(); err != nil {
		s.httpError(w, http.StatusServiceUnavailable, "the filter cannot answer: "+message(err))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "ok\n")
}

// readyz answers 200 while the service takes requests and its filter can
// answer them; 503, with the reason, while the filter cannot and once
// shutdown begins, so that a load balancer stops sending requests.
func (s *service) readyz(w http.ResponseWriter, r *http.Request) {
	if s.shuttingDown.Load() {
		s.httpError(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	if err := s.filterErr(); err != nil {
		s.httpError(w, http.StatusServiceUnavailable, "the filter cannot answer: "+message(err))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "ready\n")
}

// status answers the filter's header and the reload history as JSON.
func (s *service) status(w http.ResponseWriter, r *http.Request) {
	st := s.live.Stats()
	h := st.Header
	v := map[string]any{
		"file": s.live.Path(), "revision": h.Revision, "updated": updatedText(h),
		"entries": h.EntryCount, "hash_count": h.HashCount, "hash_length": h.HashLength, "bits": h.Bits(),
		"size": h.FileSize(), "loaded_at": st.LoadedAt.UTC().Format(time.RFC3339), "reloads": st.Reloads,
		"reload_errors": st.Errors, "pending_closes": st.PendingCloses, "started_at": s.started.UTC().Format(time.RFC3339),
	}
	if st.LastError != nil {
		v["last_reload_error"] = message(st.LastError)
	}
	if err := s.filterErr(); err != nil {
		v["filter_error"] = message(err)
	}
	v["connections"], v["body_bytes_held"] = s.conns.Load(), s.bodies.held()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// metrics answers the counters in the Prometheus text exposition format.
func (s *service) metrics(w http.ResponseWriter, r *http.Request) {
	st := s.live.Stats()
	var webhook stepca.Stats
	if s.webhook != nil {
		webhook = s.webhook.Stats()
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	for _, m := range []struct {
		name, kind, help string
		value            float64
	}{
		{"pkbf_requests_total", "counter", "Requests to /v1/check.", float64(s.requests.Load())},
		{"pkbf_bad_requests_total", "counter", "Requests answered with a 4xx status.", float64(s.badRequests.Load())},
		{"pkbf_keys_checked_total", "counter", "Keys looked up in the filter.", float64(s.keys.Load())},
		{"pkbf_keys_probably_total", "counter", "Keys the filter answered probably for.", float64(s.hits.Load())},
		{"pkbf_key_errors_total", "counter", "Objects in request bodies that could not be read as keys.", float64(s.keyErrors.Load())},
		{"pkbf_filter_errors_total", "counter", "Requests that failed because the filter file changed under the server.", float64(s.filterErrors.Load())},
		{"pkbf_requests_stopped_total", "counter", "Requests whose work stopped because the client went away or time ran out.", float64(s.abandoned.Load())},
		{"pkbf_requests_busy_total", "counter", "Requests refused with 503 because request bodies held all of --max-body-memory.", float64(s.busy.Load())},
		{"pkbf_connections_refused_total", "counter", "Connections refused with 503 because --max-conns were open.", float64(s.connsRefused.Load())},
		{"pkbf_connections", "gauge", "Connections open.", float64(s.conns.Load())},
		{"pkbf_body_bytes_held", "gauge", "Bytes of request bodies held, of --max-body-memory.", float64(s.bodies.held())},
		{"pkbf_reloads_total", "counter", "Switches to a new filter file.", float64(st.Reloads)},
		{"pkbf_reload_errors_total", "counter", "New filter files that could not be loaded.", float64(st.Errors)},
		{"pkbf_filter_pending_closes", "gauge", "Replaced filter files still being released (the kernel can take seconds for a large one).", float64(st.PendingCloses)},
		{"pkbf_filter_entries", "gauge", "Entries in the filter's header.", float64(st.Header.EntryCount)},
		{"pkbf_filter_revision", "gauge", "Revision in the filter's header.", float64(st.Header.Revision)},
		{"pkbf_filter_loaded_timestamp_seconds", "gauge", "When the filter in use was loaded.", float64(st.LoadedAt.Unix())},
		{"pkbf_stepca_allowed_total", "counter", "step-ca webhook calls allowed.", float64(webhook.Allowed)},
		{"pkbf_stepca_refused_total", "counter", "step-ca webhook calls refused, for any reason.", float64(webhook.Refused)},
		{"pkbf_stepca_compromised_total", "counter", "step-ca webhook calls refused for a key the filter holds.", float64(webhook.Compromised)},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", m.name, m.help, m.name, m.kind, m.name, strconv.FormatFloat(m.value, 'f', -1, 64))
	}
}
