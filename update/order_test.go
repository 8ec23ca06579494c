package update

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

// A filter that is not newer than the installed one (an earlier update
// time, whatever its revision; or the same time and a revision no higher)
// is refused, naming both, and installs with AcceptRebuild or Force.
func TestOlderRefused(t *testing.T) {
	installed := makeFilter(t, 5, 1e9, 12, "x")
	for _, c := range []struct {
		name string
		body []byte
	}{
		{"earlier time, higher revision", makeFilter(t, 6, 1e9-1, 12, "x", "y")},
		{"same time, lower revision", makeFilter(t, 4, 1e9, 12, "x", "y")},
		{"same revision, earlier time", makeFilter(t, 5, 1e9-1, 12, "x", "y")},
	} {
		for _, lift := range []string{"AcceptRebuild", "Force"} {
			_, ts := newServer(t, c.body)
			dir := t.TempDir()
			path := filepath.Join(dir, "filter.pkbf")
			os.WriteFile(path, installed, 0o640)
			_, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
			if !errors.Is(err, ErrOlder) || !strings.Contains(err.Error(), "the installed one 2001-09-09T01:46:40Z (revision 5)") || !strings.Contains(err.Error(), "accept-rebuild installs it") {
				t.Errorf("%s: %v, want ErrOlder naming the installed filter and the way past", c.name, err)
			}
			if !bytes.Equal(testkit.ReadFile(t, path), installed) {
				t.Errorf("%s: the installed filter changed", c.name)
			}
			checkFiles(t, dir, false)
			opts := fastOpts(nil)
			opts.AcceptRebuild, opts.Force = lift == "AcceptRebuild", lift == "Force"
			if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated {
				t.Errorf("%s with %s: %+v, %v", c.name, lift, res, err)
			}
			if fi, _ := os.Stat(path); !bytes.Equal(testkit.ReadFile(t, path), c.body) || fi.Mode().Perm() != 0o640 {
				t.Errorf("%s with %s: not installed, or mode %v instead of the old file's 0640", c.name, lift, fi.Mode())
			}
		}
	}
}

// A filter with the installed one's header but other bits is refused
// unless forced: the header alone does not say two files are the same.
func TestSameHeaderOtherBits(t *testing.T) {
	installed := makeFilter(t, 4, 1e9, 12, "a")
	other := makeFilter(t, 4, 1e9, 12, "b")
	if bytes.Equal(installed, other) || !bytes.Equal(installed[:pkbf.HeaderSize], other[:pkbf.HeaderSize]) {
		t.Fatal("the test needs two filters with one header and other bits")
	}
	_, ts := newServer(t, other)
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.pkbf")
	os.WriteFile(path, installed, 0o644)
	_, err := Update(context.Background(), ts.URL, path, fastOpts(nil))
	if !errors.Is(err, ErrSameHeader) || !strings.Contains(err.Error(), "accept-rebuild installs it") {
		t.Fatalf("%v, want ErrSameHeader", err)
	}
	if !bytes.Equal(testkit.ReadFile(t, path), installed) {
		t.Fatal("replaced without Force")
	}
	checkFiles(t, dir, false)
	opts := fastOpts(nil)
	opts.Force = true
	if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated || !bytes.Equal(testkit.ReadFile(t, path), other) {
		t.Fatalf("with Force: %+v, %v", res, err)
	}
}

