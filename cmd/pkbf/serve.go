package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/cli"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/pkbfhttp"
	"github.com/pkbf/pkbf/stepca"
)

// serve: the HTTP service of package pkbfhttp over one filter file. The
// command reads its flags, opens the filter, listens, reloads on SIGHUP
// and drains on Ctrl-C or SIGTERM.

type serveFlags struct {
	listen                                string
	poll, verify                          time.Duration
	maxBody, maxMemory                    sizeFlag
	maxConns, maxInFlight, maxKeys        int
	tlsCert, tlsKey, clientCA, clientName string
	webhookSecretFile                     string
	webhookInsecure                       bool
	br                                    brFlags
}

func (fl *serveFlags) command(stdout, stderr io.Writer) *command {
	c := newCommand("serve", "serve [--listen ADDR] [flags] FILTER", stdout, stderr)
	d := pkbfhttp.DefaultLimits
	fl.maxBody, fl.maxMemory = sizeFlag(d.MaxBody), sizeFlag(d.MaxBodyMemory)
	c.StringVar(&fl.listen, "listen", "127.0.0.1:8080", "listen on `ADDR` (host:port; :0 picks a free port)")
	c.DurationVar(&fl.poll, "poll", time.Second, "check the filter path for a new file every `DURATION` (SIGHUP checks at once)")
	c.DurationVar(&fl.verify, "verify", time.Minute, "compare the filter file with the copy in use every `DURATION`, to follow writers that change no time of the file")
	c.IntVar(&fl.maxConns, "max-conns", d.MaxConns, "hold at most `N` connections at once (the one idle the longest makes room for a new one), and N requests over all of them (HTTP/2 carries up to 16 a connection); more are answered 503")
	c.IntVar(&fl.maxInFlight, "max-in-flight", d.MaxInFlight, "check at most `N` requests at once; others wait")
	c.IntVar(&fl.maxKeys, "max-keys", d.MaxKeys, "refuse requests holding more than `N` keys, certificates and requests (413)")
	c.StringVar(&fl.tlsCert, "tls-cert", "", "serve HTTPS with the certificate (and its chain) in PEM `FILE`; with --tls-key")
	c.StringVar(&fl.tlsKey, "tls-key", "", "the private key of --tls-cert, in PEM `FILE`")
	c.StringVar(&fl.clientCA, "client-ca", "", "require of every client a certificate chained to a CA certificate in PEM `FILE` (step-ca's root), and answer step-ca's webhook at /v1/step-ca/authorize")
	c.StringVar(&fl.clientName, "client-name", "", "answer step-ca's webhook only for a client certificate whose subject common name is `NAME`: ca.json's \"commonName\" (\"Step Online CA\" when unset); needed with --client-ca")
	c.StringVar(&fl.webhookSecretFile, "webhook-secret-file", "", "require step-ca's X-Smallstep-Signature, an HMAC-SHA256 under the base64 secret in `FILE`: only for a webhook made through step-ca's remote management (a ca.json webhook has no secret, and every call would be refused)")
	c.BoolVar(&fl.webhookInsecure, "webhook-insecure", false, "answer step-ca's webhook without a client certificate, over plain HTTP too: local tests only")
	c.Var(&fl.maxBody, "max-body", "refuse request bodies over `SIZE` (413, before reading them)")
	c.Var(&fl.maxMemory, "max-body-memory", "hold at most `SIZE` of request bodies and answers at once, all connections together; a request over it gets 503 (before its body is read when its length is declared)")
	fl.br.register(c)
	c.alias("l", "listen")
	return c
}

// serveHeapRoom is the heap serve's memory limit allows beyond
// --max-body-memory: the program, its connections (up to --max-conns)
// and the working memory of the checks under way. The filter's copy is
// outside the heap, and outside the limit.
const serveHeapRoom = 64 << 20

// shutdownGrace is how long requests in flight may take to finish once
// serve is asked to stop. A variable, for tests.
var shutdownGrace = 10 * time.Second

