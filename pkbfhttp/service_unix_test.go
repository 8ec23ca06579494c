//go:build unix

package pkbfhttp

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

// A filter file cut short under the server (cp of a smaller file over
// it): the request is answered 503 with an error naming the file, the
// server goes on, and the counter says so.
func TestServeFilterCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.pkbf")
	if err := os.WriteFile(path, testkit.ReadFile(t, exampleFilter), 0o644); err != nil {
		t.Fatal(err)
	}
	live, err := pkbf.OpenLive(path, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	s := newService(t, live, Limits{MaxBody: 1 << 20, MaxInFlight: 4, MaxKeys: 10000})
	srv := httptest.NewServer(s)
	defer srv.Close()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		code, out := testkit.Post(t, srv.URL+"/v1/check", testkit.ReadFile(t, key("p256.cert.pem")))
		if code != 503 || !strings.Contains(out, path+" was truncated or changed while in use") {
			t.Errorf("after truncation: %d %q, want 503 naming the file", code, out)
		}
	}
	if n := s.filterErrors.Load(); n != 2 {
		t.Errorf("filter errors counted: %d, want 2", n)
	}
}
