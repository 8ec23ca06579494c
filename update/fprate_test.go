package update

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
)

// Red-team finding 7: an all-ones filter with the installed parameters
// and an entry count of 2^32-1 passed every check, and every gate then
// refused every key. A filter that answers yes for more than half the
// keys it does not hold is refused now unless forced; both sides of the
// bound are checked.
func TestSaturatedRefused(t *testing.T) {
	installed := makeFilter(t, 1, 1e9, 12, "a")
	full := withHeader(t, makeFilter(t, 2, 1.5e9, 12, "a"), 2, math.MaxUint32)
	for i := pkbf.HeaderSize; i < len(full); i++ {
		full[i] = 0xff
	}
	for _, have := range []bool{true, false} {
		_, ts := newServer(t, full)
		dir := t.TempDir()
		path := filepath.Join(dir, "filter.pkbf")
		if have {
			os.WriteFile(path, installed, 0o644)
		}
		_, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
		if !errors.Is(err, ErrSaturated) || !strings.Contains(err.Error(), "answers \"probably\" for 100% of the keys it does not hold") {
			t.Fatalf("installed %v: %v, want ErrSaturated", have, err)
		}
		checkFiles(t, dir, false)
		opts := fastOpts(nil)
		opts.Force = true
		if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated {
			t.Fatalf("with Force: %+v, %v", res, err)
		}
	}
	up := &updater{url: mustURL("https://example.com/f"), path: "filter.pkbf"}
	for _, c := range []struct {
		k    uint8
		set  uint64
		want bool // refused
	}{{1, 2048, false}, {1, 2049, true}, {2, 2896, false}, {2, 2897, true}, {3, 0, false}, {3, 4096, true}} {
		h := pkbf.Header{HashCount: c.k, HashLength: 12}
		if err := up.checkSaturated(h, c.set); (err != nil) != c.want {
			t.Errorf("k=%d, %d of 4096 bits set: %v, want refused %v", c.k, c.set, err, c.want)
		}
	}
}

// flood returns body with random bits set until its false-positive rate
// from its fill is at least rate, its entry count raised to match and its
// revision raised by one: genuine bits and more.
func flood(t *testing.T, body []byte, rate float64) []byte {
	t.Helper()
	b := bytes.Clone(body)
	h, err := pkbf.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	data := b[pkbf.HeaderSize:]
	rng := rand.New(rand.NewPCG(48, 3))
	m := h.Bits()
	set, _ := countBits(data, nil)
	for math.Pow(float64(set)/float64(m), float64(h.HashCount)) < rate {
		p := rng.Uint64N(m)
		if data[p/8]&(0x80>>(p%8)) == 0 {
			data[p/8] |= 0x80 >> (p % 8)
			set++
		}
	}
	// The count a genuine filter of this fill has: (m/k)·Σ x^j/j.
	x, k := float64(set)/float64(m), int(h.HashCount)
	sum, pow := 0.0, 1.0
	for j := 1; j <= k; j++ {
		pow *= x
		sum += pow / float64(j)
	}
	h.EntryCount = uint32(float64(m) / float64(k) * sum)
	h.Revision++
	h.AppendBinary(b[:0])
	if lo, hi := fillBounds(h); set < lo || set > hi {
		t.Fatalf("the flood's count %d does not fit its %d bits set (%d to %d)", h.EntryCount, set, lo, hi)
	}
	return b
}

// freshYes counts how many of n fresh random keys the filter at path
// answers "probably" for.
func freshYes(t *testing.T, path string, n int) int {
	t.Helper()
	f, err := pkbf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	yes := 0
	for i := range n {
		if f.Probably(fmt.Appendf(nil, "fresh key %d %d", i, time.Now().UnixNano())) {
			yes++
		}
	}
	return yes
}

