package update

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

// Issue 41, item 11: a server (or anyone on the path of plain http) serves
// an empty filter whose header claims revision 99 and 5,000 entries. It
// is refused over https and over http alike, with the installed filter's
// parameters and with others, and the installed filter is untouched.
func TestIssue41ForgedEmptyFilter(t *testing.T) {
	installed := makeFilter(t, 1, 1e9, 16, manyKeys("k", 5000)...)
	for _, c := range []struct {
		name  string
		l     int
		plain bool
	}{
		{"https, same parameters", 16, false},
		{"https, other parameters", 20, false},
		{"http allowed, same parameters", 16, true},
		{"http allowed, other parameters", 20, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			forged := withHeader(t, makeFilter(t, 1, 1.5e9, c.l), 99, 5000) // no bit set
			s := &server{t: t}
			s.set(forged)
			var ts *httptest.Server
			if c.plain {
				ts = httptest.NewServer(s)
			} else {
				ts = httptest.NewTLSServer(s)
			}
			defer ts.Close()
			dir := t.TempDir()
			path := filepath.Join(dir, "filter.pkbf")
			os.WriteFile(path, installed, 0o644)
			opts := fastOpts(nil)
			if c.plain {
				sum := sha256.Sum256(forged)
				opts.AllowHTTP, opts.SHA256 = true, hex.EncodeToString(sum[:])
			}
			if c.l != 16 && !c.plain { // pinned, so that the fill check is what refuses it
				sum := sha256.Sum256(forged)
				opts.SHA256 = hex.EncodeToString(sum[:])
			}
			res, err := Update(context.Background(), ts.URL+"/filter.pkbf", path, opts)
			if !errors.Is(err, ErrImplausibleFill) || res.Updated {
				t.Fatalf("the forged filter: %+v, %v; want ErrImplausibleFill", res, err)
			}
			if want := "has 0 of"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "5000 entries") {
				t.Errorf("error %q does not say what is wrong", err)
			}
			if !bytes.Equal(testkit.ReadFile(t, path), installed) {
				t.Fatal("the installed filter changed")
			}
			checkFiles(t, dir, false)
			// Force does not install it either.
			opts.Force = true
			if _, err := Update(context.Background(), ts.URL+"/filter.pkbf", path, opts); !errors.Is(err, ErrImplausibleFill) {
				t.Errorf("with Force: %v, want ErrImplausibleFill", err)
			}
			if !bytes.Equal(testkit.ReadFile(t, path), installed) {
				t.Fatal("the installed filter changed under Force")
			}
		})
	}
	// Plain http without AllowHTTP: refused before any request.
	s, ts := newServer(t, installed)
	plain := httptest.NewServer(s)
	defer plain.Close()
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	before := s.hits.Load()
	if _, err := Update(context.Background(), plain.URL, path, fastOpts(nil)); !errors.Is(err, ErrPlainHTTP) || !strings.Contains(err.Error(), "is plain http") {
		t.Errorf("plain http: %v, want ErrPlainHTTP", err)
	}
	if s.hits.Load() != before {
		t.Error("a request was made over plain http")
	}
	_ = ts
}

// dropped counts the bits set in f and not in g.
func dropped(t *testing.T, f, g *pkbf.Filter) uint64 {
	t.Helper()
	var bf, bg bytes.Buffer
	f.WriteTo(&bf)
	g.WriteTo(&bg)
	_, n := countBits(bg.Bytes()[pkbf.HeaderSize:], bf.Bytes()[pkbf.HeaderSize:])
	if n == 0 {
		t.Fatal("the test needs a filter that drops bits")
	}
	return n
}

// randomFilter adds n random keys to a new filter, as pkbf add does.
func randomFilter(t testing.TB, rng *rand.Rand, k, l, n int) *pkbf.Filter {
	t.Helper()
	f, err := pkbf.New(k, l)
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 16)
	for range n {
		binary.LittleEndian.PutUint64(key, rng.Uint64())
		binary.LittleEndian.PutUint64(key[8:], rng.Uint64())
		if _, err := f.Add(key); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	f.WriteTo(&b)
	g, err := pkbf.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Genuine filters are within the fill bounds: filters of every shape made
// by Add (tiny ones with no key or one, full and overfull ones, k = 1 where
// a count is exactly the bits set), and the publisher's example filters.
func TestFillBoundsGenuine(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 11))
	for _, k := range []int{1, 2, 3, 7, 12, 30} {
		for _, l := range []int{3, 4, 6, 10, 16, 20} {
			m := 1 << l
			for _, n := range []int{0, 1, 2, 5, m / k / 4, m / k, 3 * m / k, 3 * m} {
				if n > 1<<18 || raceEnabled && n > 1<<14 {
					continue
				}
				f := randomFilter(t, rng, k, l, n)
				h := f.Header()
				set := bitsSet(t, f)
				if lo, hi := fillBounds(h); set < lo || set > hi {
					t.Errorf("k=%d L=%d: %d keys tried, %d counted, %d bits set, outside %d to %d", k, l, n, h.EntryCount, set, lo, hi)
				}
			}
		}
	}
	dir := "../../shared/vectors/pwnedkeys"
	names, _ := filepath.Glob(filepath.Join(dir, "*.pkbf"))
	if len(names) == 0 {
		t.Skip("no ../shared/vectors/pwnedkeys here: the publisher's example filters were not checked")
	}
	for _, name := range names {
		f, err := pkbf.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		h := f.Header()
		set := bitsSet(t, f)
		if lo, hi := fillBounds(h); set < lo || set > hi {
			t.Errorf("%s: %d bits set, outside %d to %d", name, set, lo, hi)
		}
		f.Close()
	}
}

