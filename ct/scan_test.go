package ct

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"filippo.io/sunlight"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/ct/cttest"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/weakkeys"
)

// testLogs returns the fixture's entries as both kinds of log, served on
// 127.0.0.1: a Static CT log (tiles written by the test, read by the
// Sunlight client) and an RFC 6962 log (read by certificate-transparency-
// go's client, its tree head signed and verified with a key).
func testLogs(t *testing.T, fx *cttest.Fixture) map[string]func() Log {
	return testLogsThrough(t, fx, func(h http.Handler) http.Handler { return h })
}

// testLogsThrough is testLogs with both servers' handlers wrapped.
func testLogsThrough(t *testing.T, fx *cttest.Fixture, wrap func(http.Handler) http.Handler) map[string]func() Log {
	t.Helper()
	dir := t.TempDir()
	fx.WriteStatic(t, dir, len(fx.Entries))
	static := httptest.NewServer(wrap(http.FileServer(http.Dir(dir))))
	t.Cleanup(static.Close)
	rs := cttest.NewRFC6962Server(t, fx)
	rfc := httptest.NewServer(wrap(rs))
	t.Cleanup(rfc.Close)
	return map[string]func() Log{
		"static": func() Log {
			l, err := Open(context.Background(), static.URL, Options{Kind: Static, Parallel: 4})
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
		"rfc6962": func() Log {
			l, err := Open(context.Background(), rfc.URL, Options{Kind: RFC6962, Key: rs.Key.Public(), Batch: 64, Parallel: 3})
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
	}
}

func openFilter(t *testing.T, path string) *pkbf.Filter { return openFilterTB(t, path) }

func openFilterTB(t testing.TB, path string) *pkbf.Filter {
	f, err := pkbf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Every planted key is found, in certificates and precertificates, on
// both kinds of log, with the entry's details; no other entry is
// reported, and every entry is checked.
func TestScanFindsPlanted(t *testing.T) {
	fx := cttest.NewFixture(t, 3000, 300, 97)
	f := openFilter(t, fx.Filter)
	for kind, open := range testLogs(t, fx) {
		t.Run(kind, func(t *testing.T) {
			var hits []Hit
			s := &Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: filepath.Join(t.TempDir(), "state.json"),
				Report:    func(h Hit) error { hits = append(hits, h); return nil },
				Unchecked: func(i int64, err error) { t.Errorf("entry %d not checked: %v", i, err) }}
			res, err := s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Entries != 3000 || res.Next != 3000 || res.Hits != int64(len(fx.Planted)) || res.Head.Size != 3000 {
				t.Errorf("result %+v, want 3000 entries and %d hits", res, len(fx.Planted))
			}
			if kind == "rfc6962" && !res.Head.Verified {
				t.Errorf("the tree head's signature was not verified")
			}
			checkHits(t, fx, hits)
			// A second run has nothing to do.
			hits = nil
			if res, err := s.Run(context.Background()); err != nil || res.Entries != 0 || len(hits) != 0 {
				t.Errorf("second run: %+v, %v, %d hits", res, err, len(hits))
			}
		})
	}
}

// checkHits checks that hits are the planted entries, each once, in
// order, with their details.
func checkHits(t *testing.T, fx *cttest.Fixture, hits []Hit) {
	t.Helper()
	var got, want []int64
	for _, h := range hits {
		got = append(got, h.Index)
		e := fx.Entries[h.Index]
		if h.Precert != e.Precert || h.Timestamp.UnixMilli() != e.Time || !strings.HasPrefix(h.Subject, "CN=host") ||
			h.Issuer != "CN=pkbf CT test CA" || h.Verdict.Key.Fingerprint == "" || !h.Verdict.Probably {
			t.Errorf("hit %d: %+v", h.Index, h)
		}
		if serial := hex.EncodeToString(big.NewInt(int64(len(fx.Entries)) + h.Index + 1000).Bytes()); h.Serial != serial {
			t.Errorf("hit %d: serial %s, want %s", h.Index, h.Serial, serial)
		}
	}
	for i := range fx.Planted {
		want = append(want, i)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("hits at %v\nwant %v", got, want)
	}
	precerts := 0
	for _, h := range hits {
		if h.Precert {
			precerts++
		}
	}
	if precerts == 0 || precerts == len(hits) {
		t.Errorf("%d of %d hits are precertificates: both kinds must be found", precerts, len(hits))
	}
}

// A scan interrupted ten times, at different places, and resumed from
// its state each time reports what one run reports: every planted entry
// once.
func TestScanResumedTenTimes(t *testing.T) {
	fx := cttest.NewFixture(t, 4000, 300, 61)
	f := openFilter(t, fx.Filter)
	for kind, open := range testLogs(t, fx) {
		t.Run(kind, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state.json")
			var hits []Hit
			runs := 0
			for ; runs < 30; runs++ {
				ctx, cancel := context.WithCancel(context.Background())
				stopAfter := 1 + runs%3 // hits into the run
				n := 0
				s := &Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: state, SaveEvery: time.Nanosecond,
					Report: func(h Hit) error {
						hits = append(hits, h)
						if n++; n == stopAfter && runs < 10 {
							cancel()
						}
						return nil
					}}
				res, err := s.Run(ctx)
				cancel()
				if err == nil {
					if res.Next != 4000 {
						t.Fatalf("run %d ended at %d", runs, res.Next)
					}
					break
				}
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("run %d: %v", runs, err)
				}
			}
			if runs < 10 {
				t.Fatalf("only %d interruptions", runs)
			}
			checkHits(t, fx, hits)
		})
	}
}

