package update

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

// A genuine newer filter, with more keys, installs as before; one with the
// installed filter's parameters that lacks some of its bits is refused
// (the error counts them) unless forced.
func TestDroppedBitsRefused(t *testing.T) {
	installed := makeFilter(t, 1, 1e9, 16, "a", "b", "c")
	fewer := makeFilter(t, 2, 1e9+1, 16, "a", "b")
	more := makeFilter(t, 3, 1e9+2, 16, "a", "b", "c", "d")
	fewer = withHeader(t, fewer, 2, 3) // the installed count: no ErrWeaker
	s, ts := newServer(t, fewer)
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.pkbf")
	os.WriteFile(path, installed, 0o644)
	_, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
	f, _ := pkbf.Parse(installed)
	g, _ := pkbf.Parse(fewer)
	want := dropped(t, f, g)
	if !errors.Is(err, ErrDropsBits) || !strings.Contains(err.Error(), fmt.Sprintf("lacks %d of the bits set", want)) || !strings.Contains(err.Error(), "accept-rebuild installs it") {
		t.Fatalf("a filter without key c: %v, want ErrDropsBits counting %d bits", err, want)
	}
	if !bytes.Equal(testkit.ReadFile(t, path), installed) {
		t.Fatal("the installed filter changed")
	}
	checkFiles(t, dir, false)
	s.set(more)
	if res, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err != nil || !res.Updated || !bytes.Equal(testkit.ReadFile(t, path), more) {
		t.Fatalf("a genuine newer filter: %+v, %v", res, err)
	}
	s.set(withHeader(t, fewer, 4, 2))
	opts := fastOpts(nil)
	opts.Force = true
	if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated {
		t.Fatalf("with Force: %+v, %v", res, err)
	}
	// Other parameters cannot be compared bit by bit: a genuine filter
	// with other parameters installs pinned.
	other := makeFilter(t, 5, 1e9+3, 18, "a", "b")
	s.set(other)
	sum := sha256.Sum256(other)
	opts = fastOpts(nil)
	opts.SHA256 = hex.EncodeToString(sum[:])
	if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated {
		t.Fatalf("other parameters: %+v, %v", res, err)
	}
}

