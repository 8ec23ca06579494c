// Package pkbfhttp answers checks against a pkbf filter over HTTP, for
// programs in any language: the service of "pkbf serve".
//
// Make a [Service] with [New] from a [pkbf.Live] (a filter that follows
// its file as new ones are renamed over it), wrap the listener with
// [Service.Listener] so that connections are bounded, serve it with the
// server [Service.Server] returns, whose timeouts a public-facing server
// needs, and stop it with [Service.Shutdown]:
//
//	svc, err := pkbfhttp.New(live, pkbfhttp.Options{})
//	srv := svc.Server(logger)
//	go srv.Serve(svc.Listener(ln))
//	...
//	cut, err := svc.Shutdown(ctx, srv)
//
// # Endpoints
//
//	POST /v1/check   a body of keys, certificates and requests in any
//	                 form keycheck.Bytes reads; one JSON line a key, as
//	                 keycheck.Verdict.AppendJSON writes it (with the
//	                 weak-key findings, with [Options.Weak])
//	GET  /healthz    200 while the filter's file is valid, else 503
//	GET  /readyz     200 until Shutdown begins (and while the filter's
//	                 file is valid), then 503
//	GET  /v1/status  the filter's header, reloads and the last reload error
//	GET  /metrics    counters in the Prometheus text format
//	POST /v1/step-ca/authorize
//	                 step-ca's AUTHORIZING webhook ([Options.StepCA])
//
// # Limits
//
// What one request and all of them together may ask of the service is
// bounded ([Limits]): a request body's size, the bytes of bodies and
// answers held at once, the connections held and the requests in them
// (HTTP/2 carries up to 16 a connection), the requests checked at once,
// the objects in one body. A request over a limit is refused (413 for one
// that can never fit, 503 with Retry-After for one that may later), never
// queued with its memory held. A request body is read whole before it
// waits for a check slot, and the check's answer is made whole before it
// is written, the slot given back, so that slow clients hold only their
// own connections and their own bodies' and answers' room; a check stops
// between two keys when its client goes away. The heap also holds the
// checks' working memory and what the collector has yet to free: a server
// should set a memory limit ([runtime/debug.SetMemoryLimit]) a little above
// MaxBodyMemory, as pkbf serve does.
//
// A filter file cut short or overwritten in place under the service
// changes no answer: checks are answered from the copy of the file the
// [pkbf.Live] validated, and /healthz answers 503 until a valid file
// replaces it. A key the filter holds is a 200 answer whose JSON says so.
// Everything here is safe for concurrent use.
package pkbfhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/pkbf/pkbf/internal/text"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/stepca"
	"github.com/pkbf/pkbf/weakkeys"
)

// StepCAPath is where the service answers step-ca's AUTHORIZING webhook.
const StepCAPath = "/v1/step-ca/authorize"

// Limits bound what one request, and all requests together, may ask of
// a [Service]. A zero field takes its default, in [DefaultLimits].
type Limits struct {
	// MaxBody is the most bytes of one request body; a longer one gets
	// 413, before it is read when its length is declared.
	MaxBody int64
	// MaxBodyMemory is the most bytes of request bodies and answers held
	// at once, all connections together; a request the budget has no room
	// for gets 503. Requests holding over 64 KiB share at most 7/8 of it,
	// so that small ones find room, or MaxBody and 64 KiB of answer if
	// that is more (such a request always fits once the others are done;
	// then large ones may fill it all, and the budget is that large at
	// least). It may not be less than MaxBody.
	MaxBodyMemory int64
	// MaxConns is the most connections [Service.Listener] holds at once:
	// at the limit the one idle the longest makes room for a new one, and
	// with none idle the new one is refused. It also bounds the requests
	// handled at once, over all connections and HTTP/2 streams, from
	// their headers until their answers are sent: one more is answered
	// 503, but for 16 more to /healthz, /readyz, /metrics and /v1/status,
	// kept for them.
	MaxConns int
	// MaxInFlight is the most requests checked at once; others wait. A
	// check gives its slot back once its answer is made, before the
	// answer is written.
	MaxInFlight int
	// MaxKeys is the most keys, certificates and requests in one request
	// body; a request with more gets 413.
	MaxKeys int
	// MaxKDFWork is the most iterations of key derivation the PKCS#12
	// files of one request body may ask for in all (their MACs, encrypted
	// parts, each run of PBKDF2 or the PKCS#12 KDF); a request asking for
	// more gets 413. A request that derives keys at all holds one of a few
	// slots of its own while it is checked (an eighth of MaxInFlight, at
	// least one), or gets 503: costly requests cannot keep ordinary checks
	// waiting.
	MaxKDFWork int
}

