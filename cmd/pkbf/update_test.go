package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
)

// publishedFilter is a filter holding the p256 test key and n filler keys,
// with the given revision, as a file's bytes. A filter with more filler
// keys holds those of one with fewer, as a publisher's next revision holds
// the keys of the last.
func publishedFilter(t *testing.T, rev uint32, l, n int) []byte {
	t.Helper()
	f, _ := pkbf.New(4, l)
	if _, err := keycheck.AddKey(f, testkit.ReadFile(t, key("p256.pub"))); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		f.Add([]byte{byte(i), byte(i >> 8), 'k'})
	}
	var b bytes.Buffer
	f.WriteTo(&b)
	h := f.Header()
	h.Revision = rev
	h.AppendBinary(b.Bytes()[:0])
	return b.Bytes()
}

// publishedAt is publishedFilter updated at the time given.
func publishedAt(t *testing.T, rev uint32, l, n int, updated time.Time) []byte {
	t.Helper()
	b := publishedFilter(t, rev, l, n)
	h, err := pkbf.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	h.Updated = updated.UTC().Truncate(time.Second)
	h.AppendBinary(b[:0])
	return b
}

// tlsServer serves h over https on 127.0.0.1 and makes update trust its
// certificate: in process (updateClient) and in the pkbf processes a
// test starts ($SSL_CERT_FILE).
func tlsServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	ts := httptest.NewTLSServer(h)
	t.Cleanup(ts.Close)
	old := updateClient
	updateClient = ts.Client()
	t.Cleanup(func() { updateClient = old })
	certFile := filepath.Join(t.TempDir(), "server.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", certFile)
	return ts
}

// publisher serves the current filter with ETags and ranges; the header
// X-Api-Key must be "k3y".
type publisher struct {
	body  atomic.Pointer[[]byte]
	etag  atomic.Int64
	delay time.Duration // between 64 KiB writes of a body
}

func (p *publisher) set(b []byte) {
	p.body.Store(&b)
	p.etag.Add(1)
}

func (p *publisher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Api-Key") != "k3y" {
		http.Error(w, "no", http.StatusUnauthorized)
		return
	}
	w.Header().Set("ETag", `"`+string(rune('a'+p.etag.Load()%26))+`"`)
	var out http.ResponseWriter = w
	if p.delay > 0 {
		out = &throttledWriter{w, p.delay}
	}
	http.ServeContent(out, r, "f.pkbf", time.Unix(1e9+p.etag.Load(), 0), bytes.NewReader(*p.body.Load()))
}

type throttledWriter struct {
	http.ResponseWriter
	delay time.Duration
}

func (w *throttledWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		m, err := w.ResponseWriter.Write(p[:min(len(p), 64<<10)])
		n += m
		if err != nil {
			return n, err
		}
		p = p[m:]
		time.Sleep(w.delay)
	}
	return n, nil
}

