package ct

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/ct/cttest"
	"github.com/pkbf/pkbf/keycheck"
)

// Issue 43, item 4: the package tells a log's kind from what it serves
// (pkbf-ct did, in its main, and examples/beam took every URL for a
// Static CT log): a checkpoint means Static CT, else a tree head at
// ct/v1/get-sth means RFC 6962; a file:// URL is a local copy of tiles;
// what is neither is an error naming the URL, and the scan then reads
// the log with its kind's client.
func TestOpen(t *testing.T) {
	fx := cttest.NewFixture(t, 300, 30, 7)
	dir := t.TempDir()
	fx.WriteStatic(t, dir, len(fx.Entries))
	static := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer static.Close()
	rs := cttest.NewRFC6962Server(t, fx)
	rfc := httptest.NewServer(rs)
	defer rfc.Close()
	// A server that answers 200 to everything, an RFC 6962 log behind it.
	catchAll := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/checkpoint") {
			w.Write([]byte("<html>not here</html>\n\n"))
			return
		}
		rs.ServeHTTP(w, r)
	}))
	defer catchAll.Close()
	nothing := httptest.NewServer(http.NotFoundHandler())
	defer nothing.Close()
	f := openFilter(t, fx.Filter)

	for _, c := range []struct {
		name, url string
		kind      Kind // given
		want      Kind // found; "" for an error
		err       string
	}{
		{"static", static.URL, "", Static, ""},
		{"static, with a slash", static.URL + "/", "", Static, ""},
		{"rfc6962", rfc.URL, "", RFC6962, ""},
		{"file://", "file://" + dir, "", Static, ""},
		{"a checkpoint that is not one", catchAll.URL, "", RFC6962, ""},
		{"given", rfc.URL, RFC6962, RFC6962, ""},
		{"neither", nothing.URL, "", "", nothing.URL + ": neither a Static CT log"},
		{"an unknown kind", rfc.URL, "tiles", "", `log kind "tiles"`},
		{"the wrong kind given", rfc.URL, Static, Static, "checkpoint"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := Open(context.Background(), c.url, Options{Kind: c.kind})
			if c.want == "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Open: %v, want an error with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.Kind() != c.want {
				t.Fatalf("kind %s, want %s", l.Kind(), c.want)
			}
			res, err := (&Scan{Log: l, Filter: keycheck.New(f, keycheck.Options{})}).Run(context.Background())
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("scan: %v, want an error with %q", err, c.err)
				}
				return
			}
			if err != nil || res.Entries != 300 || res.Hits != int64(len(fx.Planted)) {
				t.Errorf("scan: %+v, %v", res, err)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Open(ctx, rfc.URL, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Open with a cancelled context: %v", err)
	}
}

// Issue 43, item 4: a scan is one pipeline: the log's reader and the
// scan's own goroutine, which checks each key (keycheck's CheckKey). It
// stacked two: its reader fed a Check, which ran a reader and workers of
// its own (the pipeline's run), the two sharing state under a mutex.
// While hits are reported, no goroutine of a Check's runs.
func TestScanOnePipeline(t *testing.T) {
	fx := cttest.NewFixture(t, 3000, 300, 97)
	f := openFilter(t, fx.Filter)
	for kind, open := range testLogs(t, fx) {
		t.Run(kind, func(t *testing.T) {
			buf := make([]byte, 1<<20)
			stacks := ""
			s := &Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: filepath.Join(t.TempDir(), "state.json"),
				Report: func(h Hit) error {
					if stacks == "" {
						stacks = string(buf[:runtime.Stack(buf, true)])
					}
					return nil
				}}
			if _, err := s.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if stacks == "" {
				t.Fatal("no hit reported")
			}
			if strings.Contains(stacks, "github.com/pkbf/pkbf/keycheck.(*run)") {
				t.Errorf("keycheck's Check pipeline runs beside the scan's:\n%s", stacks)
			}
		})
	}
}