// A scan cancelled while a response body is still arriving returns an
// error that errors.Is(err, context.Canceled) matches, on both kinds of
// log: the client libraries report that cut in words of their own, and
// callers (pkbf-ct's SIGINT, a resumed run) tell an interruption from a
// failure by it.
func TestScanCancelledMidBody(t *testing.T) {
	fx := cttest.NewFixture(t, 600, 20, 7)
	f := openFilter(t, fx.Filter)
	arrived := make(chan struct{}, 100)
	stall := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.Contains(r.URL.Path, "get-entries") && !strings.Contains(r.URL.Path, "/tile/data/") {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			body := rec.Body.Bytes()
			w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			select { // never blocks: the handler must reach its wait
			case arrived <- struct{}{}:
			default:
			}
			<-r.Context().Done()
		})
	}
	for kind, open := range testLogsThrough(t, fx, stall) {
		t.Run(kind, func(t *testing.T) {
			for len(arrived) > 0 { // the other log's
				<-arrived
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-arrived
				time.Sleep(20 * time.Millisecond)
				cancel()
			}()
			_, err := (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{})}).Run(ctx)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, which is not context.Canceled", err)
			}
		})
	}
}

// An RFC 6962 log that serves an entry other than the one its tree head
// covers is caught when the scan reaches the tree's size, and a scan
// that starts in the middle of the log verifies from an inclusion proof.
func TestRFC6962Verification(t *testing.T) {
	fx := cttest.NewFixture(t, 1500, 200, 101)
	f := openFilter(t, fx.Filter)
	rs := cttest.NewRFC6962Server(t, fx)
	srv := httptest.NewServer(rs)
	defer srv.Close()
	open := func() Log {
		l, err := Open(context.Background(), srv.URL, Options{Kind: RFC6962, Key: rs.Key.Public(), Batch: 100})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	rs.Tamper.Store(700 + 1)
	_, err := (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{})}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "do not match the tree head") || errors.Is(err, context.Canceled) {
		t.Errorf("a tampered entry: %v (a failure, not an interruption)", err)
	}
	_, err = (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), From: 333}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "do not match the tree head") {
		t.Errorf("a tampered entry, from 333: %v", err)
	}
	// A mismatch keeps nothing of the run past the last place proved (512:
	// the hits of each batch of 256 are proved before they are reported,
	// and the batch of entry 700 fails its proof), and the error says so;
	// the entries read are counted (issue 41 follow-up, F4: "0 read" when
	// 1500 were read and discarded).
	tampered := filepath.Join(t.TempDir(), "tampered.json")
	res, err := (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: tampered}).Run(context.Background())
	var st struct{ Next int64 }
	b, _ := os.ReadFile(tampered)
	json.Unmarshal(b, &st)
	if err == nil || res.Next != 512 || res.Entries != 768 || st.Next != 512 || !strings.Contains(fmt.Sprint(err), "nothing read from entry 512 on is kept") {
		t.Errorf("a tampered entry, with a state: %+v, %v, the state's next %d: want 512, 768 read", res, err, st.Next)
	}
	rs.Tamper.Store(0)
	var hits []Hit
	res, err = (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), From: 333, Report: func(h Hit) error { hits = append(hits, h); return nil }}).Run(context.Background())
	if err != nil || res.Entries != 1500-333 {
		t.Fatalf("from 333: %+v, %v", res, err)
	}
	for _, h := range hits {
		if h.Index < 333 {
			t.Errorf("hit %d before the start", h.Index)
		}
	}

	// A log that grows between runs: the state's range goes on, and is
	// checked against the new head.
	rs.Size.Store(1000)
	state := filepath.Join(t.TempDir(), "state.json")
	hits = nil
	s := &Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: state, Report: func(h Hit) error { hits = append(hits, h); return nil }}
	if res, err := s.Run(context.Background()); err != nil || res.Next != 1000 {
		t.Fatalf("first 1000: %+v, %v", res, err)
	}
	rs.Size.Store(1500)
	if res, err := s.Run(context.Background()); err != nil || res.Start != 1000 || res.Next != 1500 {
		t.Fatalf("the next 500: %+v, %v", res, err)
	}
	checkHits(t, fx, hits)
	// The state names its log.
	other := &Scan{Log: &staticLog{prefix: "https://other.example/"}, Filter: keycheck.New(f, keycheck.Options{}), State: state}
	if _, err := other.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "not of https://other.example/") {
		t.Errorf("another log's state: %v", err)
	}
}