func runServe(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var fl serveFlags
	c := fl.command(stdout, stderr)
	if ok, code := c.parse(args, 1, 1); !ok {
		return code
	}
	l := pkbfhttp.Limits{MaxBody: int64(fl.maxBody), MaxBodyMemory: int64(fl.maxMemory), MaxConns: fl.maxConns, MaxInFlight: fl.maxInFlight, MaxKeys: fl.maxKeys}
	if l.MaxBody < 1 || l.MaxBodyMemory < 1 || l.MaxConns < 1 || l.MaxInFlight < 1 || l.MaxKeys < 1 {
		return c.fail("--max-body, --max-body-memory, --max-conns, --max-in-flight and --max-keys must be positive")
	}
	if l.MaxBody > l.MaxBodyMemory {
		return c.fail(fmt.Sprintf("--max-body %s is more than --max-body-memory %s: no body that size could ever be taken", &fl.maxBody, &fl.maxMemory))
	}
	if os.Getenv("GOGC") == "" {
		// What serve holds is bounded by its limits; collect as often as
		// Go's default, not as check's throughput setting (main), so that
		// memory stays near them.
		debug.SetGCPercent(100)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// Under load the heap holds up to --max-body-memory of bodies and
		// answers, and checks' working memory; without a limit the
		// collector lets garbage grow as large again before it runs.
		debug.SetMemoryLimit(l.MaxBodyMemory + serveHeapRoom)
	}
	tlsConfig, cert, webhook, err := stepCAOptions(&fl)
	if err != nil {
		return c.fail(message(err))
	}
	weak, closeWeak, err := fl.br.checker(c)
	if err != nil {
		return c.fail(message(err))
	}
	defer closeWeak()
	logger := log.New(stderr, "pkbf: serve: ", log.LstdFlags)
	webhook.Logger = logger
	path := c.Arg(0)
	live, err := pkbf.OpenLive(path, pkbfhttp.LiveOptions(path, fl.poll, fl.verify, logger))
	if err != nil {
		return trouble(stderr, err)
	}
	defer live.Close()
	opts := pkbfhttp.Options{Limits: l, Weak: weak}
	if fl.clientCA != "" || fl.webhookInsecure {
		opts.StepCA = stepca.NewHandler(keycheck.New(live, keycheck.Options{Weak: weak}), webhook)
	}
	svc, err := pkbfhttp.New(live, opts)
	if err != nil {
		return trouble(stderr, err)
	}
	ln, err := net.Listen("tcp", fl.listen)
	if err != nil {
		return trouble(stderr, err)
	}
	// Ctrl-C and SIGTERM drain, as they stop every other command; a
	// second one quits at once. SIGHUP checks the filter and the
	// certificate files.
	ctx, release := cli.InterruptContext()
	defer release()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// A reload reads files, maybe slowly: beside the loop, which stays free
	// for Ctrl-C and SIGTERM; SIGHUPs during one make one more after it.
	reload := make(chan struct{}, 1)
	go func() {
		for range reload {
			if err := live.Reload(); err == nil {
				logger.Printf("SIGHUP: %s checked", path)
			}
			if cert != nil {
				if err := cert.Reload(); err != nil {
					logger.Printf("SIGHUP: keeping the certificate in use: %s", message(flagged(err, &fl)))
				} else {
					logger.Printf("SIGHUP: %s reloaded", cert.CertFile())
				}
			}
		}
	}()
	srv := svc.Server(logger)
	served := make(chan error, 1)
	scheme := "http"
	if tlsConfig != nil {
		srv.TLSConfig, scheme = tlsConfig, "https"
		go func() { served <- srv.ServeTLS(svc.Listener(ln), "", "") }()
	} else {
		go func() { served <- srv.Serve(svc.Listener(ln)) }()
	}
	logger.Printf("serving %s on %s://%s", path, scheme, ln.Addr())
	if opts.StepCA != nil {
		logger.Printf("step-ca webhook at %s://%s%s", scheme, ln.Addr(), pkbfhttp.StepCAPath)
	}
	for {
		select {
		case err := <-served:
			errorf(stderr, "%v", err)
			return exitTrouble
		case <-hup:
			select {
			case reload <- struct{}{}:
			default: // one is waiting already
			}
		case <-ctx.Done():
			return drain(svc, srv, context.Cause(ctx), logger)
		}
	}
}