// DefaultLimits are the limits a zero [Limits] field takes.
var DefaultLimits = Limits{MaxBody: 8 << 20, MaxBodyMemory: 64 << 20, MaxConns: 1024, MaxInFlight: 32, MaxKeys: 10000, MaxKDFWork: 4 << 21}

// Options configure a [Service].
type Options struct {
	Limits
	// StepCA answers POST /v1/step-ca/authorize. When nil, the path
	// refuses every call (403, stepca.CodeDisabled), saying that the
	// webhook is not enabled and how pkbf serve enables it: only a server
	// that verifies step-ca's client certificate can tell the CA's calls
	// from others.
	StepCA *stepca.Handler
	// Weak, if set, checks every key of /v1/check against the Baseline
	// Requirements' weak-key rules too (keycheck.Options.Weak): its
	// answers then carry the findings. The step-ca webhook checks what
	// its own Handler's KeyChecker checks.
	Weak *weakkeys.Checker
}

// webhookDisabled is the refusal of step-ca's webhook without
// [Options.StepCA].
const webhookDisabled = "step-ca's webhook is not enabled on this server: pkbf serve answers it with --tls-cert, --tls-key, --client-ca and --client-name (see docs/stepca.md)"

// Timeouts of the server [Service.Server] returns: a slow or idle client
// cannot hold a connection for ever. Variables, for tests.
var (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
)

// maxAnswer bounds the answer to one request: with the key limit, it is
// reached only by keys with long error messages.
const maxAnswer = 16 << 20

// A Service is the HTTP API over one filter. It is an http.Handler, safe
// for concurrent use.
type Service struct {
	live         *pkbf.Live
	limits       Limits
	slots        chan struct{}
	bodies       *budget // the bytes of request bodies held
	conns        atomic.Int64
	started      time.Time
	shuttingDown atomic.Bool
	mux          *http.ServeMux
	webhook      *stepca.Handler
	weak         *weakkeys.Checker

	// What requests are doing now, for Shutdown's report and /metrics.
	inFlight, receiving, waiting, checking, answering atomic.Int64

	// Counters, exposed by /metrics.
	requests, badRequests, keys, hits, weakKeys, keyErrors, filterErrors, abandoned, busy, connsRefused, requestsRefused atomic.Int64

	// Counters of the connection and key-derivation limits, for /metrics.
	connsEvicted, kdfRefused atomic.Int64

	costly  chan struct{} // the slots of requests that derive keys
	open    openConns     // the connections Listener holds
	tlsSeen atomic.Bool   // whether the server's connections are TLS
}

// New returns a Service answering from live under opts. It returns an
// error for a negative limit, and for a MaxBody over MaxBodyMemory (no
// body that size could ever be taken).
func New(live *pkbf.Live, opts Options) (*Service, error) {
	l, d := opts.Limits, DefaultLimits
	if l.MaxBody < 0 || l.MaxBodyMemory < 0 || l.MaxConns < 0 || l.MaxInFlight < 0 || l.MaxKeys < 0 || l.MaxKDFWork < 0 {
		return nil, perr.Errorf("negative limit: %+v", l)
	}
	if l.MaxBodyMemory == 0 {
		l.MaxBodyMemory = max(l.MaxBody, d.MaxBodyMemory)
	}
	for _, f := range []struct{ v, d *int }{{&l.MaxConns, &d.MaxConns}, {&l.MaxInFlight, &d.MaxInFlight}, {&l.MaxKeys, &d.MaxKeys}, {&l.MaxKDFWork, &d.MaxKDFWork}} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	if l.MaxBody == 0 {
		l.MaxBody = min(d.MaxBody, l.MaxBodyMemory)
	}
	if l.MaxBody > l.MaxBodyMemory {
		return nil, perr.Errorf("the body limit %d is more than the body memory %d: no body that size could ever be taken", l.MaxBody, l.MaxBodyMemory)
	}
	s := &Service{live: live, limits: l, slots: make(chan struct{}, l.MaxInFlight), bodies: newBudget(l.MaxBodyMemory, l.MaxBody),
		started: time.Now(), mux: http.NewServeMux(), webhook: opts.StepCA, weak: opts.Weak, costly: make(chan struct{}, max(1, l.MaxInFlight/8))}
	if s.webhook == nil {
		s.webhook = stepca.Disabled(webhookDisabled)
	}
	s.mux.HandleFunc("/v1/check", s.check)
	s.mux.HandleFunc("/healthz", s.healthz)
	s.mux.HandleFunc("/readyz", s.readyz)
	s.mux.HandleFunc("/v1/status", s.status)
	s.mux.HandleFunc("/metrics", s.metrics)
	s.mux.HandleFunc(StepCAPath, s.stepCA)
	return s, nil
}