// Red-team finding 1: a filter with fewer hashes, a shorter hash length
// or fewer entries than the installed one skipped the bit comparison, so
// a server could install one in which chosen keys (or all) say no. No pin
// vouching for it, such a filter is refused (AcceptRebuild installs it);
// one with fewer entries is judged by its bits (red team 2, C),
// and so is one with more hashes or a longer length, whose bits the
// installed ones cannot all check; the fill check refuses a doubled one
// whatever AcceptRebuild says.
func TestWeakerOrThinnedFilterRefused(t *testing.T) {
	keys := manyKeys("k", 3000) // dense enough for the fill checks to see a doubling
	n := uint32(len(keys))
	installed := makeFilterK(t, 3, 1, 1e9, 16, keys...)
	withoutK1 := append(append([]string{}, keys[:1]...), keys[2:]...)
	more := append(append([]string{}, keys...), manyKeys("new", 10)...)
	for _, c := range []struct {
		name     string
		body     []byte
		want     error // nil: installs
		accepted error // with AcceptRebuild; nil: installs
	}{
		{"empty, k 3->4, no entries", makeFilterK(t, 4, 2, 1.5e9, 16), ErrUnverifiable, nil},
		{"empty, hash length 16->3", makeFilterK(t, 1, 2, 1.5e9, 3), ErrWeaker, nil},
		{"k 3->2, without k1, count kept", withHeader(t, makeFilterK(t, 2, 2, 1.5e9, 16, withoutK1...), 2, n), ErrWeaker, nil},
		{"k 3->1, same keys", makeFilterK(t, 1, 2, 1.5e9, 16, keys...), ErrWeaker, ErrSaturated}, // 4.5% false "probably"
		{"same parameters, fewer entries", makeFilterK(t, 3, 2, 1.5e9, 16, keys[:len(keys)-10]...), ErrDropsBits, nil},
		{"hash length 16->17, without k1, count kept", withHeader(t, makeFilterK(t, 3, 2, 1.5e9, 17, withoutK1...), 2, n), ErrUnverifiable, nil},
		{"k 3->5, without k1, count kept", withHeader(t, makeFilterK(t, 5, 2, 1.5e9, 16, withoutK1...), 2, n), ErrUnverifiable, nil},
		// The red team's "double": the installed data written twice at
		// L+1, one of k1's probes there cleared; its other copy still
		// covers the fold.
		{"hash length 16->17, data twice, k1 cleared, count doubled", doubled(t, installed, 2*n, "k1"), ErrUnverifiable, ErrImplausibleFill},
		{"hash length 16->17, data twice, k1 cleared, count kept", doubled(t, installed, n, "k1"), ErrUnverifiable, ErrImplausibleFill},
		{"genuine: hash length 16->17, more keys", makeFilterK(t, 3, 2, 1.5e9, 17, more...), ErrUnverifiable, nil},
		{"genuine: same parameters, more keys", makeFilterK(t, 3, 2, 1.5e9, 16, more...), nil, nil},
		{"the same bits, a lower count", withHeader(t, makeFilterK(t, 3, 2, 1.5e9, 16, keys...), 2, n-5), nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, path, res, err := updateOver(t, installed, c.body)
			dir := filepath.Dir(path)
			if c.want == nil {
				if err != nil || !res.Updated || !bytes.Equal(testkit.ReadFile(t, path), c.body) {
					t.Fatalf("a genuine newer filter: %+v, %v", res, err)
				}
				return
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "accept-rebuild installs it") {
				t.Fatalf("%v, want %v", err, c.want)
			}
			if !bytes.Equal(testkit.ReadFile(t, path), installed) {
				t.Fatal("the installed filter changed")
			}
			checkFiles(t, dir, false)
			opts := fastOpts(nil)
			opts.AcceptRebuild = true
			res, err = Update(context.Background(), url, path, opts)
			switch {
			case c.accepted == nil && (err != nil || !res.Updated):
				t.Fatalf("with AcceptRebuild: %+v, %v", res, err)
			case c.accepted != nil && !errors.Is(err, c.accepted):
				t.Fatalf("with AcceptRebuild: %v, want %v", err, c.accepted)
			}
		})
	}
}

// Keys added to the installed filter in place (pkbf add) are no pin's to
// leave out: the superset rule holds for a pinned filter then, compared
// in place or, for a longer hash length, folded onto the installed one.
// A pinned filter without the key added is refused (AcceptRebuild installs
// it), one with it installs, and a doubled one fails the folded fill
// check.
func TestKeysAddedInPlaceKeptFromPinnedFilters(t *testing.T) {
	keys := manyKeys("k", 3000)
	local := append(append([]string{}, keys...), "local")
	more := append(append([]string{}, local...), manyKeys("new", 10)...)
	soon := time.Now().Add(time.Minute).Unix() // after the key added in place
	for _, c := range []struct {
		name string
		body []byte
		want error // nil: installs
	}{
		{"same parameters, without the local key", makeFilterK(t, 3, 2, soon, 16, append(keys, manyKeys("new", 5)...)...), ErrDropsBits},
		{"hash length 16->17, without the local key", makeFilterK(t, 3, 2, soon, 17, append(keys, manyKeys("new", 5)...)...), ErrDropsBits},
		{"k 3->4, without the local key", makeFilterK(t, 4, 2, soon, 16, append(keys, manyKeys("new", 5)...)...), ErrDropsBits},
		{"hash length 16->17, with it", makeFilterK(t, 3, 2, soon, 17, more...), nil},
		{"same parameters, with it", makeFilterK(t, 3, 2, soon, 16, more...), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, ts := newServer(t, makeFilterK(t, 3, 1, ago(3*time.Hour), 16, keys...))
			path := filepath.Join(t.TempDir(), "filter.pkbf")
			if res, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err != nil || !res.Updated {
				t.Fatalf("the first install: %+v, %v", res, err)
			}
			w, err := pkbf.Edit(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Add([]byte("local")); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			edited := testkit.ReadFile(t, path)
			s.set(c.body)
			sum := sha256.Sum256(c.body)
			opts := fastOpts(nil)
			opts.SHA256 = hex.EncodeToString(sum[:])
			res, err := Update(context.Background(), ts.URL, path, opts)
			if c.want == nil {
				if err != nil || !res.Updated {
					t.Fatalf("%+v, %v", res, err)
				}
				return
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "keys were added to it in place") {
				t.Fatalf("%v, want %v saying keys were added in place", err, c.want)
			}
			if !bytes.Equal(testkit.ReadFile(t, path), edited) {
				t.Fatal("the installed filter changed")
			}
			opts.AcceptRebuild = true
			if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated {
				t.Fatalf("with AcceptRebuild: %+v, %v", res, err)
			}
		})
	}
}

