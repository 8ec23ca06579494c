package nixbloom

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// mkfifo makes a FIFO, where the system has them (nil elsewhere).
var mkfifo func(path string) error

// filterBytes returns a filter file holding paths.
func filterBytes(t *testing.T, paths ...string) []byte {
	t.Helper()
	f, err := FromPaths(paths, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	f.WriteTo(&b)
	return b.Bytes()
}

// A cache reached over HTTP leads only to http(s): its BloomFilter field
// is a path under its root or an http(s) URL, its redirects go to http(s),
// and from https neither goes to plain http. A local file that holds the
// path asked about is never read.
func TestCacheNeverLeadsOutside(t *testing.T) {
	path := randomPath()
	local := filepath.Join(t.TempDir(), "local.nixbloom")
	os.WriteFile(local, filterBytes(t, path), 0o644)
	good := filterBytes(t, path)
	var hits atomic.Int32
	// plain serves a filter at every path over http; a redirect there from
	// https is a downgrade.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write(good)
	}))
	defer plain.Close()
	for _, tt := range []struct {
		name, field, redirect string
		tls                   bool
		want                  string // "" when the filter is read
	}{
		{"relative", "f.nixbloom", "", false, ""},
		{"relative in a folder", "filters/../f.nixbloom", "", false, ""},
		{"http URL", plain.URL + "/f", "", false, ""},
		{"https cache, http URL", plain.URL + "/f", "", true, "plain http after https"},
		{"file URL", "file://" + local, "", false, "a cache may lead only to http(s) URLs"},
		{"file URL with localhost", "file://localhost" + local, "", false, "only to http(s)"},
		{"FILE URL", "FILE://" + local, "", false, "only to http(s)"},
		{"gopher URL", "gopher://127.0.0.1/f", "", false, "only to http(s)"},
		{"http URL without host", "http:///f", "", false, "no host"},
		{"absolute path", local, "", false, "want a path relative to the cache's root"},
		{"network-path reference", "//localhost" + local, "", false, "want a path relative"},
		{"out of the cache", "../f.nixbloom", "", false, "leads out of the cache"},
		{"out of the cache, escaped", "%2e%2e/f.nixbloom", "", false, "leads out of the cache"},
		{"out of the cache, deep", "a/../../f.nixbloom", "", false, "leads out of the cache"},
		{"the root itself", ".", "", false, "leads out of the cache"},
		{"a fragment", "f.nixbloom#x", "", false, "fragment"},
		{"a backslash", `..\f.nixbloom`, "", false, "backslash"},
		{"redirect to a file URL", "f.nixbloom", "file://" + local, false, "redirect from"},
		{"redirect to gopher", "f.nixbloom", "gopher://127.0.0.1/f", false, "only to http(s)"},
		{"redirect from https to http", "f.nixbloom", plain.URL + "/f", true, "plain http after https"},
		{"redirect from http to http", "f.nixbloom", plain.URL + "/f", false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/nix-cache-info":
					fmt.Fprintf(w, "StoreDir: /nix/store\nBloomFilter: %s\n", tt.field)
				case tt.redirect != "":
					http.Redirect(w, r, tt.redirect, http.StatusFound)
				case r.URL.Path == "/f.nixbloom":
					w.Write(good)
				default:
					http.NotFound(w, r)
				}
			})
			srv := httptest.NewUnstartedServer(h)
			if tt.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			before := hits.Load()
			f, err := Fetch(context.Background(), srv.Client(), srv.URL)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if ok, _ := f.MayContain(path); !ok {
					t.Error("the filter lacks the path")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "nixbloom: ") {
				t.Errorf("Fetch = %v; want an error with %q", err, tt.want)
			}
			if tt.tls && hits.Load() != before {
				t.Error("the http server was asked after https")
			}
		})
	}
	// The client's own CheckRedirect still has its say.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/nix-cache-info" {
			fmt.Fprint(w, "BloomFilter: f.nixbloom\n")
			return
		}
		http.Redirect(w, r, plain.URL+"/f", http.StatusFound)
	}))
	defer srv.Close()
	mine := errors.New("mine")
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return mine }}
	if _, err := Fetch(context.Background(), c, srv.URL); !errors.Is(err, mine) {
		t.Errorf("the client's CheckRedirect: %v", err)
	}
	if c.CheckRedirect(nil, nil) != mine {
		t.Error("the caller's client was changed")
	}
}