// ServeHTTP answers one request. Requests are bounded across connections
// and HTTP/2 streams, from their headers until their answers are sent:
// past [Limits.MaxConns] of them at once (and opsReserve more for
// monitoring), one more is answered 503 at once.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limit, h2 := int64(s.limits.MaxConns), r.ProtoMajor == 2
	read := r.Method != http.MethodGet && r.Method != http.MethodHead
	if !read && opsPaths[r.URL.Path] {
		limit += opsReserve
	}
	if h2 && !read {
		r.Body.Close() // HTTP/2 keeps no DATA a handler will not read
	}
	if s.inFlight.Add(1) > limit {
		s.inFlight.Add(-1)
		s.requestsRefused.Add(1)
		w.Header().Set("Retry-After", "1")
		if h2 { // a body could wait for a window the client never opens
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		s.httpError(w, http.StatusServiceUnavailable, "too many requests at once: try again shortly")
		return
	}
	defer s.inFlight.Add(-1)
	rc := http.NewResponseController(w)
	if !read { // their handlers answer at once
		rc.SetWriteDeadline(time.Now().Add(stallTimeout))
	}
	s.mux.ServeHTTP(w, r)
	if h2 {
		// The answer leaves within the count: an HTTP/2 stream whose
		// client opens no window for it holds its place until the
		// deadline resets it, not after.
		r.Body.Close()
		rc.SetWriteDeadline(time.Now().Add(stallTimeout))
		rc.Flush()
	}
}

// stallTimeout is how long an answer, or each piece of a long one, may
// wait for its client to take it (over HTTP/2, to open a window for it):
// a client that reads nothing holds its request's place that long, not
// the whole write timeout, so that requests sent once cannot hold every
// place for a minute (red team R5 B1).
const stallTimeout = 10 * time.Second

// opsReserve is how many requests to opsPaths are handled beyond
// MaxConns: a flood of checks leaves monitoring its answers.
const opsReserve = 16

var opsPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true, "/v1/status": true}

// What an HTTP/2 connection may hold: maxStreams requests open at once
// (Go's default is 250; a connection counts once against MaxConns, its
// requests each against the bound ServeHTTP keeps), h2Window bytes of
// request bodies not read yet (the least HTTP/2 allows; Go's default is 1
// MiB), frames of h2Frame bytes (the least; Go's default is 1 MiB) and a
// header table of h2Table bytes. Headers are at most maxHeader bytes, in
// HTTP/1 too.
const (
	maxStreams = 16
	h2Window   = 64 << 10
	h2Frame    = 16 << 10
	h2Table    = 4 << 10
	maxHeader  = 16 << 10
)

// Server returns an http.Server for s with every timeout a public-facing
// server needs and HTTP/2's memory bounded, logging its errors to logger
// (nil: the log package's). Its ConnState tells [Service.Listener] which
// connections are idle. Set its TLSConfig for HTTPS.
func (s *Service) Server(logger *log.Logger) *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeader,
		ErrorLog:          logger,
		ConnState:         s.connState,
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: maxStreams, MaxReceiveBufferPerConnection: h2Window, MaxReceiveBufferPerStream: h2Window,
			MaxReadFrameSize: h2Frame, MaxDecoderHeaderTableSize: h2Table, MaxEncoderHeaderTableSize: h2Table},
	}
}