// A filter with more hashes or a longer hash length than the installed
// one, even a genuine one, is not installed unpinned: the installed bits
// vouch only for part of each key's new probes, and a server that knows
// the keys can leave one of a key's later probes clear and pass every
// other check (red-team finding 1, on review). Pinned or forced, it
// installs.
func TestLargerParametersNeedPin(t *testing.T) {
	keys := manyKeys("k", 3000)
	installed := makeFilterK(t, 3, 1, 1e9, 16, keys...)
	more := append(append([]string{}, keys...), manyKeys("new", 10)...)
	for _, body := range [][]byte{makeFilterK(t, 3, 2, 1.5e9, 17, more...), makeFilterK(t, 4, 2, 1.5e9, 16, more...)} {
		_, path, res, err := updateOver(t, installed, body)
		if !errors.Is(err, ErrUnverifiable) || res.Updated || !strings.Contains(err.Error(), "pin it") {
			t.Fatalf("unpinned: %+v, %v; want ErrUnverifiable", res, err)
		}
		if !bytes.Equal(testkit.ReadFile(t, path), installed) {
			t.Fatal("the installed filter changed")
		}
		if _, path, res, err = updateOverWith(t, installed, body, true); err != nil || !res.Updated || !bytes.Equal(testkit.ReadFile(t, path), body) {
			t.Fatalf("pinned: %+v, %v", res, err)
		}
	}
}