// Red-team finding 6: a filter with revision 4294967295 or an update time
// of 2^64-1 seconds installed, and every later genuine revision was then
// refused as older until forced. An update time more than MaxClockSkew
// ahead is refused now unless forced (both sides of the limit are
// checked); a revision orders nothing past a later time, so any revision
// installs, and the next filter, made later, installs after it. A filter
// forced in with a time in the future orders nothing either.
func TestLockInRefused(t *testing.T) {
	installed := makeFilter(t, 5, 1e9, 12, "a")
	future := func(d time.Duration) int64 { return time.Now().Add(d).Unix() }
	farFuture := makeFilter(t, 6, 1e9, 12, "a", "b")
	binary.BigEndian.PutUint64(farFuture[10:], 1<<64-1)
	for _, c := range []struct {
		name string
		body []byte
		want string // "" when it installs
	}{
		{"update time 2^64-1", farFuture, "more than 1h0m0s after this machine's clock"},
		{"update time two days ahead", makeFilter(t, 6, future(48*time.Hour), 12, "a", "b"), "more than 1h0m0s after"},
		{"update time 61 minutes ahead", makeFilter(t, 6, future(61*time.Minute), 12, "a", "b"), "more than 1h0m0s after"},
		{"update time 59 minutes ahead", makeFilter(t, 6, future(59*time.Minute), 12, "a", "b"), ""},
		{"revision 4294967295", makeFilter(t, 4294967295, 1.5e9, 12, "a", "b"), ""},
		{"revision jump of 2^16+1", makeFilter(t, 5+1<<16+1, 1.5e9, 12, "a", "b"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, path, res, err := updateOver(t, installed, c.body)
			dir := filepath.Dir(path)
			next := makeFilter(t, 1, future(0), 12, "a", "b", "c")
			if c.want == "" {
				if err != nil || !res.Updated {
					t.Fatalf("%+v, %v", res, err)
				}
				if h, _ := pkbf.ParseHeader(c.body); h.Updated.Unix() > time.Now().Unix() {
					return // the next filter is older than this one
				}
				_, ts := newServer(t, next)
				if res, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err != nil || !res.Updated {
					t.Fatalf("the next filter, made later at revision 1: %+v, %v", res, err)
				}
				return
			}
			if !errors.Is(err, ErrLockIn) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "force installs it") {
				t.Fatalf("%v, want ErrLockIn and %q", err, c.want)
			}
			if !bytes.Equal(testkit.ReadFile(t, path), installed) {
				t.Fatal("the installed filter changed")
			}
			checkFiles(t, dir, false)
			opts := fastOpts(nil)
			opts.Force = true
			if res, err := Update(context.Background(), url, path, opts); err != nil || !res.Updated {
				t.Fatalf("with Force: %+v, %v", res, err)
			}
			_, ts := newServer(t, next)
			if res, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err != nil || !res.Updated {
				t.Fatalf("the next filter, after one forced in from the future: %+v, %v", res, err)
			}
		})
	}
}

// Red-team finding 9, the part that is cheap to close: a server that
// keeps serving an old filter (signed or not) went unnoticed. MaxAge
// refuses a filter updated longer ago, whether it is new, the same bytes
// as the installed one, or the installed one the server answers 304 for.
func TestMaxAge(t *testing.T) {
	old := makeFilter(t, 1, 1e9, 12, "a")
	s, ts := newServer(t, old)
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.pkbf")
	opts := fastOpts(nil)
	opts.MaxAge = 24 * time.Hour
	_, err := Update(context.Background(), ts.URL, path, opts)
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "the filter was updated 2001-09-09T01:46:40Z (revision 1)") || !strings.Contains(err.Error(), "more than the maximum age of 24h0m0s") {
		t.Fatalf("%v, want ErrStale", err)
	}
	checkFiles(t, dir, false)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the stale filter was installed")
	}
	if res, err := Update(context.Background(), ts.URL, path, fastOpts(nil)); err != nil || !res.Updated {
		t.Fatalf("without MaxAge: %+v, %v", res, err)
	}
	confirm(t, ts.URL, path)
	if _, err := Update(context.Background(), ts.URL, path, opts); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "the installed filter, which the server says is current, was updated") {
		t.Fatalf("a 304 for a stale installed filter: %v, want ErrStale", err)
	}
	fresh := makeFilter(t, 2, time.Now().Add(-time.Hour).Unix(), 12, "a", "b")
	s.set(fresh)
	if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated {
		t.Fatalf("a fresh filter: %+v, %v", res, err)
	}
}

// Update times past 2^63 seconds are after the others, as the file's
// unsigned field has them (time.Time's Before would put them before 1970),
// and, being in the future, order nothing: an installed filter with one
// does not keep a filter of today out.
func TestTimesPastSigned(t *testing.T) {
	installed := makeFilter(t, 2, 1e9, 12, "x")
	binary.BigEndian.PutUint64(installed[10:], 1<<63+5)
	h, _ := pkbf.ParseHeader(installed)
	if !inFuture(h) || !newer(h, pkbf.Header{Updated: time.Now()}) {
		t.Fatal("2^63+5 seconds is not after now")
	}
	_, ts := newServer(t, makeFilter(t, 2, ago(time.Hour), 12, "x", "y"))
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	os.WriteFile(path, installed, 0o644)
	opts := fastOpts(nil)
	var logged []string
	opts.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	if res, err := Update(context.Background(), ts.URL, path, opts); err != nil || !res.Updated {
		t.Fatalf("%+v, %v", res, err)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "9223372036854775813 seconds after 1970") {
		t.Errorf("logged %q, want the installed time in seconds", logged)
	}
}

