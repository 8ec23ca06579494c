//go:build unix

package stepca

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// A filter file cut short under the handler (cp of a smaller file over
// it): the call is refused with 503, which step-ca retries once, and an
// error naming the file; never allowed.
func TestHandlerFilterCutShort(t *testing.T) {
	fx := newFixture(t)
	live := openLive(t, fx)
	h := NewHandler(live, Options{ClientName: testClient})
	if err := os.Truncate(live.Path(), 0); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(x509Body("x509Certificate", spkiOf(t, fx.cleanP256))))
	r.TLS = verified
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var a answer
	json.Unmarshal(w.Body.Bytes(), &a)
	if w.Code != 503 || a.Allow || a.Error == nil || a.Error.Code != CodeFilterError || !strings.Contains(a.Error.Message, live.Path()) {
		t.Errorf("after truncation: %d %s, want 503, %s naming the file", w.Code, w.Body, CodeFilterError)
	}
	if s := h.Stats(); s.FilterErrs != 1 || s.Allowed != 0 {
		t.Errorf("stats %+v", s)
	}
}