// A local cache is read through an os.Root: its BloomFilter field and its
// links never lead out of it; a link inside it is followed; a FIFO is not
// opened. Its field may name an http(s) URL, but no redirect from https to
// http.
func TestLocalCacheStaysInside(t *testing.T) {
	path := randomPath()
	top := t.TempDir()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(filterBytes(t, path))
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.RedirectHandler(plain.URL+"/f", http.StatusFound))
	defer secure.Close()
	os.WriteFile(filepath.Join(top, "outside.nixbloom"), filterBytes(t, path), 0o644)
	for _, tt := range []struct {
		name, field string
		setup       func(cache string)
		want        string
	}{
		{"relative", "f.nixbloom", func(cache string) {
			os.WriteFile(filepath.Join(cache, "f.nixbloom"), filterBytes(t, path), 0o644)
		}, ""},
		{"a link inside the cache", "l.nixbloom", func(cache string) {
			os.WriteFile(filepath.Join(cache, "f.nixbloom"), filterBytes(t, path), 0o644)
			os.Symlink("f.nixbloom", filepath.Join(cache, "l.nixbloom"))
		}, ""},
		{"a link out of the cache", "l.nixbloom", func(cache string) {
			os.Symlink("../outside.nixbloom", filepath.Join(cache, "l.nixbloom"))
		}, "path escapes"},
		{"a directory link out of the cache", "d/outside.nixbloom", func(cache string) {
			os.Symlink("..", filepath.Join(cache, "d"))
		}, "path escapes"},
		{"an absolute link", "l.nixbloom", func(cache string) {
			os.Symlink(filepath.Join(top, "outside.nixbloom"), filepath.Join(cache, "l.nixbloom"))
		}, "path escapes"},
		{"relative out of the cache", "../outside.nixbloom", func(string) {}, "leads out of the cache"},
		{"file URL", "file://" + filepath.Join(top, "outside.nixbloom"), func(string) {}, "only to http(s)"},
		{"http URL", plain.URL + "/f", func(string) {}, ""},
		{"https URL redirected to http", secure.URL + "/f", func(string) {}, "plain http after https"},
		{"a FIFO", "fifo", func(cache string) {
			if mkfifo == nil {
				t.Skip("no FIFOs here")
			}
			mkfifo(filepath.Join(cache, "fifo"))
		}, "not a regular file"},
		{"a directory", "d", func(cache string) {
			os.Mkdir(filepath.Join(cache, "d"), 0o755)
		}, "not a regular file"},
		{"missing", "f.nixbloom", func(string) {}, "no such file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cache, err := os.MkdirTemp(top, "cache")
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(cache, "nix-cache-info"), []byte("BloomFilter: "+tt.field+"\n"), 0o644)
			tt.setup(cache)
			for _, loc := range []string{cache, "file://" + cache + "?compression=none"} {
				f, err := Fetch(context.Background(), secure.Client(), loc)
				switch {
				case tt.want == "" && err != nil:
					t.Errorf("%s: %v", loc, err)
				case tt.want == "":
					if ok, _ := f.MayContain(path); !ok {
						t.Errorf("%s: the filter lacks the path", loc)
					}
				case err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "nixbloom: "):
					t.Errorf("%s: Fetch = %v; want an error with %q", loc, err, tt.want)
				}
			}
		})
	}
	for _, loc := range []string{"gopher://x/", "file://host/cache", "https://", filepath.Join(top, "missing")} {
		if c, err := OpenCache(loc, nil); err == nil {
			c.Close()
			t.Errorf("OpenCache(%q) succeeded", loc)
		}
	}
}