// Issue 41, item 6: what a log's Merkle leaves do not cover (a Static CT
// entry's pre_certificate, an RFC 6962 entry's extra_data) decides no
// verdict. With every precertificate there swapped for one of a clean
// key, every planted precertificate is still found (the key comes from
// the TBSCertificate in the leaf); swapped for one of a planted key, no
// clean entry is reported. On both kinds of log.
func TestUncoveredDataDecidesNothing(t *testing.T) {
	for _, planted := range []bool{false, true} {
		fx := cttest.NewFixture(t, 1500, 150, 53)
		fx.Uncovered = fx.Precert(planted)
		f := openFilter(t, fx.Filter)
		for kind, open := range testLogs(t, fx) {
			name := kind + "/a clean key outside the leaves"
			if planted {
				name = kind + "/a planted key outside the leaves"
			}
			t.Run(name, func(t *testing.T) {
				var hits []Hit
				res, err := (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}),
					Report:    func(h Hit) error { hits = append(hits, h); return nil },
					Unchecked: func(i int64, err error) { t.Errorf("entry %d not checked: %v", i, err) }}).Run(context.Background())
				if err != nil || res.Entries != 1500 {
					t.Fatalf("%+v, %v", res, err)
				}
				checkHits(t, fx, hits)
			})
		}
	}
}

// Issue 41, item 8: a start past the tree head (a state file's next
// entry, or From) is an error naming both, and so is a tree head smaller
// than the last run's; the state file is left as it was. On both kinds
// of log.
func TestStartPastTree(t *testing.T) {
	fx := cttest.NewFixture(t, 600, 60, 31)
	f := openFilter(t, fx.Filter)
	for kind, open := range testLogs(t, fx) {
		t.Run(kind, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state.json")
			s := &Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: state}
			if _, err := s.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			saved, _ := os.ReadFile(state)
			for _, c := range []struct {
				name, state, want string
			}{
				{"next past the tree", `"next": 99999999999`, "would start at entry 99999999999 (the next entry in " + state + "), outside the tree head's 600 entries"},
				{"next one past the tree", `"next": 601`, "would start at entry 601"},
				{"a negative next", `"next": -1`, "would start at entry -1 (the next entry in " + state + "), outside the tree head's 600 entries"},
				{"a tree smaller than the last run's", `"tree_size": 601`, "the tree head has 600 entries, fewer than the 601 of the last run's"},
			} {
				b := regexp.MustCompile(`"`+strings.Split(c.state, `"`)[1]+`": \d+`).ReplaceAll(saved, []byte(c.state))
				os.WriteFile(state, b, 0o644)
				res, err := s.Run(context.Background())
				if err == nil || !strings.Contains(err.Error(), c.want) || res.Entries != 0 {
					t.Errorf("%s: %+v, %v\nwant an error with %q", c.name, res, err, c.want)
				}
				if after, _ := os.ReadFile(state); !bytes.Equal(after, b) {
					t.Errorf("%s: the state file changed:\n%s", c.name, after)
				}
			}
			// From past the tree, without a state.
			_, err := (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), From: 601}).Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), "would start at entry 601, outside the tree head's 600 entries") {
				t.Errorf("From 601: %v", err)
			}
			// At the tree's size: nothing to do, no error.
			if res, err := (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), From: 600}).Run(context.Background()); err != nil || res.Entries != 0 {
				t.Errorf("From 600: %+v, %v", res, err)
			}
		})
	}
}