// Issue 48, item 4: genuine bytes relayed with their revision raised by
// 65,536 installed, and the genuine next revision was refused as older,
// for 65,536 publications. Filters are ordered by their update time
// first now: the next revision, made later, installs.
func TestRevisionJumpDoesNotLockOut(t *testing.T) {
	f := newFeed(t)
	keys := manyKeys("k", 50)
	f.publish(makeFilter(t, 5, ago(3*time.Hour), 14, keys...), time.Now().Add(-3*time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated {
		t.Fatalf("the first revision: %+v, %v", res, err)
	}
	keys = append(keys, "six")
	f.publish(makeFilter(t, 6, ago(2*time.Hour), 14, keys...), time.Now().Add(-2*time.Hour))
	f.relay.Rewrite("filter.pkbf", func(h http.Header, body []byte) []byte {
		b := bytes.Clone(body)
		binary.BigEndian.PutUint32(b[6:], 5+1<<16) // the most the installed revision 5 allowed
		return b
	})
	f.update(f.opts()) // installed or refused: either way, no lasting harm
	keys = append(keys, "seven")
	f.publish(makeFilter(t, 7, ago(time.Hour), 14, keys...), time.Now().Add(-time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated || f.installed().Revision != 7 {
		t.Fatalf("the genuine next revision: %+v, %v; want it installed", res, err)
	}
}

// Issue 48, item 5: a publisher following the reference gem starts again
// at revision 1 when it re-creates its filter (to grow it, or to drop
// keys). Its signed rebuilds were refused as older (1 < 9) for ever. A
// signed rebuild made later installs now, at another hash length or at
// the same one with bits removed, and a replay of an older signed filter
// is still refused.
func TestSignedRebuildInstalls(t *testing.T) {
	f := newFeed(t)
	s := newSigner(t, t.TempDir(), "ed25519")
	f.sig = &s
	keys := manyKeys("k", 300)
	v9 := makeFilter(t, 9, ago(4*time.Hour), 14, keys...)
	f.publish(v9, time.Now().Add(-4*time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated {
		t.Fatalf("revision 9: %+v, %v", res, err)
	}
	// Re-created at L+1, revision 1.
	f.publish(makeFilter(t, 1, ago(3*time.Hour), 15, keys...), time.Now().Add(-3*time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated || f.installed().HashLength != 15 {
		t.Fatalf("a signed rebuild at hash length 15: %+v, %v; want it installed", res, err)
	}
	// Re-created at the same length without some keys.
	f.publish(makeFilter(t, 1, ago(2*time.Hour), 15, keys[:200]...), time.Now().Add(-2*time.Hour))
	if res, err := f.update(f.opts()); err != nil || !res.Updated || f.installed().EntryCount != 200 {
		t.Fatalf("a signed rebuild without 100 keys: %+v, %v; want it installed", res, err)
	}
	// The old revision 9, replayed with its signature: older.
	f.publish(v9, time.Now())
	if _, err := f.update(f.opts()); !errors.Is(err, ErrOlder) {
		t.Fatalf("a replayed signed revision 9: %v, want ErrOlder", err)
	}
}

// The most an interception can do to the order without a pin: a time up
// to MaxClockSkew ahead installs, and keeps out the publisher's filters
// made before it, loudly (refused, naming accept-rebuild, which installs
// the publisher's); the publisher's next filter made after it installs
// by itself.
func TestFutureTimeWithinSkewBounded(t *testing.T) {
	f := newFeed(t)
	keys := manyKeys("k", 50)
	f.publish(makeFilter(t, 1, ago(3*time.Hour), 14, keys...), time.Now().Add(-3*time.Hour))
	if _, err := f.update(f.opts()); err != nil {
		t.Fatal(err)
	}
	keys = append(keys, "two")
	f.publish(makeFilter(t, 2, ago(2*time.Hour), 14, keys...), time.Now().Add(-2*time.Hour))
	f.relay.Rewrite("filter.pkbf", func(h http.Header, body []byte) []byte {
		b := bytes.Clone(body)
		binary.BigEndian.PutUint64(b[10:], uint64(time.Now().Add(50*time.Minute).Unix()))
		return b
	})
	if res, err := f.update(f.opts()); err != nil || !res.Updated {
		t.Fatalf("a time 50 minutes ahead: %+v, %v", res, err)
	}
	keys = append(keys, "three")
	f.publish(makeFilter(t, 3, ago(time.Minute), 14, keys...), time.Now().Add(-time.Minute))
	if _, err := f.update(f.opts()); !errors.Is(err, ErrOlder) || !strings.Contains(err.Error(), "accept-rebuild installs it") {
		t.Fatalf("the publisher's filter made before it: %v, want ErrOlder naming accept-rebuild", err)
	}
	keys = append(keys, "four")
	f.publish(makeFilter(t, 4, time.Now().Add(55*time.Minute).Unix(), 14, keys...), time.Now())
	if res, err := f.update(f.opts()); err != nil || !res.Updated || f.installed().Revision != 4 {
		t.Fatalf("the publisher's filter made after it: %+v, %v", res, err)
	}
}
