package ct

import (
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
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	ct "github.com/google/certificate-transparency-go"

	"github.com/pkbf/pkbf/ct/cttest"
	"github.com/pkbf/pkbf/keycheck"
)

// hostility is how hostileLog misbehaves; the zero value is honest.
type hostility struct {
	// forged are served in place of the entries they name (but, with
	// oneHonest, not in a get-entries of one entry: the one a scan
	// starting there proves included first).
	forged    map[int64][]byte
	oneHonest bool
	// refuseFrom, if not 0: get-entries from that entry on is refused.
	refuseFrom int64
	// consistency: "" honest, "refused", "garbage" (hashes that prove
	// nothing), or "256 only" (honest from 256, refused from elsewhere).
	consistency string
	// size, if not 0, is the tree head's size.
	size int64
}

// hostileLog serves fx as an RFC 6962 log on 127.0.0.1 (certificate-
// transparency-go's types, its tree head signed), misbehaving as the
// hostility it returns says, and a function opening it with its key.
func hostileLog(t *testing.T, fx *cttest.Fixture) (set func(hostility), open func() Log) {
	t.Helper()
	honest, forging := cttest.NewRFC6962Server(t, fx), cttest.NewRFC6962Server(t, fx)
	forging.Key = honest.Key
	var h atomic.Pointer[hostility]
	set = func(x hostility) {
		size := x.size
		if size == 0 {
			size = int64(len(fx.Entries))
		}
		honest.Size.Store(size)
		forging.Size.Store(size)
		forging.Forged.Store(&x.forged)
		h.Store(&x)
	}
	set(hostility{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x := h.Load()
		start, _ := strconv.ParseInt(r.FormValue("start"), 10, 64)
		end, _ := strconv.ParseInt(r.FormValue("end"), 10, 64)
		first, _ := strconv.ParseInt(r.FormValue("first"), 10, 64)
		switch {
		case strings.HasSuffix(r.URL.Path, "/get-entries"):
			switch {
			case x.refuseFrom > 0 && start >= x.refuseFrom:
				http.Error(w, "no more entries", http.StatusBadRequest)
			case x.oneHonest && start == end:
				honest.ServeHTTP(w, r)
			default:
				forging.ServeHTTP(w, r)
			}
			return
		case strings.HasSuffix(r.URL.Path, "/get-sth-consistency"):
			switch {
			case x.consistency == "refused", x.consistency == "256 only" && first != 256:
				http.Error(w, "no proofs today", http.StatusBadRequest)
				return
			case x.consistency == "garbage":
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(ct.GetSTHConsistencyResponse{Consistency: [][]byte{make([]byte, 32), make([]byte, 32), make([]byte, 32)}})
				return
			}
		}
		honest.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return set, func() Log {
		l, err := Open(context.Background(), srv.URL, Options{Kind: RFC6962, Key: honest.Key.Public(), Batch: 100})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
}

// realSerial is the serial of the fixture's entry i (cttest's numbering).
func realSerial(fx *cttest.Fixture, i int64) string {
	return hex.EncodeToString(big.NewInt(int64(len(fx.Entries)) + i + 1000).Bytes())
}

// Issue 48, item 12, at the library: whatever a hostile RFC 6962 log
// serves that is not proved part of its tree head reports no hit, keeps
// nothing in the state (no hit as reported, no entry as not checked, no
// position past it), and hides nothing from the run that reads the log
// honest: in the end each planted entry is reported once, with its real
// serial. Before, a hit from a forged entry was reported and, unless its
// proof failed, kept in the state as reported, so that the real entry at
// that index never was.
func TestForgedEntriesHideNoHit(t *testing.T) {
	fx := cttest.NewFixture(t, 600, 60, 293) // planted at 7, 300 and 593
	f := openFilter(t, fx.Filter)
	forged := fx.Cert(true) // another serial, a key in the filter
	garbage := []byte{0x30, 0x03, 0x02, 0x01, 0x01}
	type run struct {
		hostility
		from, to int64
		err      error // errors.Is the run's error, nil for a complete run
		next     int64 // the state's next entry
		unproved int64
		hits     int64 // reported by this run
	}
	failed := errors.New("any error")
	for _, c := range []struct {
		name string
		runs []run
	}{
		{"a forged entry past the place proved, then no more entries nor proofs", []run{
			{hostility: hostility{forged: map[int64][]byte{300: forged}, refuseFrom: 400, consistency: "256 only"}, err: failed, next: 256, unproved: 1, hits: 1},
			{next: 600, hits: 2},
		}},
		{"a forged entry, then no more entries nor proofs", []run{
			{hostility: hostility{forged: map[int64][]byte{7: forged}, refuseFrom: 256, consistency: "refused"}, err: failed, next: 0, unproved: 1},
			{next: 600, hits: 3},
		}},
		{"a forged entry, a consistency proof that proves nothing", []run{
			{hostility: hostility{forged: map[int64][]byte{7: forged}, consistency: "garbage"}, err: errNotInTree, next: 0, unproved: 1},
			{next: 600, hits: 3},
		}},
		{"a forged entry, then the tree head grows", []run{
			{hostility: hostility{forged: map[int64][]byte{7: forged}, refuseFrom: 256, consistency: "refused", size: 300}, err: failed, next: 0, unproved: 1},
			{next: 600, hits: 3},
		}},
		{"the first entry honest for its inclusion proof, forged when read", []run{
			{hostility: hostility{forged: map[int64][]byte{7: forged}, oneHonest: true}, from: 7, err: errNotInTree, next: 7, unproved: 1},
			{next: 600, hits: 3},
		}},
		{"an entry no parser reads, not proved", []run{
			{hostility: hostility{forged: map[int64][]byte{7: garbage}, refuseFrom: 256, consistency: "refused"}, err: failed, next: 0},
			{to: 5, next: 5},
			{next: 600, hits: 3},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			set, open := hostileLog(t, fx)
			path := filepath.Join(t.TempDir(), "state.json")
			var hits []Hit
			for i, r := range c.runs {
				set(r.hostility)
				var unchecked []int64
				s := &Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: path, From: r.from, To: r.to,
					Report:    func(h Hit) error { hits = append(hits, h); return nil },
					Unchecked: func(i int64, err error) { unchecked = append(unchecked, i) }}
				before := len(hits)
				res, err := s.Run(context.Background())
				switch {
				case r.err == nil && err != nil, r.err != nil && err == nil, r.err != nil && r.err != failed && !errors.Is(err, r.err):
					t.Errorf("run %d: %v, want %v", i+1, err, r.err)
				}
				if res.Next != r.next || res.Unproved != r.unproved || res.Hits != r.hits || int64(len(hits)-before) != r.hits {
					t.Errorf("run %d: %+v, %d hits reported; want next %d, %d unproved, %d hits", i+1, res, len(hits)-before, r.next, r.unproved, r.hits)
				}
				if r.forged != nil && r.forged[7] != nil && slices.Equal(r.forged[7], garbage) && !slices.Equal(unchecked, []int64{7}) {
					t.Errorf("run %d: not checked %v, want entry 7 (the run fails on it)", i+1, unchecked)
				}
				if r.forged == nil && len(unchecked) != 0 {
					t.Errorf("run %d, honest: entries %v not checked, of which no run proved one", i+1, unchecked)
				}
				var st state
				b, _ := os.ReadFile(path)
				if err := json.Unmarshal(b, &st); err != nil {
					t.Fatal(err)
				}
				if st.Next != r.next || len(st.Reported) != 0 || len(st.Unchecked) != 0 {
					t.Errorf("run %d: the state keeps next %d, reported %v, not checked %v; want next %d, nothing else", i+1, st.Next, st.Reported, st.Unchecked, r.next)
				}
			}
			var got, want []string
			for _, h := range hits {
				got = append(got, fmt.Sprintf("%d %s", h.Index, h.Serial))
			}
			for _, i := range []int64{7, 300, 593} {
				if i >= c.runs[0].from {
					want = append(want, fmt.Sprintf("%d %s", i, realSerial(fx, i)))
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("hits (index, serial) %q\nwant %q", got, want)
			}
		})
	}
}

// A hit a proof released that Report refuses is not lost: the state goes
// back to the place proved before that proof, keeps the hits of it
// already reported (proved, in the tree the state names), and the next
// run reports the refused one and the rest, each once.
func TestRFC6962ReportRefusedAfterProof(t *testing.T) {
	fx := cttest.NewFixture(t, 600, 60, 100) // planted at 7, 107, 207, ...
	f := openFilter(t, fx.Filter)
	_, open := hostileLog(t, fx)
	path := filepath.Join(t.TempDir(), "state.json")
	var hits []int64
	refuse := int64(207)
	s := &Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), State: path, Report: func(h Hit) error {
		if h.Index == refuse {
			return errors.New("the disk is full")
		}
		hits = append(hits, h.Index)
		return nil
	}}
	res, err := s.Run(context.Background())
	var st state
	b, _ := os.ReadFile(path)
	json.Unmarshal(b, &st)
	if err == nil || res.Next != 0 || st.Next != 0 || !slices.Equal(st.Reported, []int64{7, 107}) {
		t.Errorf("Report refused 207: %+v, %v; the state's next %d, reported %v; want 0, [7 107]", res, err, st.Next, st.Reported)
	}
	refuse = -1
	if res, err := s.Run(context.Background()); err != nil || res.Next != 600 {
		t.Fatalf("the next run: %+v, %v", res, err)
	}
	if want := []int64{7, 107, 207, 307, 407, 507}; !slices.Equal(hits, want) {
		t.Errorf("hits %v, want %v", hits, want)
	}
}

// A state whose "reported" list a version that reported hits from
// entries not proved wrote (the forged entry 7 of TestForgedEntriesHideNoHit)
// hides nothing: the real entry 7 is reported.
func TestStateReportedUnprovedIgnored(t *testing.T) {
	fx := cttest.NewFixture(t, 600, 60, 1000) // planted at 7
	f := openFilter(t, fx.Filter)
	_, open := hostileLog(t, fx)
	l := open()
	path := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(path, fmt.Appendf(nil, `{"log": %q, "next": 0, "reported": [7], "tree_size": 0}`, l.URL()), 0o644)
	var hits []int64
	res, err := (&Scan{Log: l, Filter: keycheck.New(f, keycheck.Options{}), State: path, Report: func(h Hit) error { hits = append(hits, h.Index); return nil }}).Run(context.Background())
	if err != nil || res.Hits != 1 || !slices.Equal(hits, []int64{7}) {
		t.Errorf("%+v, %v, hits %v; want entry 7 reported", res, err, hits)
	}
}

// The Static CT path has no such hole: the Sunlight client checks each
// entry against the hash tiles, and those against the checkpoint, before
// it yields the entry. A log serving a forged entry 7 in its data tile
// (the hash tiles honest) fails at entry 7, the state at 7; in its data
// and hash tiles both (the checkpoint honest), at entry 0, where the
// client reads the hash tiles. No hit is reported, and the honest log
// then reports the real entry 7.
func TestStaticForgedEntryHidesNoHit(t *testing.T) {
	fx := cttest.NewFixture(t, 600, 60, 1000) // planted at 7
	f := openFilter(t, fx.Filter)
	forgedFx := *fx
	forgedFx.Entries = slices.Clone(fx.Entries)
	forgedFx.Entries[7] = cttest.Entry{DER: fx.Cert(true), Time: fx.Entries[7].Time}
	honestDir, forgedDir := t.TempDir(), t.TempDir()
	fx.WriteStatic(t, honestDir, len(fx.Entries))
	forgedFx.WriteStatic(t, forgedDir, len(fx.Entries))
	var forge atomic.Value // "", "data", "data and hashes"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dir := honestDir
		switch m := forge.Load(); {
		case m == "data" && strings.Contains(r.URL.Path, "/tile/data/"),
			m == "data and hashes" && strings.Contains(r.URL.Path, "/tile/"):
			dir = forgedDir
		}
		http.FileServer(http.Dir(dir)).ServeHTTP(w, r)
	}))
	defer srv.Close()
	for mode, failed := range map[string]int64{"data": 7, "data and hashes": 0} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			var hits []Hit
			scan := func() (Result, error) {
				l, err := Open(context.Background(), srv.URL, Options{Kind: Static})
				if err != nil {
					t.Fatal(err)
				}
				return (&Scan{Log: l, Filter: keycheck.New(f, keycheck.Options{}), State: path, Report: func(h Hit) error { hits = append(hits, h); return nil }}).Run(context.Background())
			}
			forge.Store(mode)
			res, err := scan()
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(": entry %d: ", failed)) || res.Next != failed || len(hits) != 0 {
				t.Errorf("forged: %+v, %v, %d hits; want a failure at entry %d, no hit", res, err, len(hits), failed)
			}
			forge.Store("")
			if res, err := scan(); err != nil || res.Next != int64(len(fx.Entries)) {
				t.Fatalf("honest: %+v, %v", res, err)
			}
			if len(hits) != 1 || hits[0].Index != 7 || hits[0].Serial != realSerial(fx, 7) {
				t.Errorf("hits %+v, want entry 7, serial %s", hits, realSerial(fx, 7))
			}
		})
	}
}