func TestUpdateCommand(t *testing.T) {
	base := time.Now().Add(-time.Hour)
	pub := &publisher{}
	pub.set(publishedAt(t, 1, 14, 10, base))
	ts := tlsServer(t, pub)
	dir := t.TempDir()
	p := filepath.Join(dir, "f.pkbf")
	hf := filepath.Join(dir, "headers")
	os.WriteFile(hf, []byte("# the feed's key\nX-Api-Key: k3y\n"), 0o600)

	r := runWith(t, nil, "update", "--header-file", hf, ts.URL, p)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "updated: "+p+", revision none -> 1, 2 072 bytes, ") {
		t.Fatalf("first update: %+v", r)
	}
	if r := runWith(t, nil, "check", p, key("p256.pub")); r.code != 1 {
		t.Errorf("check after update: %+v", r)
	}
	r = runWith(t, nil, "update", "--header-file", hf, ts.URL, p)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "up to date: "+p+", revision 1") {
		t.Errorf("second update: %+v", r)
	}
	if r := runWith(t, nil, "update", "-q", "--header-file", hf, ts.URL, p); r.code != 0 || r.stdout != "" {
		t.Errorf("update --quiet when current: %+v", r)
	}
	// Credentials from the environment.
	pub.set(publishedAt(t, 2, 14, 20, base.Add(time.Minute)))
	t.Setenv(updateHeaderEnv, "X-Api-Key: k3y")
	if r := runWith(t, nil, "update", ts.URL, p); r.code != 0 || !strings.Contains(r.stdout, "revision 1 -> 2") {
		t.Errorf("update with $%s: %+v", updateHeaderEnv, r)
	}
	// An older filter is refused, saying so, and installed with
	// --accept-rebuild.
	pub.set(publishedAt(t, 1, 14, 30, base.Add(-time.Minute)))
	before := testkit.ReadFile(t, p)
	r = runWith(t, nil, "update", ts.URL, p)
	if r.code != 2 || !strings.HasPrefix(r.stderr, "pkbf: error: refused: update from") || !strings.Contains(r.stderr, "not newer than the installed filter") || !bytes.Equal(testkit.ReadFile(t, p), before) {
		t.Errorf("update to an older filter: %+v", r)
	}
	if r := runWith(t, nil, "update", "--accept-rebuild", ts.URL, p); r.code != 0 || !strings.Contains(r.stdout, "revision 2 -> 1") {
		t.Errorf("update --accept-rebuild: %+v", r)
	}
	// Wrong credentials: exit 2, the value never shown.
	os.WriteFile(hf, []byte("X-Api-Key: wr0ng\n"), 0o600)
	r = runWith(t, nil, "update", "--header-file", hf, ts.URL, p)
	if r.code != 2 || !strings.Contains(r.stderr, "401 Unauthorized") || strings.Contains(r.stderr+r.stdout, "wr0ng") {
		t.Errorf("update with a wrong key: %+v", r)
	}
	os.WriteFile(hf, []byte("X-Api-Key k3y-without-colon\n"), 0o600)
	r = runWith(t, nil, "update", "--header-file", hf, ts.URL, p)
	if r.code != 2 || !strings.Contains(r.stderr, hf+": line 1 is not a \"Name: value\" header") || strings.Contains(r.stderr, "k3y") {
		t.Errorf("a bad header file: %+v", r)
	}
	for _, args := range [][]string{{"update", ts.URL}, {"update", "ftp://x/y", p}} {
		if r := runWith(t, nil, args...); r.code != 2 {
			t.Errorf("%q: %+v", args, r)
		}
	}
}

func TestDownloadProgressText(t *testing.T) {
	for _, c := range []struct {
		done, total int64
		elapsed     time.Duration
		want        string
	}{
		{64 << 20, 256 << 20, 2 * time.Second, "64 MiB of 256 MiB (25%), 32 MiB/s, 6s left"},
		{512, 0, time.Second, "512 bytes, 512 bytes/s"},
	} {
		if got := downloadProgress(c.done, c.total, c.elapsed); got != c.want {
			t.Errorf("downloadProgress(%d, %d, %v) = %q, want %q", c.done, c.total, c.elapsed, got, c.want)
		}
	}
}

