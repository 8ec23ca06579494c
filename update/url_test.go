package update

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// Credentials go to the publisher, not to another host it redirects to.
func TestCredentialsAndRedirects(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 12, "c")
	var mirrorSaw atomic.Value
	mirror := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mirrorSaw.Store(r.Header.Get("X-Api-Key") + r.Header.Get("Authorization"))
		w.Write(body)
	}))
	defer mirror.Close()
	var sawKey atomic.Value
	origin := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawKey.Store(r.Header.Get("X-Api-Key"))
		http.Redirect(w, r, strings.Replace(mirror.URL, "127.0.0.1", "mirror.example.com", 1)+"/f", http.StatusFound)
	}))
	defer origin.Close()
	opts := fastOpts(nil)
	opts.Header = http.Header{"X-Api-Key": {"k3y"}}
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	if _, err := Update(context.Background(), origin.URL, path, opts); err != nil {
		t.Fatal(err)
	}
	if sawKey.Load() != "k3y" {
		t.Errorf("the publisher got X-Api-Key %q", sawKey.Load())
	}
	if got := mirrorSaw.Load(); got != "" {
		t.Errorf("the other host got the credentials: %q", got)
	}
}

// A redirect to another host carries no Referer, so the query of the
// URL the user gave (a token, a signature) stays with the host named.
func TestNoQueryToAnotherHost(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 12, "r")
	var saw atomic.Value
	mirror := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		r.Header.Write(&b)
		saw.Store(r.URL.String() + "\n" + b.String())
		w.Write(body)
	}))
	defer mirror.Close()
	origin := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(mirror.URL, "127.0.0.1", "mirror.example.com", 1)+"/f", http.StatusFound)
	}))
	defer origin.Close()
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	if _, err := Update(context.Background(), origin.URL+"/feed?token=SECRET", path, fastOpts(nil)); err != nil {
		t.Fatal(err)
	}
	got, _ := saw.Load().(string)
	if got == "" {
		t.Fatal("the mirror was not asked")
	}
	if strings.Contains(got, "SECRET") || strings.Contains(got, "Referer") {
		t.Errorf("the other host got:\n%s", got)
	}
}

// Plain http is refused unless allowed, credentials are never sent over
// it, and redirects follow the same rules: none to http without
// AllowHTTP, and no credentials to another host or to http.
func TestPlainHTTP(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 12, "h")
	var plainSaw atomic.Value
	var plainHits atomic.Int64
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		plainSaw.Store(r.Header.Get("X-Api-Key") + r.Header.Get("Authorization"))
		w.Write(body)
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/f", http.StatusFound)
	}))
	defer secure.Close()
	creds := http.Header{"X-Api-Key": {"k3y"}, "Authorization": {"Bearer t0ken"}}
	for _, c := range []struct {
		name      string
		url       string
		allow     bool
		header    http.Header
		want      string
		plainHits int64
	}{
		{"http", plain.URL, false, nil, "is plain http: anyone on the path could replace the filter", 0},
		{"http with credentials", plain.URL, true, creds, "credentials are never sent over it", 0},
		{"http with a user in the URL", strings.Replace(plain.URL, "http://", "http://u:p4ss@", 1), true, nil, "credentials are never sent over it", 0},
		{"redirect to http", secure.URL, false, creds, "redirected to " + plain.URL + "/f, plain http: refused", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := plainHits.Load()
			opts := fastOpts(nil)
			opts.AllowHTTP, opts.Header = c.allow, c.header
			path := filepath.Join(t.TempDir(), "filter.pkbf")
			_, err := Update(context.Background(), c.url, path, opts)
			if !errors.Is(err, ErrPlainHTTP) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want ErrPlainHTTP and %q", err, c.want)
			}
			if strings.Count(err.Error(), "pkbf:") != 1 {
				t.Errorf("the prefix is not said once: %v", err)
			}
			if strings.Contains(err.Error(), "p4ss") || strings.Contains(err.Error(), "k3y") {
				t.Errorf("the error shows a credential: %v", err)
			}
			if got := plainHits.Load() - before; got != c.plainHits {
				t.Errorf("%d requests over plain http", got)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Error("something was installed")
			}
		})
	}
	// Allowed: an https URL with credentials that redirects to http is
	// followed, without them.
	opts := fastOpts(nil)
	sum := sha256.Sum256(body)
	opts.AllowHTTP, opts.Header, opts.SHA256 = true, creds, hex.EncodeToString(sum[:])
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	if res, err := Update(context.Background(), secure.URL, path, opts); err != nil || !res.Updated {
		t.Fatalf("allowed redirect to http: %+v, %v", res, err)
	}
	if got := plainSaw.Load(); got != "" {
		t.Errorf("the credentials followed the redirect to http: %q", got)
	}
}

