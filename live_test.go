package pkbf

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// writeVersion writes, by renaming a temporary file over path as an
// operator's cp and mv do (without WriteFile's syncs, which would make
// the test wait on the disk), a filter holding the common key and the
// marker of version v; its entry count is v+2, so a query can tell which
// version answered.
func writeVersion(t testing.TB, path string, v int) {
	f, _ := New(4, 14)
	f.Add([]byte("common key"))
	f.Add([]byte(fmt.Sprintf("marker %d", v)))
	for i := range v {
		f.Add([]byte(fmt.Sprintf("filler %d", i)))
	}
	var b bytes.Buffer
	f.WriteTo(&b)
	if err := os.WriteFile(path+".new", b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// filesOpenIn counts the files in dir this process holds open: a Live
// keeps the file of each copy it holds open, to check it (FileChanged).
func filesOpenIn(t *testing.T, dir string) int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here")
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			n++
		}
	}
	return n
}

// waitClosed waits for the retired filters' closes under way to finish.
func waitClosed(t *testing.T, l *Live) {
	t.Helper()
	for start := time.Now(); l.cur.Closing() != 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%d closes still under way after 10 s", l.cur.Closing())
		}
	}
}

// Concurrent queries while the file is replaced many times: every answer
// comes from a complete filter, old or new; no query fails; old mappings
// are released.
func TestLiveReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	writeVersion(t, path, 0)
	l, err := OpenLive(path, LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var queries, versionsSeen atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) + 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := -1
			for !stop.Load() {
				if !l.Probably([]byte("common key")) {
					t.Error("a query answered no for the key every version holds")
					return
				}
				l.Do(func(f *Filter) {
					v := int(f.Header().EntryCount) - 2
					if !f.Probably([]byte(fmt.Sprintf("marker %d", v))) {
						t.Errorf("version %d lacks its marker: an incomplete filter", v)
					}
					if v != last {
						versionsSeen.Add(1)
						last = v
					}
				})
				queries.Add(2)
			}
		}()
	}
	const versions = 60
	for v := 1; v <= versions; v++ {
		writeVersion(t, path, v)
		if err := l.Reload(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	s := l.Stats()
	if s.Reloads != versions || s.Header.EntryCount != versions+2 || s.Errors != 0 {
		t.Errorf("stats %+v", s)
	}
	waitClosed(t, l)
	if n := filesOpenIn(t, dir); n > 1 {
		t.Errorf("%d filter files open after %d reloads, want 1", n, versions)
	}
	l.Close()
	waitClosed(t, l)
	if n := filesOpenIn(t, dir); n != 0 {
		t.Errorf("%d filter files open after Close", n)
	}
	t.Logf("%d queries, %d version changes seen by the queriers, %d reloads", queries.Load(), versionsSeen.Load(), s.Reloads)
}

// A new file that is not valid: the old one stays in use, the error is
// reported once, and the next good file is taken.
func TestLiveBadReplacement(t *testing.T) { synctest.Test(t, liveBadReplacement) }

func liveBadReplacement(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	writeVersion(t, path, 0)
	var reported []error
	l, err := OpenLive(path, LiveOptions{Interval: time.Millisecond, OnError: func(err error) { reported = append(reported, err) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.WriteFile(path+".tmp", []byte("pkbfv1 but cut short"), 0o644)
	os.Rename(path+".tmp", path)
	for deadline := time.Now().Add(5 * time.Second); l.Stats().Errors < 1 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // many more polls
	if !l.Probably([]byte("marker 0")) {
		t.Error("the old filter stopped answering")
	}
	s := l.Stats()
	if s.Errors != 1 || s.LastError == nil || !strings.Contains(s.LastError.Error(), "stays in use") {
		t.Errorf("stats %+v, want one error", s)
	}
	// A path that is gone for a while: one error, not one a poll.
	os.Remove(path)
	for deadline := time.Now().Add(5 * time.Second); l.Stats().Errors < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // many more polls
	if s := l.Stats(); s.Errors != 2 || !strings.Contains(s.LastError.Error(), "no such file") {
		t.Errorf("path removed: stats %+v, want one more error", s)
	}
	if !l.Probably([]byte("marker 0")) {
		t.Error("the old filter stopped answering while the path was missing")
	}
	writeVersion(t, path, 7)
	for deadline := time.Now().Add(5 * time.Second); l.Stats().Reloads == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if !l.Probably([]byte("marker 7")) || l.Stats().Reloads != 1 {
		t.Errorf("the good file was not taken: %+v", l.Stats())
	}
}

// BenchmarkLive compares a query through a Live filter with one on a
// plain *Filter, on all cores at once (the reference count is shared).
func BenchmarkLive(b *testing.B) {
	path := filepath.Join(b.TempDir(), "f.pkbf")
	writeVersion(b, path, 1000)
	plain, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	l, err := OpenLive(path, LiveOptions{Interval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	keys := randomKeys(1024, 11)
	for _, c := range []struct {
		name string
		q    func([]byte) bool
	}{{"Filter", plain.Probably}, {"Live", l.Probably}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					c.q(keys[i&1023])
					i++
				}
			})
		})
	}
}

// BenchmarkLiveReload times a Live's switch to a 32 MiB filter renamed
// over its path: the new file read into a copy of its own (from the page
// cache) and validated, after the spell a file just renamed in is left
// alone for (see mapfile.Copy).
func BenchmarkLiveReload(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	for _, p := range []string{path, path + ".a", path + ".b"} {
		if err := Create(p, 4, 28); err != nil {
			b.Fatal(err)
		}
	}
	l, err := OpenLive(path, LiveOptions{Interval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		next := path + ".a"
		if i%2 == 1 {
			next = path + ".b"
		}
		os.Link(next, next+".tmp") // keep the name for the next round
		if err := os.Rename(next+".tmp", path); err != nil {
			b.Fatal(err)
		}
		if err := l.Reload(); err != nil || l.Stats().Reloads != int64(i+1) {
			b.Fatalf("reload %d: %v, %+v", i, err, l.Stats())
		}
	}
}

// A kernel can take many seconds to release a large file renamed over:
// the retired filter's close runs in the background, counted in Stats, so
// that Reload (SIGHUP) and Close (SIGTERM) are never held by it.
func TestLiveSlowCloseBlocksNothing(t *testing.T) { synctest.Test(t, liveSlowCloseBlocksNothing) }

func liveSlowCloseBlocksNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	writeVersion(t, path, 0)
	l, err := OpenLive(path, LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	l.cur.SlowClose = func() { <-release }
	writeVersion(t, path, 1)
	reloaded := make(chan error, 1)
	go func() { reloaded <- l.Reload() }()
	select {
	case err := <-reloaded:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("Reload waited for the old file's close")
	}
	if s := l.Stats(); s.PendingCloses != 1 || s.Header.EntryCount != 3 {
		t.Errorf("stats during the close: %+v, want 1 pending close and the new file", s)
	}
	if !l.Probably([]byte("marker 1")) {
		t.Error("the new file does not answer during the old one's close")
	}
	close(release)
	waitClosed(t, l)
	if n := filesOpenIn(t, dir); n != 1 {
		t.Errorf("%d filter files open once the close finished, want 1", n)
	}
	l.Close()
	waitClosed(t, l)
}

// A same-size filter holding every key of the file's, copied over it in
// place, changes the answers without a new file (as keys added in place
// do): OnChange says so, and Stats has the new header. A reload error is
// forgotten once a good file is loaded.
func TestLiveChangeInPlace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	writeVersion(t, path, 1)
	var changes []string
	l, err := OpenLive(path, LiveOptions{Interval: -1, OnChange: func(was, h Header) {
		changes = append(changes, fmt.Sprintf("%d->%d", was.EntryCount, h.EntryCount))
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, _ := New(4, 14)
	for _, k := range []string{"common key", "marker 1", "filler 0", "marker 3", "filler 1"} {
		f.Add([]byte(k))
	}
	var newer bytes.Buffer
	f.WriteTo(&newer)
	b := newer.Bytes()
	fw, err := os.OpenFile(path, os.O_WRONLY, 0) // cp over it: same inode, same size
	if err != nil {
		t.Fatal(err)
	}
	fw.WriteAt(b, 0)
	fw.Close()
	if err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0] != "3->5" {
		t.Errorf("changes %q, want one from 3 to 5 entries", changes)
	}
	if st := l.Stats(); st.Header.EntryCount != 5 || st.Reloads != 0 {
		t.Errorf("stats after the change in place: %+v", st)
	}
	l.Reload()
	if len(changes) != 1 {
		t.Errorf("a reload with nothing new reported a change: %q", changes)
	}

	os.WriteFile(path+".bad", []byte("not a filter"), 0o644)
	os.Rename(path+".bad", path)
	if err := l.Reload(); err == nil || l.Stats().LastError == nil {
		t.Fatal("a bad file loaded")
	}
	writeVersion(t, path, 2)
	if err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.LastError != nil || st.Errors != 1 || st.Reloads != 1 {
		t.Errorf("after a good file followed a bad one: %+v", st)
	}
}

// The red team's A3: a reload that does not end (a read the file system
// never answers) holds up neither Close nor a Reload waiting for its turn
// once Close has begun; its copy, when it ends, is released, never used.
// Before, Close waited for the reload, and so did serve's SIGHUP and its
// shutdown. The watchdogs only catch a hang; their bound is no assertion
// on how long anything took.
func TestLiveCloseWaitsForNoReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	writeVersion(t, path, 1)
	l, err := OpenLive(path, LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	entered, block := make(chan struct{}), make(chan struct{})
	l.slowLoad = func() { close(entered); <-block }
	writeVersion(t, path, 2)
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- l.Reload() }()
	<-entered
	go func() { second <- l.Reload() }()
	closed := make(chan struct{})
	go func() { l.Close(); close(closed) }()
	for _, w := range []struct {
		what string
		done <-chan struct{}
	}{{"Close", closed}, {"a Reload waiting for its turn", errDone(second)}} {
		select {
		case <-w.done:
		case <-time.After(time.Minute):
			close(block)
			t.Fatalf("%s waits for a reload that does not end", w.what)
		}
	}
	close(block)
	if err := <-first; err == nil {
		t.Error("the reload that ended after Close switched to its copy")
	}
	waitClosed(t, l)
	if n := filesOpenIn(t, dir); n != 0 {
		t.Errorf("%d filter files open after Close and the reload's end, want 0", n)
	}
}

// errDone returns a channel closed once an error arrives on c.
func errDone(c <-chan error) <-chan struct{} {
	done := make(chan struct{})
	go func() { <-c; close(done) }()
	return done
}

// BenchmarkLiveVerify256MiB times what a Live's verification costs every
// LiveOptions.VerifyInterval on a 256 MiB filter: the file read (from the
// page cache) in chunks under its shared lock and compared with the copy.
func BenchmarkLiveVerify256MiB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "f.pkbf")
	if err := Create(path, 4, 31); err != nil {
		b.Fatal(err)
	}
	l, err := OpenLive(path, LiveOptions{Interval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ref := l.cur.Acquire()
	defer ref.Release()
	copied := ref.Value().f.copied
	b.SetBytes(int64(copied.Size()))
	b.ReportAllocs()
	for b.Loop() {
		if same, err := copied.SameContent(); err != nil || !same {
			b.Fatalf("the file and its copy: same %v, %v", same, err)
		}
	}
}