// What update refuses says what was wrong and which flag, if any, lets
// it go ahead; nothing is downloaded for a path it would not replace.
func TestUpdateRefusals(t *testing.T) {
	pub := &publisher{}
	pub.set(publishedFilter(t, 1, 14, 10))
	var hits atomic.Int64
	ts := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		r.Header.Set("X-Api-Key", "k3y")
		pub.ServeHTTP(w, r)
	}))
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("notes\n"), 0o644)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"text file", []string{"update", ts.URL, notes}, notes + ": invalid filter file: file is 6 bytes, shorter than the 24-byte header"},
		{"text file hint", []string{"update", ts.URL, notes}, "; give --replace-invalid to replace it"},
		{"directory", []string{"update", "--replace-invalid", "--force", ts.URL, sub}, sub + " is a directory, not a regular file: it is never replaced"},
		{"swapped", []string{"update", notes, ts.URL}, "is a URL: the URL comes first, then the filter's path"},
		{"max-size 0", []string{"update", "--max-size", "0", ts.URL, notes}, "--max-size 0: must be positive"},
		{"max-size -1", []string{"update", "--max-size", "-1", ts.URL, notes}, "--max-size -1: must be positive"},
		{"max-size words", []string{"update", "--max-size", "lots", ts.URL, notes}, "not a size"},
		{"retries -1", []string{"update", "--retries", "-1", ts.URL, notes}, "--retries -1: must be 0 or more"},
		{"stall 0", []string{"update", "--stall", "0", ts.URL, notes}, "--stall 0s: must be positive"},
		{"stall -1s", []string{"update", "--stall", "-1s", ts.URL, notes}, "--stall -1s: must be positive"},
		{"min-rate 0", []string{"update", "--min-rate", "0", ts.URL, notes}, "--min-rate 0: must be positive"},
		{"rate-window 0", []string{"update", "--rate-window", "0s", ts.URL, notes}, "--rate-window 0s: must be positive"},
		{"max-time -1h", []string{"update", "--max-time", "-1h", ts.URL, notes}, "--max-time -1h0m0s: must be positive"},
		{"max-age -1h", []string{"update", "--max-age", "-1h", ts.URL, notes}, "--max-age -1h0m0s: must be 0 or more"},
		{"max-fp-rate 0", []string{"update", "--max-fp-rate", "0", ts.URL, notes}, "--max-fp-rate 0: must be between 0 and 1"},
		{"max-fp-rate 1", []string{"update", "--max-fp-rate", "1", ts.URL, notes}, "--max-fp-rate 1: must be between 0 and 1"},
		{"max-fp-rate NaN", []string{"update", "--max-fp-rate", "NaN", ts.URL, notes}, "--max-fp-rate NaN: must be between 0 and 1"},
	} {
		r := runWith(t, nil, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "pkbf: warning: pkbf:") || strings.Contains(r.stderr, "error: pkbf:") {
			t.Errorf("%s: %+v, want exit 2 and %q", c.name, r, c.want)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests made for paths update refuses", hits.Load())
	}
	if got := string(testkit.ReadFile(t, notes)); got != "notes\n" {
		t.Errorf("notes.txt became %q", got)
	}
	if entries, _ := os.ReadDir(sub); len(entries) != 0 {
		t.Errorf("files left in the directory: %v", entries)
	}
	r := runWith(t, nil, "update", "--replace-invalid", "--max-size", "1MiB", "--min-rate", "1KiB", ts.URL, notes)
	if r.code != 0 || !strings.Contains(r.stdout, "updated: "+notes) || !strings.Contains(r.stderr, "pkbf: warning: "+notes+": invalid filter file") {
		t.Errorf("--replace-invalid: %+v", r)
	}
}

func TestSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{"1024": 1024, "1KiB": 1024, "64 GiB": 64 << 30, "1M": 1 << 20, "2k": 2048, "7B": 7, "-1": -1} {
		var f sizeFlag
		if err := f.Set(in); err != nil || int64(f) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, f, err, want)
		}
	}
	for _, in := range []string{"", "KiB", "1.5MiB", "9999999999TiB", "1 PiB"} {
		var f sizeFlag
		if err := f.Set(in); err == nil {
			t.Errorf("Set(%q) accepted: %d", in, f)
		}
	}
	if f := sizeFlag(64 << 30); f.String() != "64GiB" {
		t.Errorf("String() = %q", f.String())
	}
}