// drain stops srv, asked to by why: no new connections, requests in
// flight given shutdownGrace to finish, then the rest cut off, saying
// what they were doing. Being asked to stop and stopping is a success,
// whatever was cut.
func drain(svc *pkbfhttp.Service, srv *http.Server, why error, logger *log.Logger) int {
	logger.Printf("%v: shutting down, letting requests in flight finish (at most %v)", why, shutdownGrace)
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	cut, err := svc.Shutdown(ctx, srv)
	if err == nil {
		logger.Printf("stopped")
		return exitOK
	}
	logger.Printf("stopped after %v: cut off %s receiving a body, %s waiting to be checked, %s being checked, %s writing an answer (their clients get no whole answer)",
		shutdownGrace, plural(int(cut.Receiving), "request", "requests"), plural(int(cut.Waiting), "request", "requests"), plural(int(cut.Checking), "request", "requests"), plural(int(cut.Answering), "request", "requests"))
	return exitOK
}

// stepCAOptions reads the TLS and webhook flags: the server's TLS
// configuration and certificate (nil for plain HTTP), and the webhook's
// options.
func stepCAOptions(fl *serveFlags) (*tls.Config, *pkbfhttp.Certificate, stepca.Options, error) {
	var opts stepca.Options
	cert, key, ca, secret := fl.tlsCert, fl.tlsKey, fl.clientCA, fl.webhookSecretFile
	switch {
	case (cert == "") != (key == ""):
		return nil, nil, opts, perr.Errorf("--tls-cert and --tls-key go together")
	case ca != "" && cert == "":
		return nil, nil, opts, perr.Errorf("--client-ca needs --tls-cert and --tls-key: client certificates come over TLS")
	case ca != "" && fl.clientName == "":
		return nil, nil, opts, perr.Errorf("--client-ca needs --client-name: step-ca's root also signs its subscribers' certificates, and only the common name of step-ca's own tells it apart (see docs/stepca.md)")
	case fl.clientName != "" && ca == "":
		return nil, nil, opts, perr.Errorf("--client-name needs --client-ca: it names a certificate --client-ca verifies")
	case ca != "" && fl.webhookInsecure:
		return nil, nil, opts, perr.Errorf("--webhook-insecure answers step-ca without the client certificate --client-ca requires: give one or the other")
	case secret != "" && ca == "" && !fl.webhookInsecure:
		return nil, nil, opts, perr.Errorf("--webhook-secret-file needs --client-ca: step-ca is authenticated by its client certificate first")
	}
	opts.Unauthenticated, opts.ClientName = fl.webhookInsecure, fl.clientName
	if secret != "" {
		b, err := os.ReadFile(secret)
		if err != nil {
			return nil, nil, opts, err
		}
		if opts.Secret, err = stepca.ParseSecret(b); err != nil {
			return nil, nil, opts, perr.Errorf("--webhook-secret-file %s: %w", secret, err)
		}
	}
	if cert == "" {
		return nil, nil, opts, nil
	}
	sc, err := pkbfhttp.LoadCertificate(cert, key)
	if err != nil {
		return nil, nil, opts, flagged(err, fl)
	}
	config, err := pkbfhttp.TLSConfig(sc, ca)
	return config, sc, opts, flagged(err, fl)
}

// flagged words pkbfhttp's error about a TLS file by the flag that named
// it; any other error is returned as it is.
func flagged(err error, fl *serveFlags) error {
	var bad *pkbfhttp.CertificateError
	switch {
	case errors.As(err, &bad):
		return perr.Errorf("--tls-cert %s, --tls-key %s: %v", bad.CertFile, bad.KeyFile, bad.Err)
	case errors.Is(err, pkbfhttp.ErrNoPEMCertificate):
		return perr.Errorf("--client-ca %s %w", fl.clientCA, pkbfhttp.ErrNoPEMCertificate)
	}
	return err
}