// The publisher's example filters install, and then the same filters
// with more keys added by pkbf's writer (pkbf add) install over them
// without flags.
func TestPublisherVectorsGrow(t *testing.T) {
	names, _ := filepath.Glob("../../shared/vectors/pwnedkeys/*.pkbf")
	if len(names) == 0 {
		t.Skip("no ../shared/vectors/pwnedkeys here")
	}
	for _, name := range names {
		t.Run(filepath.Base(name), func(t *testing.T) {
			body := testkit.ReadFile(t, name)
			s, ts := newServer(t, body)
			dir := t.TempDir()
			path := filepath.Join(dir, "filter.pkbf")
			opts := fastOpts(nil)
			opts.MaxFPRate = 0.5 // the small ones are nearly full
			if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated {
				t.Fatalf("first install: %+v, %v", res, err)
			}
			grown := filepath.Join(dir, "grown.pkbf")
			os.WriteFile(grown, body, 0o644)
			w, err := pkbf.Edit(grown)
			if err != nil {
				t.Fatal(err)
			}
			// A few keys that set new bits: the small filters are nearly full.
			for i, added := 0, 0; added < max(1, int(w.Header().Bits()/256)); i++ {
				ok, err := w.Add(fmt.Append(nil, "grown", i))
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					added++
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			s.set(testkit.ReadFile(t, grown))
			if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated {
				t.Fatalf("the filter with more keys: %+v, %v", res, err)
			}
		})
	}
}

// A publisher's rebuild without a pin (a resize, or keys dropped) is
// refused, loudly and naming the narrow way past, AcceptRebuild: it
// installs the rebuild, and keeps every other check (a flooded filter,
// an empty one claiming keys, a future time are still refused).
func TestUnpinnedRebuildNeedsAcceptRebuild(t *testing.T) {
	keys := manyKeys("k", 300)
	for _, c := range []struct {
		name string
		body []byte
		want error
	}{
		{"resized", makeFilter(t, 1, ago(time.Hour), 15, keys...), ErrUnverifiable},
		{"keys dropped", makeFilter(t, 1, ago(time.Hour), 14, keys[:200]...), ErrDropsBits},
		{"keys dropped, count kept", withHeader(t, makeFilter(t, 1, ago(time.Hour), 14, append(slices.Clone(keys[:200]), manyKeys("new", 100)...)...), 1, 300), ErrDropsBits},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFeed(t)
			f.publish(makeFilter(t, 9, ago(3*time.Hour), 14, keys...), time.Now().Add(-3*time.Hour))
			if _, err := f.update(f.opts()); err != nil {
				t.Fatal(err)
			}
			f.publish(c.body, time.Now().Add(-time.Hour))
			_, err := f.update(f.opts())
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "not installed (accept-rebuild installs it)") {
				t.Fatalf("%v, want %v naming accept-rebuild", err, c.want)
			}
			opts := f.opts()
			opts.AcceptRebuild = true
			for _, bad := range []struct {
				name string
				edit func(body []byte) []byte
				want error
			}{
				{"flooded", func(b []byte) []byte { return flood(t, b, 0.45) }, ErrSaturated},
				{"emptied", func(b []byte) []byte {
					b = bytes.Clone(b)
					clear(b[pkbf.HeaderSize:])
					return b
				}, ErrImplausibleFill},
				{"from the future", func(b []byte) []byte {
					b = bytes.Clone(b)
					binary.BigEndian.PutUint64(b[10:], uint64(time.Now().Add(2*time.Hour).Unix()))
					return b
				}, ErrLockIn},
			} {
				f.relay.Rewrite("filter.pkbf", func(h http.Header, body []byte) []byte { return bad.edit(body) })
				if _, err := f.update(opts); !errors.Is(err, bad.want) {
					t.Errorf("%s, with AcceptRebuild: %v, want %v", bad.name, err, bad.want)
				}
			}
			if res, err := f.update(opts); err != nil || !res.Updated || !bytes.Equal(testkit.ReadFile(t, f.path), c.body) {
				t.Fatalf("with AcceptRebuild: %+v, %v", res, err)
			}
		})
	}
}