// Issue 41, item 9: a Static CT log whose tiles fail names the entry
// that failed, and the state saved is the first entry not read: a data
// tile that cannot be read (among the many the client fetches at once),
// and an entry that does not match the tree after a thousand that do.
func TestFailureNamesEntry(t *testing.T) {
	fx := cttest.NewFixture(t, 3000, 300, 97)
	f := openFilter(t, fx.Filter)
	rewrite := func(t *testing.T, dir, tile string, change func([]byte) []byte) {
		path := filepath.Join(dir, tile)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(path, change(b), 0o644)
	}
	for _, c := range []struct {
		name, tile string
		change     func([]byte) []byte
		url        func(dir string) string
		failed     int64 // the entry named
		next       int64 // the state's next entry
	}{
		{"a data tile that does not decompress", "tile/data/006", func([]byte) []byte { return []byte("\x1f\x8b\x08junk") },
			func(dir string) string { return "gzip+file://" + dir }, 1536, 0},
		{"a data tile served as 404", "tile/data/006", nil, nil, 1536, 0},
		{"an entry that does not match the tree", "tile/data/004", func(b []byte) []byte {
			e, rest, err := sunlight.ReadTileLeaf(b)
			if err != nil {
				t.Fatal(err)
			}
			e.Timestamp++ // the same entry a millisecond later: another leaf
			return append(sunlight.AppendTileLeaf(nil, e), rest...)
		}, nil, 1024, 1024},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fx.WriteStatic(t, dir, len(fx.Entries))
			if c.url != nil { // every data tile gzipped, as Sunlight stores them
				tiles, _ := filepath.Glob(filepath.Join(dir, "tile/data/*"))
				partial, _ := filepath.Glob(filepath.Join(dir, "tile/data/*.p/*"))
				for _, path := range append(tiles, partial...) {
					if fi, err := os.Stat(path); err != nil || fi.IsDir() {
						continue
					}
					rel, _ := filepath.Rel(dir, path)
					rewrite(t, dir, rel, func(b []byte) []byte {
						var z bytes.Buffer
						w := gzip.NewWriter(&z)
						w.Write(b)
						w.Close()
						return z.Bytes()
					})
				}
			}
			if c.change != nil {
				rewrite(t, dir, c.tile, c.change)
			} else {
				os.Remove(filepath.Join(dir, c.tile))
			}
			url := ""
			if c.url != nil {
				url = c.url(dir)
			} else {
				srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
				defer srv.Close()
				url = srv.URL
			}
			l, err := Open(context.Background(), url, Options{Kind: Static})
			if err != nil {
				t.Fatal(err)
			}
			state := filepath.Join(t.TempDir(), "state.json")
			var hits []int64
			res, err := (&Scan{Log: l, Filter: keycheck.New(f, keycheck.Options{}), State: state, Report: func(h Hit) error { hits = append(hits, h.Index); return nil }}).Run(context.Background())
			if want := fmt.Sprintf(": entry %d: ", c.failed); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v, want one naming entry %d", err, c.failed)
			}
			var st struct{ Next int64 }
			b, _ := os.ReadFile(state)
			json.Unmarshal(b, &st)
			if st.Next != c.next || res.Next != c.next || res.Entries != c.next {
				t.Errorf("state's next %d, result %+v: want %d read, the next run from %d", st.Next, res, c.next, c.next)
			}
			for _, i := range hits {
				if i >= c.next {
					t.Errorf("a hit at %d, past the entries read", i)
				}
			}
		})
	}
}