// Issue 41, item 11, through the command: an empty filter whose header
// claims revision 99 and 5,000 entries is refused (exit 2, the installed
// filter unchanged) over https, and over http with --allow-http; plain
// http without it is refused before any request. --force does not help.
func TestUpdateForgedFilterRefused(t *testing.T) {
	genuine := publishedFilter(t, 1, 16, 5000)
	forged := publishedFilter(t, 1, 16, 0)
	for i := pkbf.HeaderSize; i < len(forged); i++ {
		forged[i] = 0
	}
	binary.BigEndian.PutUint32(forged[6:], 99)
	binary.BigEndian.PutUint32(forged[18:], 5000)
	var hits atomic.Int64
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write(forged)
	})
	ts := tlsServer(t, serve)
	plain := httptest.NewServer(serve)
	defer plain.Close()
	p := filepath.Join(t.TempDir(), "f.pkbf")
	os.WriteFile(p, genuine, 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"https", []string{"update", ts.URL, p}, "has 0 of 65536 bits set, where 5000 entries with 4 hashes each set"},
		{"https --force", []string{"update", "--force", ts.URL, p}, "its header does not describe its data"},
		{"http --allow-http", []string{"update", "--allow-http", "--sha256", fmt.Sprintf("%x", sha256.Sum256(forged)), plain.URL, p}, "has 0 of 65536 bits set"},
		{"http", []string{"update", plain.URL, p}, "is plain http: anyone on the path could replace the filter; use https, or allow http and pin the filter (--allow-http with --sha256 HEX or --signature)"},
		// Red-team finding 2: no pin, or a digest fetched over http, is no pin.
		{"http --allow-http without a pin", []string{"update", "--allow-http", plain.URL, p}, "plain http is allowed only with a pin that does not travel with the filter"},
		{"http --allow-http --sha256 http URL", []string{"update", "--allow-http", "--sha256", plain.URL + "/f.sha256", plain.URL, p}, "is plain http: a digest fetched over it is no pin"},
	} {
		before := hits.Load()
		r := runWith(t, nil, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || r.stdout != "" || strings.Contains(r.stderr, "error: pkbf:") {
			t.Errorf("%s: %+v, want exit 2 and %q", c.name, r, c.want)
		}
		if !bytes.Equal(testkit.ReadFile(t, p), genuine) {
			t.Fatalf("%s: the installed filter changed", c.name)
		}
		if strings.HasPrefix(c.name, "http") && !strings.HasPrefix(c.name, "https") && c.name != "http --allow-http" && hits.Load() != before {
			t.Errorf("a request was made over plain http")
		}
	}
}

// Filters made by pkbf create and pkbf add, with no key, one and many,
// install through update; a later revision that lost a key does not.
func TestUpdateCreatedFilters(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.pkbf")
	var body atomic.Pointer[[]byte]
	ts := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(*body.Load()) }))
	p := filepath.Join(dir, "f.pkbf")
	publish := func() {
		b := testkit.ReadFile(t, src)
		body.Store(&b)
	}
	if r := runWith(t, nil, "create", "--hashes", "7", "--length", "12", src); r.code != 0 {
		t.Fatal(r)
	}
	publish()
	if r := runWith(t, nil, "update", ts.URL, p); r.code != 0 || !strings.Contains(r.stdout, "revision none -> 0") {
		t.Fatalf("an empty filter: %+v", r)
	}
	for i, k := range []string{"p256.pub", "ed25519.pub", "rsa2048.pub"} {
		if r := runWith(t, nil, "add", src, key(k)); r.code != 0 {
			t.Fatal(r)
		}
		publish()
		if r := runWith(t, nil, "update", ts.URL, p); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("-> %d", i+1)) {
			t.Fatalf("after adding %s: %+v", k, r)
		}
	}
	// A filter without the last key, with a higher revision.
	if r := runWith(t, nil, "create", "--hashes", "7", "--length", "12", src+".2"); r.code != 0 {
		t.Fatal(r)
	}
	for _, k := range []string{"p256.pub", "ed25519.pub", "p384.pub", "p521.pub"} { // revision 4, without rsa2048
		if r := runWith(t, nil, "add", src+".2", key(k)); r.code != 0 {
			t.Fatal(r)
		}
	}
	b := testkit.ReadFile(t, src+".2")
	body.Store(&b)
	before := testkit.ReadFile(t, p)
	r := runWith(t, nil, "update", ts.URL, p)
	if r.code != 2 || !strings.Contains(r.stderr, "refused: ") || !strings.Contains(r.stderr, "bits set in the installed filter") || !strings.Contains(r.stderr, "(accept-rebuild installs it)") || !bytes.Equal(testkit.ReadFile(t, p), before) {
		t.Fatalf("a filter that lost a key: %+v", r)
	}
}