// Red team 2, finding C: one unpinned interception served the publisher's
// own bits with the entry count raised as far as the fill check allows,
// and a later time; it installed, and every later genuine revision (fewer
// entries than that) was refused as weaker, blaming the server. The
// count cannot be verified, bits can: a lower count is no refusal by
// itself, and the genuine revisions install.
func TestEntryCountInflationDoesNotLockOut(t *testing.T) {
	f := newFeed(t)
	keys := manyKeys("k", 2000)
	f.publish(makeFilterK(t, 7, 1, ago(3*time.Hour), 16, keys...), time.Now().Add(-3*time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated {
		t.Fatalf("the first revision: %+v, %v", res, err)
	}
	var inflated uint32
	f.relay.Rewrite("filter.pkbf", func(_ http.Header, body []byte) []byte {
		b := bytes.Clone(body)
		h, _ := pkbf.ParseHeader(b)
		set, _ := countBits(b[pkbf.HeaderSize:], nil)
		for {
			h.EntryCount++
			if lo, _ := fillBounds(h); set < lo || h.EntryCount > 2*uint32(len(keys)) {
				h.EntryCount--
				break
			}
		}
		inflated = h.EntryCount
		h.Updated = time.Now().Truncate(time.Second)
		h.Revision++
		h.AppendBinary(b[:0])
		return b
	})
	if res, err := f.update(f.opts()); err != nil || !res.Updated {
		t.Fatalf("the inflated count: %+v, %v (installed as the fill check allows)", res, err)
	}
	if inflated <= uint32(len(keys))+10 {
		t.Fatalf("the count was raised only to %d", inflated)
	}
	for i := range 2 {
		keys = append(keys, manyKeys(fmt.Sprint("r", i), 5)...)
		f.publish(makeFilterK(t, 7, uint32(3+i), time.Now().Add(time.Duration(i+1)*time.Second).Unix(), 16, keys...), time.Now())
		res, err := f.update(f.opts())
		if err != nil || !res.Updated || f.installed().EntryCount != uint32(len(keys)) {
			t.Fatalf("genuine revision %d (%d entries, %d installed): %+v, %v", 3+i, len(keys), inflated, res, err)
		}
	}
}

// Red team 2, finding D: keys added in place were kept from a pinned
// filter only through the header the state file recorded: with the state
// file gone, or on the first pinned update over a filter the operator
// made, a signed rebuild without them installed, silently. Where Update
// cannot tell that the installed file is the one it installed, the
// superset rule holds for pinned filters too, and the refusal says why
// and names accept-rebuild.
func TestKeysAddedInPlaceKeptWithoutState(t *testing.T) {
	keys := manyKeys("k", 3000)
	soon := time.Now().Add(time.Minute).Unix() // after the key added in place
	rebuild := makeFilterK(t, 3, 1, soon, 16, append(slices.Clone(keys[1:]), manyKeys("new", 5)...)...)
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, f *feed)
	}{
		{"the state file removed", func(t *testing.T, f *feed) {
			if res, err := f.update(f.opts()); err != nil || !res.Updated {
				t.Fatalf("the first install: %+v, %v", res, err)
			}
			addInPlace(t, f.path, "local")
			if err := os.Remove(filepath.Join(filepath.Dir(f.path), ".filter.pkbf.update.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{"a filter the operator made", func(t *testing.T, f *feed) {
			os.WriteFile(f.path, makeFilterK(t, 3, 1, ago(3*time.Hour), 16, keys...), 0o644)
			addInPlace(t, f.path, "local")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFeed(t)
			s := newSigner(t, t.TempDir(), "ed25519")
			f.sig = &s
			f.publish(makeFilterK(t, 3, 1, ago(3*time.Hour), 16, keys...), time.Now().Add(-3*time.Hour))
			c.setup(t, f)
			edited := testkit.ReadFile(t, f.path)
			f.publish(rebuild, time.Now())
			_, err := f.update(f.opts())
			if !errors.Is(err, ErrDropsBits) || !strings.Contains(err.Error(), "no record of installing it") || !strings.Contains(err.Error(), "accept-rebuild installs it") {
				t.Fatalf("a signed rebuild without the key added in place: %v; want ErrDropsBits saying why, naming accept-rebuild", err)
			}
			if !bytes.Equal(testkit.ReadFile(t, f.path), edited) {
				t.Fatal("the installed filter changed")
			}
			opts := f.opts()
			opts.AcceptRebuild = true
			if res, err := f.update(opts); err != nil || !res.Updated || !bytes.Equal(testkit.ReadFile(t, f.path), rebuild) {
				t.Fatalf("with AcceptRebuild: %+v, %v", res, err)
			}
		})
	}
}

// addInPlace adds key to the filter file at path in place, as pkbf add
// does.
func addInPlace(t *testing.T, path, key string) {
	t.Helper()
	w, err := pkbf.Edit(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Add([]byte(key)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