// Issue 48, item 3: one interception flooded the filter: the genuine next
// revision with random bits set up to a false-positive rate of 0.45, its
// count raised to match, passed every check and installed, and 5 of 7
// fresh keys were "probably" after. It is refused now, and the genuine
// next revision installs.
func TestFloodRefused(t *testing.T) {
	f := newFeed(t)
	keys := manyKeys("k", 2000)
	f.publish(makeFilterK(t, 7, 1, ago(3*time.Hour), 16, keys...), time.Now().Add(-3*time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated {
		t.Fatalf("the first revision: %+v, %v", res, err)
	}
	keys = append(keys, manyKeys("two", 100)...)
	f.publish(makeFilterK(t, 7, 2, ago(2*time.Hour), 16, keys...), time.Now().Add(-2*time.Hour))
	f.relay.Rewrite("filter.pkbf", func(h http.Header, body []byte) []byte { return flood(t, body, 0.45) })
	_, err := f.update(f.opts())
	if !errors.Is(err, ErrSaturated) || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("the flooded filter: %v; want it refused", err)
	}
	if f.relay.Rewritten() != 1 {
		t.Fatal("the relay did not flood the filter")
	}
	if yes := freshYes(t, f.path, 1000); yes > 10 {
		t.Errorf("%d of 1000 fresh keys are \"probably\"", yes)
	}
	keys = append(keys, manyKeys("three", 100)...)
	f.publish(makeFilterK(t, 7, 3, ago(time.Hour), 16, keys...), time.Now().Add(-time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated || f.installed().Revision != 3 {
		t.Fatalf("the genuine next revision: %+v, %v", res, err)
	}
}

// Issue 48, item 3, the lock: a flood within the ceiling (one
// interception may add bits up to MaxFPRate) installs, and every later
// genuine filter lacks its bits. The refusal is loud and names
// AcceptRebuild, which installs the genuine filter and leaves the
// injected bits behind.
func TestInjectedBitsRecovery(t *testing.T) {
	f := newFeed(t)
	keys := manyKeys("k", 2000)
	f.publish(makeFilterK(t, 7, 1, ago(3*time.Hour), 16, keys...), time.Now().Add(-3*time.Hour))
	if _, err := f.update(f.opts()); err != nil {
		t.Fatal(err)
	}
	keys = append(keys, manyKeys("two", 100)...)
	genuine := makeFilterK(t, 7, 2, ago(2*time.Hour), 16, keys...)
	f.publish(genuine, time.Now().Add(-2*time.Hour))
	f.relay.Rewrite("filter.pkbf", func(h http.Header, body []byte) []byte { return flood(t, body, 0.009) })
	if res, err := f.update(f.opts()); err != nil || !res.Updated {
		t.Fatalf("a flood within the ceiling: %+v, %v", res, err)
	}
	keys = append(keys, manyKeys("three", 100)...)
	f.publish(makeFilterK(t, 7, 3, ago(time.Hour), 16, keys...), time.Now().Add(-time.Hour))
	_, err := f.update(f.opts())
	if !errors.Is(err, ErrDropsBits) && !errors.Is(err, ErrWeaker) || !strings.Contains(err.Error(), "accept-rebuild installs it") {
		t.Fatalf("the genuine revision after the flood: %v, want it refused, naming accept-rebuild", err)
	}
	opts := f.opts()
	opts.AcceptRebuild = true
	if res, err := f.update(opts); err != nil || !res.Updated || f.installed().Revision != 3 {
		t.Fatalf("with AcceptRebuild: %+v, %v", res, err)
	}
	if yes := freshYes(t, f.path, 1000); yes > 2 {
		t.Errorf("%d of 1000 fresh keys are \"probably\" after the recovery", yes)
	}
}

// The false-positive ceiling without a pin: both sides of MaxFPRate, and
// of twice the installed filter's rate (counted from its bits).
func TestFPRateCeiling(t *testing.T) {
	h := pkbf.Header{HashCount: 1, HashLength: 12} // the rate is the fill: set/4096
	for _, c := range []struct {
		set, oldSet uint64 // oldSet 0: nothing installed
		want        bool   // refused
	}{
		{40, 0, false},  // 0.0098
		{41, 0, true},   // 0.0100098
		{82, 41, false}, // twice the installed
		{83, 41, true},
		{40, 1, false}, // MaxFPRate is the floor
		{41, 1, true},
	} {
		up := &updater{url: mustURL("https://example.com/f"), path: "filter.pkbf", opts: Options{MaxFPRate: 0.01}}
		if c.oldSet > 0 {
			old := h
			b, _ := old.AppendBinary(nil)
			data := make([]byte, old.Bits()/8)
			for i := range c.oldSet {
				data[i/8] |= 0x80 >> (i % 8)
			}
			path := filepath.Join(t.TempDir(), "installed.pkbf")
			os.WriteFile(path, append(b, data...), 0o644)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			up.old, up.installed = &old, f
		}
		err := up.checkFPRate(h, c.set)
		if (err != nil) != c.want || c.want && !errors.Is(err, ErrSaturated) {
			t.Errorf("%d bits set over %d installed: %v, want refused %v", c.set, c.oldSet, err, c.want)
		}
	}
}