// InFlight counts the requests at each stage of their work.
type InFlight struct {
	Receiving int64 // reading their bodies
	Waiting   int64 // waiting for a check slot
	Checking  int64 // being checked
	Answering int64 // writing their answers
}

// Shutdown stops srv, the server of s: /readyz answers 503 from now on, no
// connection is accepted, and requests in flight may finish until ctx is
// done. Then the connections left are closed, their clients get no
// answer, and Shutdown returns what they were doing with ctx's error.
// It returns a zero InFlight and nil when every request finished.
func (s *Service) Shutdown(ctx context.Context, srv *http.Server) (InFlight, error) {
	s.shuttingDown.Store(true)
	err := srv.Shutdown(ctx)
	if err == nil {
		return InFlight{}, nil
	}
	cut := InFlight{Receiving: s.receiving.Load(), Waiting: s.waiting.Load(), Checking: s.checking.Load(), Answering: s.answering.Load()}
	srv.Close()
	return cut, err
}

// httpError answers with a status and a JSON error.
func (s *Service) httpError(w http.ResponseWriter, code int, msg string) {
	if code < 500 {
		s.badRequests.Add(1)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	b := text.AppendJSONString([]byte(`{"error":`), msg)
	w.Write(append(b, "}\n"...))
}

// check answers POST /v1/check. A request is read whole before it takes
// one of the slots that bound the requests checked at once. Its work
// stops between two keys when the client goes away or the write timeout
// passes (no answer could be written after it).
func (s *Service) check(w http.ResponseWriter, r *http.Request) {
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
	case <-ctx.Done():
		s.waiting.Add(-1)
		s.stopped(w, ctx)
		return
	}
	s.checking.Add(1)
	a := &answer{budget: s.bodies, base: int64(cap(body))}
	defer a.release()
	found, status, reason, kdfErr := s.answer(ctx, body, a)
	// The check is done: its slot and its body's room go to others
	// while the answer is written, however slowly the client reads.
	s.checking.Add(-1)
	<-s.slots
	release()
	switch {
	case status == http.StatusRequestEntityTooLarge:
		s.httpError(w, status, fmt.Sprintf("the request body holds more than %d keys, certificates and requests: send them in several requests", s.limits.MaxKeys))
		return
	case errors.Is(kdfErr, errKDFTooMuch):
		s.kdfRefused.Add(1)
		s.httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body's PKCS#12 files ask for more than %d iterations of key derivation in all: send fewer of them a request", s.limits.MaxKDFWork))
		return
	case errors.Is(kdfErr, errKDFBusy):
		s.kdfRefused.Add(1)
		w.Header().Set("Retry-After", "1")
		s.httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("the server is checking as many requests that derive keys for PKCS#12 files as it may at once (%d): try again shortly", cap(s.costly)))
		return
	case ctx.Err() != nil:
		s.stopped(w, ctx)
		return
	case status == http.StatusServiceUnavailable:
		s.filterErrors.Add(1)
		s.live.Reload()
		s.httpError(w, status, reason+"; reloading: try again")
		return
	case a.refused == http.StatusRequestEntityTooLarge:
		s.httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the answer would be larger than %d bytes: send fewer keys a request", min(maxAnswer, s.bodies.most()-a.base)))
		return
	case a.refused == http.StatusServiceUnavailable:
		s.busy.Add(1)
		w.Header().Set("Retry-After", "1")
		s.httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("the server holds as many request bodies and answers as it may (%d bytes in all): try again shortly", s.limits.MaxBodyMemory))
		return
	case found == 0 && a.size == 0:
		s.httpError(w, http.StatusBadRequest, "no key, certificate or request in the request body")
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Length", strconv.Itoa(a.size))
	if found == 0 { // nothing in the body could be read as a key
		s.badRequests.Add(1)
		w.WriteHeader(http.StatusBadRequest)
	}
	s.answering.Add(1)
	defer s.answering.Add(-1)
	a.writeTo(stallWriter{w})
}

