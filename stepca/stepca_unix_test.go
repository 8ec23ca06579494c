//go:build unix

package stepca

import (
	"bytes"
	"crypto"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
)

// A filter file cut short or zeroed under the handler (cp of a smaller
// file over it, dd of zeros; issue 48, item 7): the handler answers from
// the Live's copy of the file as it was validated, the compromised key
// refused as before, a clean key allowed; never allowed from the zeros.
func TestHandlerFilterCutShort(t *testing.T) {
	fx := newFixture(t)
	for _, broken := range []string{"truncated", "zeroed"} {
		live := openLive(t, fx)
		h := NewHandler(checker(live), Options{ClientName: testClient})
		path := live.Stats().Path
		if broken == "truncated" {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(path, make([]byte, len(fx.filter)), 0o644); err != nil {
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

// A Handler over a mapped *pkbf.Filter whose file is cut short under it
// cannot answer: 503 with CodeFilterError (step-ca tries again), never an
// allow; and a Handler cannot be made without a KeyChecker.
func TestHandlerFilterFails(t *testing.T) {
	fx := newFixture(t)
	path := filepath.Join(t.TempDir(), "pwned.pkbf")
	if err := os.WriteFile(path, fx.filter, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := pkbf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := NewHandler(keycheck.New(f, keycheck.Options{}), Options{ClientName: testClient})
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	for _, pub := range []crypto.PublicKey{fx.cleanP256, fx.pwnedP256} {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(x509Body("x509Certificate", spkiOf(t, pub))))
		r.TLS = verified
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var a answer
		json.Unmarshal(w.Body.Bytes(), &a)
		if w.Code != http.StatusServiceUnavailable || a.Allow || a.Error == nil || a.Error.Code != CodeFilterError {
			t.Errorf("a file cut short: %d %+v, want 503 %s", w.Code, a, CodeFilterError)
		}
	}
	if s := h.Stats(); s.FilterErrs != 2 || s.Allowed != 0 {
		t.Errorf("stats %+v, want 2 filter errors", s)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "without a KeyChecker") {
			t.Errorf("NewHandler(nil): panic %v, want one saying there is no KeyChecker", r)
		}
	}()
	NewHandler(nil, Options{})
}
