package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keys"
)

// serve: a small HTTP service over one filter file, for programs in any
// language. Standard library net/http: it has every timeout and limit a
// public-facing server needs.

type serveFlags struct {
	listen      *string
	poll        *time.Duration
	maxBody     *int64
	maxInFlight *int
	maxKeys     *int
}

func serveCommand(stdout, stderr io.Writer) (*command, *serveFlags) {
	c := newCommand("serve", "serve [--listen ADDR] [flags] FILTER", stdout, stderr)
	fl := &serveFlags{
		listen:      c.String("listen", "127.0.0.1:8080", "listen on `ADDR` (host:port; :0 picks a free port)"),
		poll:        c.Duration("poll", time.Second, "check the filter path for a new file every `DURATION` (SIGHUP checks at once)"),
		maxBody:     c.Int64("max-body", 8<<20, "refuse request bodies over `BYTES` (413)"),
		maxInFlight: c.Int("max-in-flight", 32, "check at most `N` requests at once; others wait"),
		maxKeys:     c.Int("max-keys", 10000, "refuse requests holding more than `N` keys, certificates and requests (413)"),
	}
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
	if *fl.maxBody < 1 || *fl.maxInFlight < 1 || *fl.maxKeys < 1 {
		_, code := c.fail("--max-body, --max-in-flight and --max-keys must be positive")
		return code
	}
	logger := log.New(stderr, "pkbf: serve: ", log.LstdFlags)
	path := c.Arg(0)
	live, err := pkbf.OpenLive(path, pkbf.LiveOptions{
		Interval: *fl.poll,
		OnReload: func(h pkbf.Header) {
			logger.Printf("reloaded %s: revision %d, %d entries", path, h.Revision, h.EntryCount)
		},
		OnError: func(err error) { logger.Printf("%s", displayErr(err)) },
	})
	if err != nil {
		errorf(stderr, "%s", displayErr(err))
		return exitTrouble
	}
	defer live.Close()
	ln, err := net.Listen("tcp", *fl.listen)
	if err != nil {
		errorf(stderr, "%s", displayErr(err))
		return exitTrouble
	}
	h := newService(live, limits{body: *fl.maxBody, inFlight: *fl.maxInFlight, keys: *fl.maxKeys})
	srv := newHTTPServer(h, logger)
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(signals)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Printf("serving %s on http://%s", path, ln.Addr())
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
				continue
			}
			logger.Printf("%v: shutting down, letting requests in flight finish", sig)
			h.shuttingDown.Store(true)
			ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			err := srv.Shutdown(ctx)
			cancel()
			if err != nil {
				errorf(stderr, "shutdown: %v", err)
				return exitTrouble
			}
			return exitOK
		}
	}
}

// limits bound what one request may ask of the service.
type limits struct {
	body     int64 // bytes in a request body
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
	started      time.Time
	shuttingDown atomic.Bool
	mux          *http.ServeMux

	// Counters, exposed by /metrics.
	requests, badRequests, keys, hits, keyErrors, filterErrors, abandoned atomic.Int64
}

func newService(live *pkbf.Live, l limits) *service {
	s := &service{live: live, limits: l, slots: make(chan struct{}, l.inFlight), started: time.Now(), mux: http.NewServeMux()}
	s.mux.HandleFunc("/v1/check", s.check)
	s.mux.HandleFunc("/healthz", s.healthz)
	s.mux.HandleFunc("/readyz", s.readyz)
	s.mux.HandleFunc("/v1/status", s.status)
	s.mux.HandleFunc("/metrics", s.metrics)
	return s
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
	b := appendJSONString([]byte(`{"error":`), msg)
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
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		s.stopped(w, ctx)
		return
	}
	items, err := scanItems(ctx, body, s.limits.keys)
	switch {
	case errors.Is(err, errTooManyKeys):
		s.httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body holds more than %d keys, certificates and requests: send them in several requests", s.limits.keys))
		return
	case ctx.Err() != nil:
		s.stopped(w, ctx)
		return
	case err != nil:
		s.httpError(w, http.StatusBadRequest, displayErr(err))
		return
	case len(items) == 0:
		s.httpError(w, http.StatusBadRequest, "no key, certificate or request in the request body")
		return
	}
	if err := s.lookup(ctx, items); ctx.Err() != nil {
		s.stopped(w, ctx)
		return
	} else if err != nil {
		s.filterErrors.Add(1)
		s.live.Reload()
		s.httpError(w, http.StatusServiceUnavailable, displayErr(err)+"; reloading: try again")
		return
	}
	out, found := s.answer(items)
	if len(out) > maxAnswer {
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

// readBody reads a request's body, or answers the error and reports false.
func (s *service) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= s.limits.body {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.limits.body))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		s.httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", s.limits.body))
		return nil, false
	case err != nil:
		s.httpError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return nil, false
	case len(bytes.TrimSpace(buf.Bytes())) == 0:
		s.httpError(w, http.StatusBadRequest, "the request body is empty: POST keys, certificates or requests")
		return nil, false
	}
	return buf.Bytes(), true
}