// The pins through the command: --sha256 with a digest or a digest file's
// URL, --signature with --signer-key (a signature ssh-keygen made), and
// what they refuse.
func TestUpdatePins(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		if os.Getenv("PKBF_REQUIRE_SSH_KEYGEN") != "" {
			t.Fatal(err)
		}
		t.Skip("no ssh-keygen here")
	}
	dir := t.TempDir()
	v1 := publishedFilter(t, 1, 14, 10)
	files := map[string][]byte{"/f.pkbf": v1}
	var mu sync.Mutex
	ts := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b, ok := files[r.URL.Path]
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	sum := sha256.Sum256(v1)
	digest := hex.EncodeToString(sum[:])
	files["/f.pkbf.sha256"] = []byte(digest + "  f.pkbf\n")
	priv := filepath.Join(dir, "publisher")
	if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-f", priv).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	signed := filepath.Join(dir, "f.pkbf")
	os.WriteFile(signed, v1, 0o644)
	if out, err := exec.Command(keygen, "-Y", "sign", "-f", priv, "-n", "pkbf", signed).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	files["/f.pkbf.sig"] = testkit.ReadFile(t, signed+".sig")
	fp, _ := exec.Command(keygen, "-l", "-f", priv+".pub").Output() // "256 SHA256:... comment (ED25519)"
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"--sha256 HEX", []string{"--sha256", digest}, 0, ", sha256 matches, "},
		{"--sha256 URL", []string{"--sha256", ts.URL + "/f.pkbf.sha256"}, 0, ", sha256 matches, "},
		{"--signature", []string{"--signature", ts.URL + "/f.pkbf.sig", "--signer-key", priv + ".pub"}, 0, ", signed by ssh-ed25519 " + strings.Fields(string(fp))[1] + ", "},
		{"--sha256 wrong", []string{"--sha256", strings.Repeat("ab", 32)}, 2, "its pin says abab"},
		{"--sha256 short", []string{"--sha256", "abc"}, 2, `Options.SHA256 "abc" is not a SHA-256 digest`},
		{"--signature without a key", []string{"--signature", ts.URL + "/f.pkbf.sig"}, 2, "--signature and --signer-key go together"},
		{"--signer-key without a signature", []string{"--signer-key", priv + ".pub"}, 2, "--signature and --signer-key go together"},
		{"--signer-key a private key", []string{"--signature", ts.URL + "/f.pkbf.sig", "--signer-key", priv}, 2, "--signer-key " + priv + ": line 1 is not an SSH public key"},
		{"--signer-key missing", []string{"--signature", ts.URL + "/f.pkbf.sig", "--signer-key", priv + ".nope"}, 2, "no such file"},
		{"--signature of another file", []string{"--signature", ts.URL + "/f.pkbf.sha256", "--signer-key", priv + ".pub"}, 2, "not an SSH signature"},
	} {
		p := filepath.Join(t.TempDir(), "f.pkbf")
		r := runWith(t, nil, append(append([]string{"update"}, c.args...), ts.URL+"/f.pkbf", p)...)
		if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.want) || strings.Contains(r.stderr, "error: pkbf:") {
			t.Errorf("%s: %+v, want exit %d and %q", c.name, r, c.code, c.want)
		}
		if _, err := os.Stat(p); (err == nil) != (c.code == 0) {
			t.Errorf("%s: installed: %v", c.name, err == nil)
		}
	}
}

// --max-age refuses a filter last updated longer ago than it (red-team
// finding 9), and lets a fresh one in.
func TestUpdateMaxAgeFlag(t *testing.T) {
	body := publishedFilter(t, 1, 12, 10)
	binary.BigEndian.PutUint64(body[10:], 1e9) // updated 2001-09-09
	var mu sync.Mutex
	ts := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Write(body)
	}))
	p := filepath.Join(t.TempDir(), "f.pkbf")
	r := runWith(t, nil, "update", "--max-age", "720h", ts.URL, p)
	if r.code != 2 || !strings.Contains(r.stderr, "the filter was updated 2001-09-09T01:46:40Z (revision 1)") || !strings.Contains(r.stderr, "more than the maximum age of 720h0m0s") {
		t.Fatalf("%+v, want the stale filter refused", r)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the stale filter was installed")
	}
	mu.Lock()
	body = publishedFilter(t, 2, 12, 10)
	mu.Unlock()
	if r := runWith(t, nil, "update", "--max-age", "720h", ts.URL, p); r.code != 0 || !strings.HasPrefix(r.stdout, "updated: ") {
		t.Fatalf("a fresh filter: %+v", r)
	}
}