// Both sides of the bounds: the fewest and most bits a header allows are
// accepted, one fewer and one more refused; and headers that lie grossly
// are refused.
func TestFillBoundsEdges(t *testing.T) {
	up := &updater{url: mustURL("https://example.com/f"), path: "filter.pkbf"}
	for _, h := range []pkbf.Header{
		{EntryCount: 0, HashCount: 3, HashLength: 10},
		{EntryCount: 1, HashCount: 3, HashLength: 10},
		{EntryCount: 3, HashCount: 2, HashLength: 4},
		{EntryCount: 5000, HashCount: 7, HashLength: 16},
		{EntryCount: 100000, HashCount: 12, HashLength: 20},
		{EntryCount: 1 << 20, HashCount: 20, HashLength: 31},
		{EntryCount: 1 << 31, HashCount: 20, HashLength: 40},
	} {
		lo, hi := fillBounds(h)
		if lo > hi || hi > h.Bits() {
			t.Errorf("%+v: bounds %d to %d", h, lo, hi)
			continue
		}
		if err := up.checkFillOf(h, lo, ""); err != nil {
			t.Errorf("%+v: the fewest, %d, refused: %v", h, lo, err)
		}
		if err := up.checkFillOf(h, hi, ""); err != nil {
			t.Errorf("%+v: the most, %d, refused: %v", h, hi, err)
		}
		if lo > 0 {
			if err := up.checkFillOf(h, lo-1, ""); !errors.Is(err, ErrImplausibleFill) {
				t.Errorf("%+v: one fewer than %d accepted: %v", h, lo, err)
			}
		}
		if err := up.checkFillOf(h, hi+1, ""); !errors.Is(err, ErrImplausibleFill) {
			t.Errorf("%+v: one more than %d accepted: %v", h, hi, err)
		}
		t.Logf("k=%d L=%d n=%d: %d to %d bits", h.HashCount, h.HashLength, h.EntryCount, lo, hi)
	}
	for _, c := range []struct {
		name string
		h    pkbf.Header
		set  uint64
	}{
		{"empty, claims 5000", pkbf.Header{EntryCount: 5000, HashCount: 7, HashLength: 16}, 0},
		{"half cleared", pkbf.Header{EntryCount: 5000, HashCount: 7, HashLength: 16}, 15000},
		{"full, claims 3", pkbf.Header{EntryCount: 3, HashCount: 2, HashLength: 6}, 64},
		{"no entries, one bit", pkbf.Header{EntryCount: 0, HashCount: 3, HashLength: 10}, 1},
		{"one entry, k+1 bits", pkbf.Header{EntryCount: 1, HashCount: 3, HashLength: 10}, 4},
		{"count inflated tenfold", pkbf.Header{EntryCount: 50000, HashCount: 7, HashLength: 20}, 34900},
	} {
		if err := up.checkFillOf(c.h, c.set, ""); !errors.Is(err, ErrImplausibleFill) || !strings.Contains(err.Error(), "its header does not describe its data") {
			t.Errorf("%s: %v, want ErrImplausibleFill", c.name, err)
		}
	}
}

// doubled returns the filter body's data written twice under a header of
// one more hash length, revision 2 and the entry count given, with one of
// key's probes at the new length cleared, so that key says no.
func doubled(t *testing.T, body []byte, entries uint32, key string) []byte {
	t.Helper()
	h, err := pkbf.ParseHeader(body)
	if err != nil {
		t.Fatal(err)
	}
	h.HashLength++
	h.Revision, h.EntryCount, h.Updated = 2, entries, time.Unix(1.5e9, 0).UTC()
	out, _ := h.AppendBinary(nil)
	out = append(append(out, body[pkbf.HeaderSize:]...), body[pkbf.HeaderSize:]...)
	for i := pkbf.HeaderSize * 8; i < len(out)*8; i++ {
		if out[i/8]&(0x80>>(i%8)) == 0 {
			continue
		}
		out[i/8] &^= 0x80 >> (i % 8)
		if f, err := pkbf.Parse(out); err == nil && !f.Probably([]byte(key)) {
			return out
		}
		out[i/8] |= 0x80 >> (i % 8)
	}
	t.Fatalf("no bit of %s to clear", key)
	return nil
}

// bitsSet counts the bits set in f's data.
func bitsSet(t *testing.T, f *pkbf.Filter) uint64 {
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	set, _ := countBits(b.Bytes()[pkbf.HeaderSize:], nil)
	return set
}