// Issue 41 follow-up, F1: an entry whose key could not be read is never
// forgotten: the state lists it, and every later run counts it as not
// checked (through Unchecked) even with nothing new to read, until a run
// with AcknowledgeUnchecked drops it. On both kinds of log.
func TestUncheckedNeverForgotten(t *testing.T) {
	fx := cttest.NewFixture(t, 600, 60, 1000)
	var unreadable []byte
	cases, _ := lenientSPKIs(t)
	for _, c := range cases {
		if c.key == nil {
			unreadable = c.spki
			break
		}
	}
	fx.Entries[300] = cttest.Entry{DER: withSPKI(t, fx, fx.Entries[0].DER, unreadable), Time: fx.Entries[300].Time}
	f := openFilter(t, fx.Filter)
	for kind, open := range testLogs(t, fx) {
		t.Run(kind, func(t *testing.T) {
			var unchecked []int64
			s := &Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: filepath.Join(t.TempDir(), "state.json"),
				Unchecked: func(i int64, err error) { unchecked = append(unchecked, i) }}
			for run, want := range [][]int64{{300}, {300}, nil, nil} {
				unchecked = nil
				s.AcknowledgeUnchecked = run == 2
				res, err := s.Run(context.Background())
				if err != nil || res.Next != 600 {
					t.Fatalf("run %d: %+v, %v", run+1, res, err)
				}
				if !slices.Equal(unchecked, want) || res.Unchecked != int64(len(want)) {
					t.Errorf("run %d: not checked %v (%d), want %v", run+1, unchecked, res.Unchecked, want)
				}
			}
		})
	}
}

// rfc6962Test serves the fixture as an RFC 6962 log on 127.0.0.1 and
// opens it with its key.
func rfc6962Test(t *testing.T, fx *cttest.Fixture) (*cttest.RFC6962Server, func() Log) {
	rs := cttest.NewRFC6962Server(t, fx)
	srv := httptest.NewServer(rs)
	t.Cleanup(srv.Close)
	return rs, func() Log {
		l, err := Open(context.Background(), srv.URL, Options{Kind: RFC6962, Key: rs.Key.Public(), Batch: 100})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
}

// Issue 41 follow-up, F3: an RFC 6962 scan that stops short of the tree
// head (To) proves the entries it read a prefix of the head (a
// consistency proof from their range's root): entries that are not the
// tree's fail the scan (at the end of their batch of 256, whose hits wait
// for its proof), and its state keeps nothing of them; honest ones are
// kept, and the next run goes on from there to the head.
func TestRFC6962ToProved(t *testing.T) {
	fx := cttest.NewFixture(t, 600, 60, 101)
	f := openFilter(t, fx.Filter)
	rs, open := rfc6962Test(t, fx)
	state := filepath.Join(t.TempDir(), "state.json")
	rs.Tamper.Store(150 + 1)
	res, err := (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: state, To: 300}).Run(context.Background())
	if err == nil || !errors.Is(err, errNotInTree) || res.Next != 0 || res.Entries != 256 {
		t.Fatalf("entry 150 not the tree's, to 300: %+v, %v; want a failure keeping nothing", res, err)
	}
	rs.Tamper.Store(0)
	var hits []Hit
	s := &Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: state, To: 300, Report: func(h Hit) error { hits = append(hits, h); return nil }}
	if res, err := s.Run(context.Background()); err != nil || res.Next != 300 {
		t.Fatalf("honest, to 300: %+v, %v", res, err)
	}
	s.To = 0
	if res, err := s.Run(context.Background()); err != nil || res.Start != 300 || res.Next != 600 {
		t.Fatalf("honest, 300 to the head: %+v, %v", res, err)
	}
	checkHits(t, fx, hits)
}

