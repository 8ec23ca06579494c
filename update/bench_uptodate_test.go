package update

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pkbf/pkbf/internal/testkit"
)

// The cost of a run that finds the installed filter current, as most of a
// timer's runs do: a new connection each run (a new process's, TLS
// handshake included) to a publisher serving a filter of hash length 22
// (512 KiB), one that honours ranges and conditional requests (http's
// ServeContent, as nginx or a CDN) and one that answers every request
// with the whole file. wire-B/op counts the bytes both ways on the
// connection. Figures: docs/performance.md.
func BenchmarkUpToDate(b *testing.B) {
	body := makeFilterK(b, 7, 1, ago(time.Hour), 22, manyKeys("k", 1000)...)
	pub := testkit.NewPublisher(b)
	pub.Publish("f.pkbf", body, time.Now().Add(-time.Hour))
	whole := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body)
	}))
	b.Cleanup(whole.Close)
	for _, c := range []struct{ name, url string }{
		{"ranges", pub.FileURL("f.pkbf")},
		{"whole file always", whole.URL + "/f.pkbf"},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "f.pkbf")
			var wire atomic.Int64
			opts := fastOpts(nil)
			opts.Client = countingClient(&wire)
			if res, err := Update(context.Background(), c.url, path, opts); err != nil || !res.Updated {
				b.Fatalf("the install: %+v, %v", res, err)
			}
			if res, err := Update(context.Background(), c.url, path, opts); err != nil || res.Received != res.Size {
				b.Fatalf("the run that confirms the install: %+v, %v", res, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			wire.Store(0)
			for range b.N {
				opts.Client = countingClient(&wire)
				res, err := Update(context.Background(), c.url, path, opts)
				if err != nil || res.Updated {
					b.Fatalf("%+v, %v; want it current", res, err)
				}
				opts.Client.CloseIdleConnections()
			}
			b.ReportMetric(float64(wire.Load())/float64(b.N), "wire-B/op")
			if !bytes.Equal(testkit.ReadFile(b, path), body) {
				b.Fatal("the filter changed")
			}
		})
	}
}

// The run after an unpinned install, which downloads the filter whole to
// confirm the bytes installed: the same publisher (ranges) and filter as
// BenchmarkUpToDate, the install's record marked unconfirmed again before
// each run. Figures: docs/performance.md.
func BenchmarkConfirm(b *testing.B) {
	body := makeFilterK(b, 7, 1, ago(time.Hour), 22, manyKeys("k", 1000)...)
	pub := testkit.NewPublisher(b)
	pub.Publish("f.pkbf", body, time.Now().Add(-time.Hour))
	path := filepath.Join(b.TempDir(), "f.pkbf")
	var wire atomic.Int64
	opts := fastOpts(nil)
	if res, err := Update(context.Background(), pub.FileURL("f.pkbf"), path, opts); err != nil || !res.Updated {
		b.Fatalf("the install: %+v, %v", res, err)
	}
	up := &updater{statePath: filepath.Join(filepath.Dir(path), ".f.pkbf.update.json")}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		up.state = loadState(up.statePath, b.Logf)
		up.state.Confirmed = false
		up.saveState()
		b.StartTimer()
		opts.Client = countingClient(&wire)
		res, err := Update(context.Background(), pub.FileURL("f.pkbf"), path, opts)
		if err != nil || res.Updated || res.Received != int64(len(body)) {
			b.Fatalf("%+v, %v; want it confirmed by a whole download", res, err)
		}
		opts.Client.CloseIdleConnections()
	}
	b.ReportMetric(float64(wire.Load())/float64(b.N), "wire-B/op")
}

// countingClient is testClient with a transport of its own (no
// connection kept from another) that adds the bytes its connections read
// and write to n.
func countingClient(n *atomic.Int64) *http.Client {
	t := testClient().Transport.(*http.Transport).Clone()
	dial := t.DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, n: n}, nil
	}
	return &http.Client{Transport: t}
}

// countingConn adds the bytes read and written to n.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	k, err := c.Conn.Read(p)
	c.n.Add(int64(k))
	return k, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	k, err := c.Conn.Write(p)
	c.n.Add(int64(k))
	return k, err
}