// stopped answers a request whose work stopped: 503 if it ran out of
// time, nothing if the client went away.
func (s *Service) stopped(w http.ResponseWriter, ctx context.Context) {
	s.abandoned.Add(1)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		s.httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("checking the request took longer than %v: send fewer keys a request", writeTimeout))
	}
}

// answer checks the keys of a request body in the current filter and
// writes the answer's body into a, stopping when a has no room (see
// a.refused). It returns how many of the body's objects could be read as
// keys, and a status: 413 past the key limit, 503 when the filter's file
// failed while in use (reason then says why), else 0; or an error
// wrapping errKDFBusy or errKDFTooMuch.
func (s *Service) answer(ctx context.Context, body []byte, a *answer) (found, status int, reason string, kdfErr error) {
	request := keycheck.Bytes("request", body)
	objects := 0
	kdf := &kdfWork{s: s, left: s.limits.MaxKDFWork}
	defer kdf.release()
	s.live.Do(func(f *pkbf.Filter) { // one file answers the whole request
		// One goroutine a request: requests run in parallel already.
		for v := range keycheck.New(f, keycheck.Options{Workers: 1, Weak: s.weak, KDFWork: kdf.spend}).Check(ctx, request) {
			if objects++; objects > s.limits.MaxKeys {
				status = http.StatusRequestEntityTooLarge
				return
			}
			switch {
			case errors.Is(v.Err, pkbf.ErrFileChanged):
				status, reason = http.StatusServiceUnavailable, perr.Text(v.Err)
				return
			case errors.Is(v.Err, errKDFBusy), errors.Is(v.Err, errKDFTooMuch):
				kdfErr = v.Err
				return
			case v.Err != nil:
				s.keyErrors.Add(1)
				if errors.Is(v.Err, keys.ErrEncryptedKey) {
					v.Err = perr.Errorf("%w; pkbf serve takes no passphrase: send the public key or the certificate", v.Err)
				}
			}
			if v.Err == nil || v.Refuse() { // an answer, maybe beside an error
				found++
				s.keys.Add(1)
				if v.Probably {
					s.hits.Add(1)
				}
				if len(v.Findings) > 0 {
					s.weakKeys.Add(1)
				}
			}
			if !a.add(v) {
				return
			}
		}
	})
	return found, status, reason, kdfErr
}

// What a request whose PKCS#12 files ask for too much key derivation gets.
var (
	errKDFBusy    = perr.New("busy")
	errKDFTooMuch = perr.New("too much")
)

// kdfWork is a request's PKCS#12 key-derivation work: the iterations left
// of Limits.MaxKDFWork, and whether it holds one of the slots of the
// requests that derive keys.
type kdfWork struct {
	s    *Service
	left int
	slot bool
}

func (k *kdfWork) spend(iterations int) error {
	if !k.slot {
		select {
		case k.s.costly <- struct{}{}:
			k.slot = true
		default:
			return errKDFBusy
		}
	}
	if iterations > k.left {
		return errKDFTooMuch
	}
	k.left -= iterations
	return nil
}

func (k *kdfWork) release() {
	if k.slot {
		<-k.s.costly
		k.slot = false
	}
}

// webhookCopies is how many times its body a webhook call may hold at
// once: the handler reads it whole (io.ReadAll grows its buffer by
// copying it), then decodes the key from it.
const webhookCopies = 3

// stepCA answers step-ca's webhook with its body charged to the budget of
// bodies held: webhookCopies times its declared length (MaxBody's when it
// is chunked), taken before the handler reads it and given back once it
// has answered. The handler reads no more than that.
func (s *Service) stepCA(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost { // refused, unread
		s.webhook.ServeHTTP(w, r)
		return
	}
	n := r.ContentLength
	switch {
	case n < 0:
		n = s.limits.MaxBody
	case n > s.limits.MaxBody:
		n = 0 // refused, unread
	}
	charge := min(webhookCopies*n, s.bodies.most())
	if !s.bodies.take(charge, charge > smallBody) {
		s.busy.Add(1)
		w.Header().Set("Connection", "close")
		w.Header().Set("Retry-After", "1")
		s.httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("the server holds as many request bodies as it may (%d bytes in all): try again shortly", s.limits.MaxBodyMemory))
		return
	}
	defer s.bodies.give(charge)
	r.Body = http.MaxBytesReader(w, r.Body, n)
	s.webhook.ServeHTTP(w, r)
}