// Issue 41 follow-up, F4: the state of an RFC 6962 scan keeps only
// entries proved a prefix of the tree head (a consistency proof at each
// save, and at the end of each batch of 256 with a hit). On a log serving
// entry 500 unlike its tree: a run fails at the first save past it,
// keeping what it proved before; a run that saves rarely fails at the
// proof of the first hit past it, and keeps nothing more (before, it kept
// them, and every later run failed even on the honest log). On the honest
// log, a run interrupted by the report of a hit past entry 800 keeps what
// it proved (to 1024, the end of that hit's batch), and the next one
// completes.
func TestRFC6962KeepsOnlyProvedRanges(t *testing.T) {
	fx := cttest.NewFixture(t, 1500, 150, 101)
	f := openFilter(t, fx.Filter)
	rs, open := rfc6962Test(t, fx)
	state := filepath.Join(t.TempDir(), "state.json")
	run := func(every time.Duration, stop int64) (Result, error) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		return (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: state, SaveEvery: every,
			Report: func(h Hit) error {
				if h.Index > stop {
					cancel()
				}
				return nil
			}}).Run(ctx)
	}
	rs.Tamper.Store(500 + 1)
	res, err := run(time.Nanosecond, 800)
	if !errors.Is(err, errNotInTree) || res.Next == 0 || res.Next > 500 {
		t.Errorf("saved often, entry 500 not the tree's: %+v, %v; want a failure, the state at the last place proved", res, err)
	}
	proved := res.Next
	res, err = run(time.Hour, 800)
	if !errors.Is(err, errNotInTree) || res.Next != proved {
		t.Errorf("saved rarely, entry 500 not the tree's: %+v, %v; want the state kept at %d", res, err, proved)
	}
	rs.Tamper.Store(0)
	if res, err := run(time.Hour, 800); !errors.Is(err, context.Canceled) || res.Next != 1024 {
		t.Errorf("interrupted past entry 800 on the honest log: %+v, %v; want the state at 1024 (where the hit that stopped it was proved)", res, err)
	}
	if res, err := run(time.Hour, 1500); err != nil || res.Next != 1500 {
		t.Fatalf("the honest log: %+v, %v", res, err)
	}
}

// Issue 41 follow-up, F2: a log whose history changes between two runs
// fails the second, naming both roots: a tree head that does not extend
// the tree the state was read against (tree A, 300 entries, entry 7
// clean, then tree B, 600 entries, entry 7 planted: before, the second run
// read 300 to 600 only and passed), and one of the same size with
// another root. A log that grows honestly passes. On both kinds of log.
func TestForkBetweenRuns(t *testing.T) {
	fx := cttest.NewFixture(t, 600, 60, 1000) // entry 7 planted, only
	fa := *fx
	fa.Entries = slices.Clone(fx.Entries)
	fa.Entries[7] = fx.Entries[8]
	f := openFilter(t, fx.Filter)

	// Static CT: each tree's tiles in a directory of its own, one served.
	var dir atomic.Value
	dirs := map[string]string{}
	for name, c := range map[string]struct {
		fx *cttest.Fixture
		n  int
	}{"A300": {&fa, 300}, "B300": {fx, 300}, "B600": {fx, 600}} {
		dirs[name] = t.TempDir()
		c.fx.WriteStatic(t, dirs[name], c.n)
	}
	static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.FileServer(http.Dir(dir.Load().(string))).ServeHTTP(w, r)
	}))
	t.Cleanup(static.Close)
	// RFC 6962: two servers, one key.
	sa, sb := cttest.NewRFC6962Server(t, &fa), cttest.NewRFC6962Server(t, fx)
	sa.Key = sb.Key
	var rfcTree atomic.Value
	rfc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rfcTree.Load().(http.Handler).ServeHTTP(w, r)
	}))
	t.Cleanup(rfc.Close)
	serve := map[string]func(tree string){
		"static": func(tree string) { dir.Store(dirs[tree]) },
		"rfc6962": func(tree string) {
			s, n := sb, int64(300)
			if tree == "A300" {
				s = sa
			}
			if tree == "B600" {
				n = 600
			}
			s.Size.Store(n)
			rfcTree.Store(http.Handler(s))
		},
	}
	open := map[string]func() Log{
		"static": func() Log { l, _ := Open(context.Background(), static.URL, Options{Kind: Static}); return l },
		"rfc6962": func() Log {
			l, _ := Open(context.Background(), rfc.URL, Options{Kind: RFC6962, Key: sb.Key.Public(), Batch: 100})
			return l
		},
	}
	for kind := range serve {
		for _, c := range []struct {
			name        string
			first, then string
			forked      bool
		}{
			{"a tree that does not extend the last", "A300", "B600", true},
			{"a tree of the same size, another root", "A300", "B300", true},
			{"an honest log that grows", "B300", "B600", false},
			{"an honest log that does not grow", "B300", "B300", false},
		} {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "state.json")
				serve[kind](c.first)
				if _, err := (&Scan{Log: open[kind](), Filter: keycheck.New(f, keycheck.Options{}), State: path}).Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				before, _ := os.ReadFile(path)
				serve[kind](c.then)
				res, err := (&Scan{Log: open[kind](), Filter: keycheck.New(f, keycheck.Options{}), State: path}).Run(context.Background())
				if !c.forked {
					if err != nil || res.Next != res.Head.Size {
						t.Errorf("%+v, %v", res, err)
					}
					return
				}
				var st state
				json.Unmarshal(before, &st)
				if !errors.Is(err, errForked) || !strings.Contains(err.Error(), fmt.Sprintf("%x", st.Root)) || !strings.Contains(err.Error(), fmt.Sprintf("%x", res.Head.Root)) || res.Entries != 0 {
					t.Errorf("%+v, %v; want a failure naming roots %x and %x", res, err, st.Root, res.Head.Root)
				}
				if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
					t.Errorf("the state changed")
				}
			})
		}
	}
}