// Red-team finding 2: AllowHTTP needed no pin, and a digest fetched over
// http counted as one. Now AllowHTTP needs a digest given or a signature,
// and a digest URL must be https, redirects included; no request is made
// for a refused combination.
func TestAllowHTTPNeedsPin(t *testing.T) {
	body := makeFilter(t, 1, 1e9, 12, "h")
	sum := sha256.Sum256(body)
	digest := hex.EncodeToString(sum[:])
	var hits atomic.Int64
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if strings.HasSuffix(r.URL.Path, ".sha256") {
			fmt.Fprintln(w, digest)
			return
		}
		w.Write(body)
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusFound)
	}))
	defer secure.Close()
	for _, c := range []struct {
		name      string
		url       string
		sha256    string
		sha256URL string
		want      string
	}{
		{"http allowed, no pin", plain.URL + "/f.pkbf", "", "", "allowed only with a pin that does not travel with the filter"},
		{"http allowed, digest over http", plain.URL + "/f.pkbf", "", plain.URL + "/f.pkbf.sha256", "the digest URL " + plain.URL + "/f.pkbf.sha256 is plain http"},
		{"https allowed to redirect, no pin", secure.URL + "/f.pkbf", "", "", "allowed only with a pin"},
		{"digest URL redirected to http", plain.URL + "/f.pkbf", digest, secure.URL + "/f.pkbf.sha256", "redirected to " + plain.URL + "/f.pkbf.sha256, plain http: refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := fastOpts(nil)
			opts.AllowHTTP, opts.SHA256, opts.SHA256URL = true, c.sha256, c.sha256URL
			path := filepath.Join(t.TempDir(), "filter.pkbf")
			before := hits.Load()
			_, err := Update(context.Background(), c.url, path, opts)
			if !errors.Is(err, ErrPlainHTTP) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want ErrPlainHTTP and %q", err, c.want)
			}
			if c.sha256 == "" && hits.Load() != before {
				t.Error("a request was made")
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Error("something was installed")
			}
		})
	}
	// With the digest given, http installs.
	opts := fastOpts(nil)
	opts.AllowHTTP, opts.SHA256 = true, digest
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	if res, err := Update(context.Background(), plain.URL+"/f.pkbf", path, opts); err != nil || !res.Updated || res.SHA256 == nil {
		t.Fatalf("http with a digest given: %+v, %v", res, err)
	}
}

// Origins are written one way: the default port written or not, the
// host's case and final dot, an IPv6 address's forms; a name and an
// address, or two names, stay apart.
func TestOrigin(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"https://example.com/f", "https://example.com:443/f.sha256", true},
		{"https://EXAMPLE.com/f", "https://example.com./f", true},
		{"http://example.com/f", "http://example.com:80/f", true},
		{"https://[::1]:8443/f", "https://[0:0:0:0:0:0:0:1]:8443/g", true},
		{"https://[::ffff:127.0.0.1]:8443/f", "https://127.0.0.1:8443/g", true},
		{"https://example.com/f", "http://example.com/f", false},
		{"https://example.com/f", "https://example.com:8443/f", false},
		{"https://example.com/f", "https://www.example.com/f", false},
		{"https://localhost:8443/f", "https://127.0.0.1:8443/f", false},
	} {
		if got := origin(mustURL(c.a)) == origin(mustURL(c.b)); got != c.same {
			t.Errorf("%s and %s: same origin %v (%s, %s)", c.a, c.b, got, origin(mustURL(c.a)), origin(mustURL(c.b)))
		}
	}
}

// Two sources are one when any origin or any address of one is the
// other's, or when either's addresses are unknown: one source is the
// answer whenever they cannot be told apart.
func TestSameSource(t *testing.T) {
	src := func(urls string, addrs ...string) *source {
		s := new(source)
		for _, u := range strings.Fields(urls) {
			s.addURL(mustURL(u))
		}
		for _, a := range addrs {
			s.addAddr(a)
		}
		return s
	}
	for _, c := range []struct {
		name string
		a, b *source
		same bool
	}{
		{"two names, two addresses", src("https://a.example.com/f", "192.0.2.1:443"), src("https://b.example.com/d", "192.0.2.2:443"), false},
		{"two names of one address", src("https://a.example.com/f", "192.0.2.1:443"), src("https://b.example.com/d", "192.0.2.1:443"), true},
		{"two ports of one address", src("https://192.0.2.1:443/f", "192.0.2.1:443"), src("https://192.0.2.1:8443/d", "192.0.2.1:8443"), true},
		{"one address resolved for both", src("https://a.example.com/f", "192.0.2.1", "192.0.2.7:443"), src("https://b.example.com/d", "192.0.2.8", "192.0.2.1"), true},
		{"an IPv4-mapped address", src("https://a.example.com/f", "[::ffff:192.0.2.1]:443"), src("https://b.example.com/d", "192.0.2.1:443"), true},
		{"a hop of one chain the first of the other", src("https://a.example.com/f https://b.example.com/f", "192.0.2.1:443", "192.0.2.2:443"), src("https://b.example.com/d", "192.0.2.3:443"), true},
		{"addresses unknown on one side", src("https://a.example.com/f", "192.0.2.1:443"), src("https://b.example.com/d"), true},
		{"addresses unknown on both", src("https://a.example.com/f"), src("https://b.example.com/d"), true},
	} {
		if got := sameSource(c.a, c.b); got != c.same {
			t.Errorf("%s: one source %v, want %v", c.name, got, c.same)
		}
		if got := sameSource(c.b, c.a); got != c.same {
			t.Errorf("%s, the other way: one source %v, want %v", c.name, got, c.same)
		}
	}
}
