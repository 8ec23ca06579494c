package ct

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"filippo.io/sunlight"

	"github.com/pkbf/pkbf/ct/cttest"
	"github.com/pkbf/pkbf/keycheck"
)

// BenchmarkScan scans a Static CT log of 2^20 entries (PKBF_CT_ENTRIES
// sets another size) served over HTTP on 127.0.0.1, and times in the same
// run the Sunlight client's bare iteration of the same log (tiles fetched
// and checked, entries parsed, nothing else): the floor. It reports both
// in entries/s, and x-floor, the scan's time over the floor's; they run
// alternately, after one untimed pass that brings the tiles into the page
// cache. Command:
//
//	go test -run '^$' -bench BenchmarkScan -benchtime 3x ./ct
func BenchmarkScan(b *testing.B) {
	n := 1 << 20
	if s := os.Getenv("PKBF_CT_ENTRIES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	fx := cttest.NewFixture(b, n, 4096, 9973)
	dir := b.TempDir()
	fx.WriteStatic(b, dir, n)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	f := openFilterTB(b, fx.Filter)

	bare := func() time.Duration {
		c, err := sunlight.NewClient(&sunlight.ClientConfig{MonitoringPrefix: srv.URL, UserAgent: "pkbf-ct benchmark (+https://github.com/pkbf/pkbf)", ConcurrencyLimit: 8})
		if err != nil {
			b.Fatal(err)
		}
		l, _ := Open(context.Background(), srv.URL, Options{Kind: Static})
		head, err := l.Head(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		t, _ := tree(head)
		start := time.Now()
		count, sum := int64(0), 0
		for next := int64(0); next < head.Size; {
			for i, e := range c.Entries(context.Background(), t, next) {
				sum += len(e.Certificate) + len(e.PreCertificate)
				next = i + 1
				count++
			}
			if err := c.Err(); err != nil {
				b.Fatal(err)
			}
		}
		if count != int64(n) || sum == 0 {
			b.Fatalf("%d entries read, want %d", count, n)
		}
		return time.Since(start)
	}
	scan := func() time.Duration {
		l, err := Open(context.Background(), srv.URL, Options{Kind: Static})
		if err != nil {
			b.Fatal(err)
		}
		hits := 0
		start := time.Now()
		res, err := (&Scan{Log: l, Filter: keycheck.New(f, keycheck.Options{}), Report: func(Hit) error { hits++; return nil }}).Run(context.Background())
		d := time.Since(start)
		if err != nil || res.Entries != int64(n) || hits != len(fx.Planted) {
			b.Fatalf("scan: %+v, %v, %d hits, want %d", res, err, hits, len(fx.Planted))
		}
		return d
	}
	bare()
	var tb, ts time.Duration
	for b.Loop() {
		tb += bare()
		ts += scan()
	}
	b.ReportMetric(float64(n)*float64(b.N)/tb.Seconds(), "floor-entries/s")
	b.ReportMetric(float64(n)*float64(b.N)/ts.Seconds(), "scan-entries/s")
	b.ReportMetric(ts.Seconds()/tb.Seconds(), "x-floor")
}
