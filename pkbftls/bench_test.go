package pkbftls_test

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/pkbftls"
)

// BenchmarkHook times the hook alone on a clean peer's chain, as crypto/tls
// calls it after verifying one: the leaf and the intermediate it sent, and
// the verified chain through them to the root (whose certificates are the
// peer's: compared, not looked up again). The filter is in cache (8 KiB);
// a filter larger than the caches adds the memory latency of one to three
// queries a key (docs/performance.md, "Queries"). x-contains is the hook's
// time over the floor, timed in step with it: keycheck's Contains of the same
// two keys, by hand.
func BenchmarkHook(b *testing.B) {
	p := pki(b)
	live, filter := openFilters(b)
	const step = 1024
	for _, kt := range keyTypes {
		cs := p.cleanState(kt)
		contains := check(filter)
		floor := func() {
			for range step {
				for _, c := range cs.PeerCertificates {
					if contains.Contains(c.RawSubjectPublicKeyInfo) {
						b.Fatal("a clean key found")
					}
				}
			}
		}
		for _, f := range []struct {
			name string
			f    keycheck.Querier
		}{{"Filter", filter}, {"Live", live}} {
			hook := pkbftls.VerifyConnection(check(f.f))
			b.Run(kt+"/"+f.name, func(b *testing.B) {
				b.ReportAllocs()
				var floorTime time.Duration
				n := 0
				for b.Loop() {
					if err := hook(cs); err != nil {
						b.Fatal(err)
					}
					if n++; n%step == 0 {
						b.StopTimer()
						start := time.Now()
						floor()
						floorTime += time.Since(start)
						b.StartTimer()
					}
				}
				if floorTime > 0 {
					perFloor := float64(floorTime) / float64(n/step*step)
					b.ReportMetric(float64(b.Elapsed())/float64(n)/perFloor, "x-contains")
					b.ReportMetric(perFloor, "contains-ns")
				}
			})
		}
	}
}

// BenchmarkHandshake times a whole TLS 1.3 handshake with client
// certificates between a Go client and a Go server over net.Pipe, without
// the hook, with it on the server, and with it on both ends, for each key
// type (the server's and the client's certificates are of that type,
// under a P-256 intermediate). The difference is the hook's cost, within
// the noise of the handshake's public-key operations.
func BenchmarkHandshake(b *testing.B) {
	p := pki(b)
	live, _ := liveFilter(b)
	for _, kt := range keyTypes {
		for _, mode := range []string{"no hook", "server hook", "both hooks"} {
			scfg := serverConfig(p, p.clean[kt], tls.VersionTLS13)
			ccfg := clientConfig(p, p.clean[kt], tls.VersionTLS13)
			scfg.SessionTicketsDisabled = true // a full handshake every time
			if mode != "no hook" {
				pkbftls.Install(scfg, check(live))
			}
			if mode == "both hooks" {
				pkbftls.Install(ccfg, check(live))
			}
			b.Run(kt+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := pipeHandshake(scfg, ccfg); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// pipeHandshake runs one handshake over net.Pipe and returns the first
// error of either end.
func pipeHandshake(scfg, ccfg *tls.Config) error {
	sc, cc := net.Pipe()
	defer sc.Close()
	defer cc.Close()
	errc := make(chan error, 1)
	go func() {
		s := tls.Server(sc, scfg)
		errc <- s.Handshake()
		sc.Close()
	}()
	err := tls.Client(cc, ccfg).Handshake()
	if serr := <-errc; serr != nil {
		return serr
	}
	return err
}
