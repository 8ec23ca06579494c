package ct

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/sunlight"

	"github.com/pkbf/pkbf/ct/cttest"
	"github.com/pkbf/pkbf/keycheck"
)

var sunlightBuild struct {
	once     sync.Once
	dir, msg string
	err      error
}

// sunlightBinaries builds Sunlight's server and key generator
// (filippo.io/sunlight v0.8.0, from the module cache, with cgo for
// SQLite) once, into the user's cache directory: a cold build takes
// minutes. It skips without gcc or sqlite3, unless PKBF_REQUIRE_SUNLIGHT
// is set (as .ci/run sets it): there it fails.
func sunlightBinaries(t *testing.T) (server, keygen string) {
	t.Helper()
	need := func(msg string) {
		if os.Getenv("PKBF_REQUIRE_SUNLIGHT") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for _, tool := range []string{"gcc", "sqlite3"} {
		if _, err := exec.LookPath(tool); err != nil {
			need(tool + " is missing: the Sunlight test builds Sunlight (cgo) and makes its SQLite checkpoints table")
		}
	}
	sunlightBuild.once.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "pkbf-test", "sunlight-v0.8.0")
		sunlightBuild.dir = dir
		if _, err := os.Stat(filepath.Join(dir, "sunlight-keygen")); err == nil {
			return
		}
		out, err := exec.Command("go", "mod", "download", "-json", "filippo.io/sunlight@v0.8.0").Output()
		if err != nil {
			sunlightBuild.err, sunlightBuild.msg = err, string(out)
			return
		}
		var mod struct{ Dir string }
		json.Unmarshal(out, &mod)
		build := exec.Command("go", "build", "-o", dir+"/", "./cmd/sunlight", "./cmd/sunlight-keygen")
		build.Dir = mod.Dir
		build.Env = append(os.Environ(), "CGO_ENABLED=1", "GOFLAGS=-mod=mod")
		b, err := build.CombinedOutput()
		sunlightBuild.err, sunlightBuild.msg = err, string(b)
	})
	if sunlightBuild.err != nil {
		t.Fatalf("building Sunlight: %v\n%s", sunlightBuild.err, sunlightBuild.msg)
	}
	return filepath.Join(sunlightBuild.dir, "sunlight"), filepath.Join(sunlightBuild.dir, "sunlight-keygen")
}