// A log that gives no consistency proof cannot make a scan hold back more
// than maxHeld hits: past it the scan fails, reporting none; at it, the
// scan goes on, and the tree head's root at the tree's end proves and
// releases them.
func TestHeldHitsBounded(t *testing.T) {
	fx := cttest.NewFixture(t, 300, 30, 60) // planted at 7, 67, 127, 187 and 247: one batch
	f := openFilter(t, fx.Filter)
	set, open := hostileLog(t, fx)
	set(hostility{consistency: "refused"})
	defer func(n int) { maxHeld = n }(maxHeld)
	for _, n := range []int{5, 4} {
		maxHeld = n
		var hits []int64
		res, err := (&Scan{Log: open(), Filter: keycheck.New(f, keycheck.Options{}), Report: func(h Hit) error { hits = append(hits, h.Index); return nil }}).Run(context.Background())
		switch {
		case n == 5 && (err != nil || !slices.Equal(hits, []int64{7, 67, 127, 187, 247})):
			t.Errorf("at most 5 held: %+v, %v, hits %v; want a complete scan, 5 hits", res, err, hits)
		case n == 4 && (err == nil || !strings.Contains(err.Error(), "5 hits wait for the proof of their entries") || len(hits) != 0 || res.Unproved != 5):
			t.Errorf("at most 4 held: %+v, %v, hits %v; want a failure, no hit, 5 unproved", res, err, hits)
		}
	}
}
