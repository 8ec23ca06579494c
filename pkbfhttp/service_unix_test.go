//go:build unix

package pkbfhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

// A filter file cut short under the server (cp of a smaller file over
// it; issue 48, item 7): requests are answered from the Live's copy of the
// file as it was validated, and /healthz says what happened to the file.
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
		if code != 200 || !strings.Contains(out, `"probably":true`) {
			t.Errorf("after truncation: %d %q, want the answer of the file as it was", code, out)
		}
		live.Reload()
	}
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || !strings.Contains(string(out), path+" was truncated or changed while in use") {
		t.Errorf("healthz after truncation: %d %q, want 503 naming the file", resp.StatusCode, out)
	}
}