// stopped answers a request whose work stopped: 503 if it ran out of
// time, nothing if the client went away.
func (s *service) stopped(w http.ResponseWriter, ctx context.Context) {
	s.abandoned.Add(1)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		s.httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("checking the request took longer than %v: send fewer keys a request", writeTimeout))
	}
}

// answer is the body answering items, and the number of items that could
// be read as keys.
func (s *service) answer(items []item) (out []byte, found int) {
	for i := range items {
		it := &items[i]
		if len(out) > maxAnswer {
			break
		}
		if it.err != nil {
			s.keyErrors.Add(1)
			out = appendJSONError(out, it)
			continue
		}
		found++
		s.keys.Add(1)
		if it.probably {
			s.hits.Add(1)
		}
		out = appendJSONVerdict(out, it, false)
	}
	return out, found
}

// errTooManyKeys stops scanning a request body past its key limit.
var errTooManyKeys = errors.New("too many keys")

// scanItems reads every key of a request body, at most max of them, and
// stops with ctx's error when ctx is done.
func scanItems(ctx context.Context, body []byte, max int) ([]item, error) {
	sc := keys.NewScanner(bytes.NewReader(body))
	var items []item
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(items) == max {
			return nil, errTooManyKeys
		}
		items = append(items, item{input: "request", key: sc.Key()})
	}
	return items, sc.Err()
}

// lookup decodes the items' keys and looks them up together in the
// current filter; a filter file cut short while in use is an error.
func (s *service) lookup(ctx context.Context, items []item) (err error) {
	defer func() {
		if ferr := fileChanged(recover()); ferr != nil {
			err = ferr
		}
	}()
	return lookupItems(ctx, items, nil, s.live.ProbablyBatch)
}

// healthz answers 200 while the process has a filter, which a Live filter
// always has once started.
func (s *service) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "ok\n")
}

// readyz answers 200 until shutdown begins, then 503, so that a load
// balancer stops sending requests.
func (s *service) readyz(w http.ResponseWriter, r *http.Request) {
	if s.shuttingDown.Load() {
		s.httpError(w, http.StatusServiceUnavailable, "shutting down")
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
		"file": s.live.Path(), "revision": h.Revision, "updated": h.Updated.UTC().Format(time.RFC3339),
		"entries": h.EntryCount, "hash_count": h.HashCount, "hash_length": h.HashLength, "bits": h.Bits(),
		"size": h.FileSize(), "loaded_at": st.LoadedAt.UTC().Format(time.RFC3339), "reloads": st.Reloads,
		"reload_errors": st.Errors, "pending_closes": st.PendingCloses, "started_at": s.started.UTC().Format(time.RFC3339),
	}
	if st.LastError != nil {
		v["last_reload_error"] = displayErr(st.LastError)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// metrics answers the counters in the Prometheus text exposition format.
func (s *service) metrics(w http.ResponseWriter, r *http.Request) {
	st := s.live.Stats()
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
		{"pkbf_reloads_total", "counter", "Switches to a new filter file.", float64(st.Reloads)},
		{"pkbf_reload_errors_total", "counter", "New filter files that could not be loaded.", float64(st.Errors)},
		{"pkbf_filter_pending_closes", "gauge", "Replaced filter files still being released (the kernel can take seconds for a large one).", float64(st.PendingCloses)},
		{"pkbf_filter_entries", "gauge", "Entries in the filter's header.", float64(st.Header.EntryCount)},
		{"pkbf_filter_revision", "gauge", "Revision in the filter's header.", float64(st.Header.Revision)},
		{"pkbf_filter_loaded_timestamp_seconds", "gauge", "When the filter in use was loaded.", float64(st.LoadedAt.Unix())},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", m.name, m.help, m.name, m.kind, m.name, strconv.FormatFloat(m.value, 'f', -1, 64))
	}
}
