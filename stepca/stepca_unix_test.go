//go:build unix

package stepca

import (
	"bytes"
	"crypto"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
)

// A filter file cut short or zeroed under the handler (cp of a smaller
// file over it, dd of zeros; issue 48, item 7): the handler answers from
// the Live's copy of the file as it was validated, the compromised key
// refused as before, a clean key allowed; never allowed from the zeros.
func TestHandlerFilterCutShort(t *testing.T) {
	fx := newFixture(t)
	for _, broken := range []string{"truncated", "zeroed"} {
		live := openLive(t, fx)
		h := NewHandler(live, Options{ClientName: testClient})
		if broken == "truncated" {
			if err := os.Truncate(live.Path(), 0); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(live.Path(), make([]byte, len(fx.filter)), 0o644); err != nil {
			t.Fatal(err)
		}
		call := func(pub crypto.PublicKey) (int, answer) {
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(x509Body("x509Certificate", spkiOf(t, pub))))
			r.TLS = verified
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			var a answer
			json.Unmarshal(w.Body.Bytes(), &a)
			return w.Code, a
		}
		for round := range 2 { // before and after the failed reload
			if code, a := call(fx.pwnedP256); code != 200 || a.Allow || a.Error == nil || a.Error.Code != CodeCompromised {
				t.Errorf("%s: the compromised key: %d %+v, want refused as compromised", broken, code, a)
			}
			if code, a := call(fx.cleanP256); code != 200 || !a.Allow {
				t.Errorf("%s: a clean key: %d %+v, want allowed", broken, code, a)
			}
			if err := live.Reload(); err == nil && round == 0 {
				t.Errorf("%s: Reload took the broken file", broken)
			}
		}
		if s := h.Stats(); s.Compromised != 2 || s.Allowed != 2 {
			t.Errorf("%s: stats %+v", broken, s)
		}
	}
}