// sunlightLog runs a Sunlight log on 127.0.0.1, its monitoring side (the
// local directory Sunlight writes) served by the test, until the test
// ends. It returns the submission and monitoring prefixes, the log's key,
// and the directory Sunlight writes its monitoring side to.
func sunlightLog(t *testing.T, fx *cttest.Fixture) (submit, monitor string, key any, data string) {
	server, keygen := sunlightBinaries(t)
	dir := t.TempDir()
	t.Cleanup(func() { exec.Command("chattr", "-R", "-i", dir).Run() }) // Sunlight makes its seed and full tiles immutable as root
	run := func(name string, args ...string) {
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run(keygen, "-f", filepath.Join(dir, "seed.bin"))
	run("sqlite3", filepath.Join(dir, "checkpoints.db"), "CREATE TABLE checkpoints (logID BLOB PRIMARY KEY, body BLOB NOT NULL) STRICT")
	os.WriteFile(filepath.Join(dir, "roots.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: fx.CA.Raw}), 0o644)

	data = filepath.Join(dir, "data")
	// Sunlight stores data tiles gzipped and serves nothing of the
	// monitoring side: served here, as a CDN would.
	mon := httptest.NewServer(http.StripPrefix("/pkbftest", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/tile/data/") {
			w.Header().Set("Content-Encoding", "gzip")
		}
		http.FileServer(http.Dir(data)).ServeHTTP(w, r)
	})))
	t.Cleanup(mon.Close)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	monitor = mon.URL + "/pkbftest"
	config := fmt.Sprintf(`listen: [%q]
checkpoints: %s
logs:
  - shortname: pkbftest
    inception: %s
    submissionprefix: https://127.0.0.1/pkbftest
    monitoringprefix: %s
    secret: %s
    cache: %s
    localdirectory: %s
    roots: %s
    period: 100
    notafterstart: 2000-01-01T00:00:00Z
    notafterlimit: 2100-01-01T00:00:00Z
`, addr, filepath.Join(dir, "checkpoints.db"), time.Now().UTC().Format("2006-01-02"), monitor,
		filepath.Join(dir, "seed.bin"), filepath.Join(dir, "cache.db"), data, filepath.Join(dir, "roots.pem"))
	os.WriteFile(filepath.Join(dir, "sunlight.yaml"), []byte(config), 0o644)
	cmd := exec.Command(server, "-c", filepath.Join(dir, "sunlight.yaml"))
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	submit = "http://" + addr + "/pkbftest"
	for i := 0; ; i++ {
		resp, err := http.Get(submit + "/log.v3.json")
		if err == nil && resp.StatusCode == 200 {
			var info struct{ Key []byte }
			json.NewDecoder(resp.Body).Decode(&info)
			resp.Body.Close()
			k, err := x509.ParsePKIXPublicKey(info.Key)
			if err != nil {
				t.Fatalf("the log's key: %v", err)
			}
			return submit, monitor, k, data
		}
		if i == 200 {
			t.Fatalf("Sunlight did not start: %v\n%s", err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// submitAll submits every entry of the fixture (add-chain, or
// add-pre-chain for a precertificate), many at once: each waits for the
// log to sequence it.
func submitAll(t *testing.T, submit string, fx *cttest.Fixture) {
	t.Helper()
	sem := make(chan struct{}, 100)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for i, e := range fx.Entries {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := submitOne(submit, fx, e); err != nil {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("entry %d: %v", i, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d submissions failed, the first: %s", len(failed), failed[0])
	}
}

// submitOne submits the entry (add-chain, or add-pre-chain for a
// precertificate) with the fixture's CA, and waits for the log to
// sequence it.
func submitOne(submit string, fx *cttest.Fixture, e cttest.Entry) error {
	path := "/ct/v1/add-chain"
	if e.Precert {
		path = "/ct/v1/add-pre-chain"
	}
	body, _ := json.Marshal(map[string][]string{"chain": {base64.StdEncoding.EncodeToString(e.DER), base64.StdEncoding.EncodeToString(fx.CA.Raw)}})
	resp, err := http.Post(submit+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b := new(bytes.Buffer)
		b.ReadFrom(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	return nil
}

// Sunlight's own server, fed certificates and precertificates some of
// whose keys are in the filter: a scan with the log's key (the checkpoint
// verified) finds each planted certificate once and nothing else, in
// one run and in a run interrupted ten times.
func TestSunlightLog(t *testing.T) {
	fx := cttest.NewFixture(t, 700, 700, 41)
	submit, monitor, key, data := sunlightLog(t, fx)
	submitAll(t, submit, fx)
	f := openFilter(t, fx.Filter)
	// The planted certificates, by serial (the log orders entries its
	// own way).
	want := map[string]bool{}
	for i := range fx.Planted {
		c, _ := x509.ParseCertificate(fx.Entries[i].DER)
		want[fmt.Sprintf("%x", c.SerialNumber.Bytes())] = true
	}
	open := func() Log {
		l, err := Open(context.Background(), monitor, Options{Kind: Static, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	check := func(name string, hits []Hit) {
		t.Helper()
		got := map[string]int{}
		var indexes []int64
		precerts := 0
		for _, h := range hits {
			got[h.Serial]++
			indexes = append(indexes, h.Index)
			if h.Precert {
				precerts++
			}
			if !want[h.Serial] || h.Issuer != "CN=pkbf CT test CA" {
				t.Errorf("%s: hit %+v is not a planted certificate", name, h)
			}
		}
		for s := range want {
			if got[s] != 1 {
				t.Errorf("%s: planted certificate %s reported %d times", name, s, got[s])
			}
		}
		if !slices.IsSorted(indexes) || precerts == 0 || precerts == len(hits) {
			t.Errorf("%s: hits at %v, %d precertificates", name, indexes, precerts)
		}
	}

	var hits []Hit
	res, err := (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), Report: func(h Hit) error { hits = append(hits, h); return nil },
		Unchecked: func(i int64, err error) { t.Errorf("entry %d: %v", i, err) }}).Run(context.Background())
	if err != nil || !res.Head.Verified || res.Head.Size != int64(len(fx.Entries)) || res.Entries != res.Head.Size {
		t.Fatalf("scan: %+v, %v", res, err)
	}
	check("one run", hits)

	state := filepath.Join(t.TempDir(), "state.json")
	hits = nil
	interrupted := 0
	for run := 0; run < 100; run++ {
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		s := &Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: state, SaveEvery: time.Nanosecond, Report: func(h Hit) error {
			hits = append(hits, h)
			if n++; n == 1+run%2 && interrupted < 10 {
				cancel()
			}
			return nil
		}}
		_, err := s.Run(ctx)
		cancel()
		if errors.Is(err, context.Canceled) {
			interrupted++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if interrupted < 10 {
		t.Errorf("interrupted %d times", interrupted)
	}
	check("ten interruptions", hits)

	// Issue 41, item 6, on the tiles Sunlight wrote: each precertificate
	// entry's pre_certificate, which the Merkle leaf does not cover,
	// swapped for one of a clean key, then for one of a planted key,
	// changes no verdict.
	for _, planted := range []bool{false, true} {
		swapped := swapPrecerts(t, data, fx.Precert(planted))
		l, err := Open(context.Background(), swapped, Options{Kind: Static, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		hits = nil
		res, err := (&Scan{Log: l, Filter: keycheck.New(f, keycheck.Options{}), Report: func(h Hit) error { hits = append(hits, h); return nil }}).Run(context.Background())
		if err != nil || !res.Head.Verified || res.Entries != res.Head.Size {
			t.Fatalf("pre_certificate swapped: %+v, %v", res, err)
		}
		check(fmt.Sprintf("pre_certificate swapped for a key planted=%v", planted), hits)
	}
}

// swapPrecerts serves a Sunlight log's monitoring directory with every
// precertificate entry's pre_certificate replaced by precert: data tiles
// decompressed, their entries rewritten with Sunlight's own encoding.
func swapPrecerts(t *testing.T, data string, precert []byte) (monitor string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/tile/data/") {
			http.FileServer(http.Dir(data)).ServeHTTP(w, r)
			return
		}
		f, err := os.Open(filepath.Join(data, filepath.FromSlash(r.URL.Path)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		tile, err := io.ReadAll(z)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		var out []byte
		for len(tile) > 0 {
			e, rest, err := sunlight.ReadTileLeaf(tile)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			if e.IsPrecert {
				e.PreCertificate = precert
			}
			out, tile = sunlight.AppendTileLeaf(out, e), rest
		}
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Issue 41 follow-up, F1, on Sunlight's own server: certificates and
// precertificates whose SPKIs pkbf's strict parse refuses, that Sunlight
// accepts and Go's x509 reads as a key in the filter, are hits; one whose
// key no parser reads (Sunlight takes an unknown algorithm) is not checked, in the run
// that reads it and in the next, which has nothing new to read.
func TestSunlightLenientKeys(t *testing.T) {
	fx := cttest.NewFixture(t, 4, 4, 1000)
	cases, path := lenientSPKIs(t)
	cert, precert := fx.Entries[0], fx.Entries[2]
	if cert.Precert || !precert.Precert {
		t.Fatal("the fixture's entries 0 and 2 are a certificate and a precertificate")
	}
	submit, monitor, key, _ := sunlightLog(t, fx)
	wantHits, wantUnchecked := 0, 0 // the log holds only these entries
	for _, c := range cases {
		for _, base := range []cttest.Entry{cert, precert} {
			e := cttest.Entry{DER: withSPKI(t, fx, base.DER, c.spki), Precert: base.Precert}
			if err := submitOne(submit, fx, e); err != nil {
				t.Logf("Sunlight refuses %q (precertificate %v): %v", c.name, e.Precert, err)
				continue
			}
			if c.key != nil {
				wantHits++
			} else {
				wantUnchecked++
			}
		}
	}
	if wantHits < 3 || wantUnchecked == 0 {
		t.Fatalf("Sunlight took %d of the SPKIs Go reads (the red team saw it take 3), %d of those no parser reads", wantHits, wantUnchecked)
	}
	l, err := Open(context.Background(), monitor, Options{Kind: Static, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state.json")
	var firstUnchecked []int64
	for run := 1; run <= 2; run++ {
		var unchecked []int64
		hits := 0
		res, err := (&Scan{Log: l, Filter: keycheck.New(openFilter(t, path), keycheck.Options{}), State: state,
			Report:    func(Hit) error { hits++; return nil },
			Unchecked: func(i int64, err error) { unchecked = append(unchecked, i) }}).Run(context.Background())
		if err != nil || !res.Head.Verified {
			t.Fatalf("run %d: %+v, %v", run, res, err)
		}
		if run == 1 {
			firstUnchecked = unchecked
			if hits != wantHits || len(unchecked) != wantUnchecked || res.Entries != int64(wantHits+wantUnchecked) {
				t.Errorf("run 1: %d read, %d hits, want %d; not checked %v, want %d", res.Entries, hits, wantHits, unchecked, wantUnchecked)
			}
		} else if res.Entries != 0 || !slices.Equal(unchecked, firstUnchecked) {
			t.Errorf("run 2: %d read, not checked %v, want %v again", res.Entries, unchecked, firstUnchecked)
		}
	}
}