// Issue 41 follow-up, F4: a state an earlier version saved with a Merkle
// range of entries that are not the tree's (it kept unproved ranges, and
// no root) fails the next run at once, on the honest log, with an error
// that says the saved range is at fault and how to start over (before:
// every run read to the tree's end and failed naming two roots only).
func TestRFC6962UnprovedSavedRange(t *testing.T) {
	fx := cttest.NewFixture(t, 600, 60, 1000)
	f := openFilter(t, fx.Filter)
	rs, open := rfc6962Test(t, fx)
	rs.Tamper.Store(100 + 1)
	l := open()
	head, err := l.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	entries, save := l.Entries(context.Background(), head, 0, nil)
	for e, err := range entries {
		if err != nil {
			t.Fatal(err)
		}
		if e.Index == 299 {
			break
		}
	}
	verify, err := save()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.json")
	b, _ := json.Marshal(state{Log: l.URL(), Next: 300, Verify: verify, Size: 600})
	os.WriteFile(path, b, 0o644)
	rs.Tamper.Store(0)
	res, err := (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: path}).Run(context.Background())
	if !errors.Is(err, errNotInTree) || !strings.Contains(err.Error(), "remove "+path) || res.Entries != 0 {
		t.Errorf("%+v, %v", res, err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Errorf("the state changed")
	}
}

// TestScanWeak: with a KeyChecker that makes the weak-key checks, the
// scan reports as hits the entries whose keys they refuse, with the
// findings in the hit's verdict and JSON: without Debian lists, every
// entry's key is "not covered" (RSA, EC) or not allowed (Ed25519), so
// every entry is a hit.
func TestScanWeak(t *testing.T) {
	fx := cttest.NewFixture(t, 300, 30, 7)
	f := openFilter(t, fx.Filter)
	weak, err := weakkeys.New()
	if err != nil {
		t.Fatal(err)
	}
	for kind, open := range testLogs(t, fx) {
		var hits []Hit
		s := &Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{Weak: weak}), Report: func(h Hit) error { hits = append(hits, h); return nil }}
		res, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Entries != 300 || res.Hits != 300 || len(hits) != 300 {
			t.Fatalf("%s: result %+v, %d hits; want every entry a hit", kind, res, len(hits))
		}
		probably := 0
		for _, h := range hits {
			if h.Verdict.Probably {
				probably++
			}
			last := weakkeys.Finding{}
			if n := len(h.Verdict.Findings); n > 0 {
				last = h.Verdict.Findings[n-1]
			}
			if last.Rule != weakkeys.RuleDebianNotCovered && last.Rule != weakkeys.RuleAlgorithm ||
				!strings.Contains(string(h.AppendJSON(nil)), `"rule":"`+string(last.Rule)+`"`) || h.Verdict.Key.Fingerprint == "" {
				t.Fatalf("%s: hit %d: %+v", kind, h.Index, h.Verdict)
			}
		}
		if probably != len(fx.Planted) {
			t.Errorf("%s: %d hits the filter holds, want the %d planted", kind, probably, len(fx.Planted))
		}
	}
}