// Confirm answers as Nix would: present for a .narinfo Nix takes for the
// path, absent for none (404, 410, 401, 403, 407) or one for another path,
// an error for a .narinfo Nix would find corrupt or another status; it
// asks for the bytes as they are, and reads nix-cache-info once.
func TestConfirm(t *testing.T) {
	const hash = "00qrx0rfv2knlsshwjsq16198fklyy0y"
	narinfo := func(storePath string) string {
		return "StorePath: " + storePath + "\nURL: nar/x.nar\nNarHash: sha256:1xmr8jicvzszfzpz46g37mlpvbzjl2wpwvl2b05psipssyp1sm8h\nNarSize: 120\n"
	}
	for _, tt := range []struct {
		name, path, storeDir string
		status               int
		body                 string
		want                 bool
		err                  string
	}{
		{"present", "/nix/store/" + hash + "-hello", "", 200, narinfo("/nix/store/" + hash + "-hello"), true, ""},
		{"present by hash part", hash, "", 200, narinfo("/nix/store/" + hash + "-hello"), true, ""},
		{"present in another store", hash, "/gnu/store", 200, narinfo("/gnu/store/" + hash + "-hello"), true, ""},
		{"another store than nix-cache-info's", hash, "/gnu/store", 200, narinfo("/nix/store/" + hash + "-hello"), false, "not in the store /gnu/store"},
		{"another name", "/nix/store/" + hash + "-hello", "", 200, narinfo("/nix/store/" + hash + "-other"), false, ""},
		{"another hash", hash, "", 200, narinfo("/nix/store/" + strings.Repeat("0", 32) + "-hello"), false, ""},
		{"404", hash, "", 404, "", false, ""},
		{"410", hash, "", 410, "", false, ""},
		{"401", hash, "", 401, "", false, ""},
		{"403", hash, "", 403, "", false, ""},
		{"407", hash, "", 407, "", false, ""},
		{"500", hash, "", 500, "", false, "500 Internal Server Error"},
		{"429", hash, "", 429, "", false, "429"},
		{"an HTML page", hash, "", 200, "<html>hello</html>", false, "is corrupt"},
		{"no NarHash", hash, "", 200, "StorePath: /nix/store/" + hash + "-hello\nURL: x\nNarSize: 1\n", false, "no NarHash"},
		{"too large", hash, "", 200, narinfo("/nix/store/"+hash+"-hello") + strings.Repeat("Sig: x\n", maxNarinfo/7), false, "larger than"},
		{"not a store path", "hello", "", 200, "", false, "invalid store path"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var infos atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Accept-Encoding") != "identity" {
					t.Errorf("%s asked with Accept-Encoding %q", r.URL.Path, r.Header.Get("Accept-Encoding"))
				}
				if r.URL.Path == "/nix-cache-info" {
					infos.Add(1)
					if tt.storeDir != "" {
						fmt.Fprintf(w, "StoreDir: %s\n", tt.storeDir)
					}
					return
				}
				if r.URL.Path != "/"+hash+".narinfo" {
					t.Errorf("asked for %s", r.URL.Path)
				}
				w.WriteHeader(tt.status)
				w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c, err := OpenCache(srv.URL, srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				got, err := c.Confirm(context.Background(), tt.path)
				if got != tt.want || (tt.err == "") != (err == nil) || err != nil && (!strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "nixbloom: ")) {
					t.Errorf("Confirm = %v, %v; want %v, %q", got, err, tt.want, tt.err)
				}
			}
			if n := infos.Load(); n > 1 {
				t.Errorf("nix-cache-info read %d times", n)
			}
		})
	}
	// A local cache: a missing .narinfo is absent; one that is a link out of
	// the cache is an error, not read.
	top := t.TempDir()
	cache := filepath.Join(top, "cache")
	os.Mkdir(cache, 0o755)
	os.WriteFile(filepath.Join(cache, "nix-cache-info"), []byte("StoreDir: /nix/store\n"), 0o644)
	os.WriteFile(filepath.Join(top, "outside"), []byte(narinfo("/nix/store/"+hash+"-hello")), 0o644)
	c, err := OpenCache(cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.Confirm(context.Background(), hash); got || err != nil {
		t.Errorf("a missing .narinfo: %v, %v", got, err)
	}
	os.Symlink("../outside", filepath.Join(cache, hash+".narinfo"))
	if got, err := c.Confirm(context.Background(), hash); got || err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a .narinfo linked out of the cache: %v, %v", got, err)
	}
}