// filterErr reports whether the file of the filter in use is still valid:
// nil, or why not (it was cut short or overwritten in place with what is
// not a filter, and no valid file has replaced it yet; checks are answered
// from the copy read before).
func (s *Service) filterErr() (err error) {
	s.live.Do(func(f *pkbf.Filter) { err = f.FileChanged() })
	return err
}

// healthz answers 200 while the filter's file is valid, else 503 with the
// reason.
func (s *Service) healthz(w http.ResponseWriter, r *http.Request) {
	if err := s.filterErr(); err != nil {
		s.httpError(w, http.StatusServiceUnavailable, fileBroken+perr.Text(err))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "ok\n")
}

// fileBroken begins healthz's and readyz's answer when the filter's file
// is not valid.
const fileBroken = "the filter file is not valid (checks are answered from the copy read before it changed): "

// readyz answers 200 while the service takes requests and its filter's
// file is valid; 503, with the reason, while it is not and once shutdown
// begins, so that a load balancer stops sending requests.
func (s *Service) readyz(w http.ResponseWriter, r *http.Request) {
	if s.shuttingDown.Load() {
		s.httpError(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	if err := s.filterErr(); err != nil {
		s.httpError(w, http.StatusServiceUnavailable, fileBroken+perr.Text(err))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "ready\n")
}

// LiveOptions are options for pkbf.OpenLive(path, ...) that check path
// every poll, compare the file with the copy in use every verify, and log
// to logger each switch to a new file, each change of the file in use in
// place, and each file that could not be loaded (the old one is kept), as
// pkbf serve does.
func LiveOptions(path string, poll, verify time.Duration, logger *log.Logger) pkbf.LiveOptions {
	return pkbf.LiveOptions{
		Interval:       poll,
		VerifyInterval: verify,
		OnReload: func(h pkbf.Header) {
			logger.Printf("reloaded %s: revision %d, %d entries", path, h.Revision, h.EntryCount)
		},
		OnChange: func(was, h pkbf.Header) {
			logger.Printf("%s changed in place: revision %d -> %d, %d -> %d entries, updated %s (keys added in place)",
				path, was.Revision, h.Revision, was.EntryCount, h.EntryCount, text.Updated(h.Updated))
		},
		OnError: func(err error) { logger.Printf("%s", perr.Text(err)) },
	}
}

// status answers the filter's header and the reload history as JSON.
func (s *Service) status(w http.ResponseWriter, r *http.Request) {
	st := s.live.Stats()
	h := st.Header
	v := map[string]any{
		"file": st.Path, "revision": h.Revision, "updated": text.Updated(h.Updated),
		"entries": h.EntryCount, "hash_count": h.HashCount, "hash_length": h.HashLength, "bits": h.Bits(),
		"size": h.FileSize(), "loaded_at": st.LoadedAt.UTC().Format(time.RFC3339), "reloads": st.Reloads,
		"reload_errors": st.Errors, "pending_closes": st.PendingCloses, "started_at": s.started.UTC().Format(time.RFC3339),
	}
	if st.LastError != nil {
		v["last_reload_error"] = perr.Text(st.LastError)
	}
	if err := s.filterErr(); err != nil {
		v["filter_error"] = perr.Text(err)
	}
	v["connections"], v["body_bytes_held"] = s.conns.Load(), s.bodies.held()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// metrics answers the counters in the Prometheus text exposition format.
func (s *Service) metrics(w http.ResponseWriter, r *http.Request) {
	st := s.live.Stats()
	webhook := s.webhook.Stats()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	for _, m := range []struct {
		name, kind, help string
		value            float64
	}{
		{"pkbf_requests_total", "counter", "Requests to /v1/check.", float64(s.requests.Load())},
		{"pkbf_bad_requests_total", "counter", "Requests answered with a 4xx status.", float64(s.badRequests.Load())},
		{"pkbf_keys_checked_total", "counter", "Keys looked up in the filter.", float64(s.keys.Load())},
		{"pkbf_keys_probably_total", "counter", "Keys the filter answered probably for.", float64(s.hits.Load())},
		{"pkbf_keys_weak_total", "counter", "Keys the weak-key checks (--br) found a reason to refuse.", float64(s.weakKeys.Load())},
		{"pkbf_key_errors_total", "counter", "Objects in request bodies that could not be read as keys.", float64(s.keyErrors.Load())},
		{"pkbf_filter_errors_total", "counter", "Requests that failed because the filter file changed under the server.", float64(s.filterErrors.Load())},
		{"pkbf_requests_stopped_total", "counter", "Requests whose work stopped because the client went away or time ran out.", float64(s.abandoned.Load())},
		{"pkbf_requests_busy_total", "counter", "Requests refused with 503 because request bodies held all of --max-body-memory.", float64(s.busy.Load())},
		{"pkbf_connections_refused_total", "counter", "Connections refused with 503 because --max-conns were open.", float64(s.connsRefused.Load())},
		{"pkbf_requests_refused_total", "counter", "Requests refused with 503 because --max-conns requests were in flight (HTTP/2 carries several a connection).", float64(s.requestsRefused.Load())},
		{"pkbf_connections_evicted_total", "counter", "Idle connections closed to make room for new ones near --max-conns.", float64(s.connsEvicted.Load())},
		{"pkbf_requests_kdf_refused_total", "counter", "Requests refused because their PKCS#12 files asked for too much key derivation (413), or every slot for such requests was taken (503).", float64(s.kdfRefused.Load())},
		{"pkbf_connections", "gauge", "Connections open.", float64(s.conns.Load())},
		{"pkbf_requests_in_flight", "gauge", "Requests being handled, until their answers are sent, of --max-conns.", float64(s.inFlight.Load())},
		{"pkbf_requests_receiving", "gauge", "Requests to /v1/check reading their bodies.", float64(s.receiving.Load())},
		{"pkbf_requests_waiting", "gauge", "Requests to /v1/check waiting for a check slot, of --max-in-flight.", float64(s.waiting.Load())},
		{"pkbf_requests_checking", "gauge", "Requests to /v1/check being checked.", float64(s.checking.Load())},
		{"pkbf_requests_answering", "gauge", "Requests to /v1/check writing their answers.", float64(s.answering.Load())},
		{"pkbf_body_bytes_held", "gauge", "Bytes of request bodies and answers held, of --max-body-memory.", float64(s.bodies.held())},
		{"pkbf_reloads_total", "counter", "Switches to a new filter file.", float64(st.Reloads)},
		{"pkbf_reload_errors_total", "counter", "New filter files that could not be loaded.", float64(st.Errors)},
		{"pkbf_reload_failing", "gauge", "1 from a file at the filter path that could not be loaded (the copy in use still answers) until one is, else 0.", b2f(st.LastError != nil)},
		{"pkbf_filter_pending_closes", "gauge", "Replaced filter files still being released (the kernel can take seconds for a large one).", float64(st.PendingCloses)},
		{"pkbf_filter_entries", "gauge", "Entries in the filter's header.", float64(st.Header.EntryCount)},
		{"pkbf_filter_revision", "gauge", "Revision in the filter's header.", float64(st.Header.Revision)},
		{"pkbf_filter_loaded_timestamp_seconds", "gauge", "When the filter in use was loaded.", float64(st.LoadedAt.Unix())},
		{"pkbf_stepca_allowed_total", "counter", "step-ca webhook calls allowed.", float64(webhook.Allowed)},
		{"pkbf_stepca_refused_total", "counter", "step-ca webhook calls refused, for any reason.", float64(webhook.Refused)},
		{"pkbf_stepca_compromised_total", "counter", "step-ca webhook calls refused for a key the filter holds.", float64(webhook.Compromised)},
		{"pkbf_stepca_weak_total", "counter", "step-ca webhook calls refused for a weak key (--br) the filter does not hold.", float64(webhook.Weak)},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", m.name, m.help, m.name, m.kind, m.name, strconv.FormatFloat(m.value, 'f', -1, 64))
	}
}

// b2f is 1 for true, 0 for false: a Prometheus gauge of a condition.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
