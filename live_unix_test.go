//go:build unix

package pkbf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// query asks l about key, turning a panic (a fault in a mapping) into a
// test failure instead of the end of the test binary.
func query(t *testing.T, l *Live, key string) (probably bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("Probably(%q) panicked: %v", key, r)
		}
	}()
	return l.Probably([]byte(key))
}

// Issue 48, item 7, and the red team's A0: a file overwritten in place
// under a Live changes none of its answers, and what adding keys in place
// cannot make is never taken: the Live answers from its own validated
// copy, and FileChanged of that copy reports the damage (so /healthz
// answers 503). Before, the zeros showed through the mapping at once; and
// then, with copies, zeros over the data only, a hole punched there, a
// cut to the header and back, a changed hash count and another filter of
// the same size copied over it were all taken as new content (the
// compromised "marker 1" answered no).
func TestLiveAnswersFromItsOwnCopy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, path string, b []byte)
		valid string // the new content's marker, if the Live is to take it
	}{
		{"zeros written over it (dd conv=notrunc)", func(t *testing.T, path string, b []byte) {
			overwrite(t, path, make([]byte, len(b)), false)
		}, ""},
		{"truncated", func(t *testing.T, path string, b []byte) {
			if err := os.Truncate(path, 100); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"zeros over the data, the header kept (dd seek=24)", func(t *testing.T, path string, b []byte) {
			overwrite(t, path, append(b[:HeaderSize:HeaderSize], make([]byte, len(b)-HeaderSize)...), false)
		}, ""},
		{"cut to its header and back to its size", func(t *testing.T, path string, b []byte) {
			if err := os.Truncate(path, HeaderSize); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, int64(len(b))); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"a hole punched in the data (fallocate --punch-hole)", func(t *testing.T, path string, b []byte) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := punchHole(f, int64(len(b))); err != nil {
				t.Skipf("cannot punch a hole here: %v", err)
			}
			f.WriteAt(b[:HeaderSize], 0) // the header back, as a hole after it leaves it
		}, ""},
		{"its hash count changed, same size", func(t *testing.T, path string, b []byte) {
			b = bytes.Clone(b)
			b[offHashCount] = 5
			overwrite(t, path, b, false)
		}, ""},
		{"another filter copied over it (cp), lacking its keys", func(t *testing.T, path string, b []byte) {
			other := filterOf(t, "common key", "marker 2", "filler 0", "filler 1")
			if len(other) != len(b) {
				t.Fatalf("the other filter is %d bytes, want %d", len(other), len(b))
			}
			overwrite(t, path, other, true)
		}, ""},
		{"a filter holding its keys and more copied over it (cp)", func(t *testing.T, path string, b []byte) {
			overwrite(t, path, filterOf(t, "common key", "marker 1", "filler 0", "marker 2"), true)
		}, "marker 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.pkbf")
			writeVersion(t, path, 1)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			l, err := OpenLive(path, LiveOptions{Interval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			tc.write(t, path, b)
			if !query(t, l, "marker 1") {
				t.Error("the key the filter holds answered no once the file was written over, before any reload")
			}
			err = l.Reload()
			if tc.valid == "" {
				if err == nil {
					t.Error("Reload took content that adding keys in place cannot make")
				}
				if !query(t, l, "marker 1") || !query(t, l, "common key") {
					t.Error("the key the filter holds answered no after a failed reload")
				}
				var changed error
				l.Do(func(f *Filter) { changed = f.FileChanged() })
				if !errors.Is(changed, ErrFileChanged) {
					t.Errorf("FileChanged of the copy in use = %v, want ErrFileChanged: the file is broken", changed)
				}
				l.Reload()
				if n := l.Stats().Errors; n != 1 {
					t.Errorf("a second look at the same damage: %d errors, want it reported once", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !query(t, l, "marker 1") || !query(t, l, tc.valid) || l.Stats().Header.EntryCount != 4 {
				t.Errorf("after the reload: %+v, want the new filter's answers", l.Stats())
			}
			var changed error
			l.Do(func(f *Filter) { changed = f.FileChanged() })
			if changed != nil {
				t.Errorf("FileChanged of the new copy: %v", changed)
			}
		})
	}
}

// filterOf returns the bytes of a filter with the parameters writeVersion
// uses, holding keys: filters of the same keys have the same bits.
func filterOf(t *testing.T, keys ...string) []byte {
	f, err := New(4, 14)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		f.Add([]byte(k))
	}
	var b bytes.Buffer
	f.WriteTo(&b)
	return b.Bytes()
}

// mapShared maps the file at path writable and shared, as a writer that
// holds no lock does (the red team's mmapwrite), and writes each page's
// first byte back: its pages are dirty from then on, and writes to them
// change no time of the file.
func mapShared(t *testing.T, path string) []byte {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	for i := 0; i < len(m); i += os.Getpagesize() {
		m[i] ^= noChange // a store the compiler keeps
	}
	return m
}

// noChange is 0, in a variable.
var noChange byte

// stampOf returns what a write to the file at path changes.
func stampOf(t *testing.T, path string) [3]int64 {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return [3]int64{st.Size, st.Mtim.Nano(), st.Ctim.Nano()}
}

// present counts the keys l answers probably for.
func present(l *Live, keys [][]byte) int {
	n := 0
	for _, k := range keys {
		if l.Probably(k) {
			n++
		}
	}
	return n
}

// grownVersion returns version 1's filter with the new keys added: what
// adding them in place makes.
func grownVersion(t *testing.T, newKeys [][]byte) []byte {
	f, err := New(4, 14)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"common key", "marker 1", "filler 0"} {
		f.Add([]byte(k))
	}
	for _, k := range newKeys {
		f.Add(k)
	}
	var b bytes.Buffer
	f.WriteTo(&b)
	return b.Bytes()
}

// The red team's A1: a newer filter written over the file in place by a
// writer that holds no lock, and changes the file's times once, at the
// start (one long pwrite(2)): a copy read meanwhile holds the new header
// and part of the new bits. The Live reads the file again at its next
// poll, and takes what it finds until two reads agree, however the times
// stand. Before, the torn copy was kept for good (1995 of 2000 new keys
// answered no).
func TestLiveReadsATornCopyAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.pkbf")
	writeVersion(t, path, 1)
	l, err := OpenLive(path, LiveOptions{Interval: -1, VerifyInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	newKeys := testKeys("new", 200)
	g := grownVersion(t, newKeys)
	m := mapShared(t, path)
	if err := l.Reload(); err != nil { // the pages written back: the same content
		t.Fatal(err)
	}
	l.Reload() // read again: they agree
	half := HeaderSize + (len(g)-HeaderSize)/2
	copy(m[:half], g[:half])
	if err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := present(l, newKeys); n == len(newKeys) {
		t.Fatalf("the copy of a half-written file answers for all %d new keys: no torn copy to test", n)
	}
	before := stampOf(t, path)
	copy(m[half:], g[half:])
	if after := stampOf(t, path); after != before {
		t.Logf("the file's times changed with the writes to dirty pages (%v -> %v): the kernel wrote them back meanwhile", before, after)
	}
	if err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := present(l, newKeys); n != len(newKeys) || !l.Probably([]byte("marker 1")) {
		t.Errorf("once the writer is done, the Live answers for %d of its %d keys", n, len(newKeys))
	}
}

// A writer that holds no lock may stall mid-write for longer than a poll
// (the red team's slow pwrite(2), its source pages faulting from a busy
// disk): two reads a poll apart then agree on a torn copy. A new copy is
// compared with the file at each look until one at least
// mapfile.Watch.Confirm after it was read agrees, so the rest of the
// write is seen then, not at the next verification.
func TestLiveReadsAStalledWriterAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.pkbf")
	writeVersion(t, path, 1)
	l, err := OpenLive(path, LiveOptions{Interval: -1, VerifyInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.watch.Confirm = time.Hour // longer than the test: every look compares
	newKeys := testKeys("new", 200)
	g := grownVersion(t, newKeys)
	m := mapShared(t, path)
	half := HeaderSize + (len(g)-HeaderSize)/2
	copy(m[:half], g[:half])
	if err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := present(l, newKeys); n == len(newKeys) {
		t.Fatalf("the copy of a half-written file answers for all %d new keys: no torn copy to test", n)
	}
	l.Reload() // the writer stalls: the file and the copy agree
	copy(m[half:], g[half:])
	if err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := present(l, newKeys); n != len(newKeys) {
		t.Errorf("once the stalled writer is done, the Live answers for %d of its %d keys", n, len(newKeys))
	}
}

// The red team's A2: a writer through a shared mapping whose pages were
// already dirty changes no time of the file, and a write of bits alone
// no header. The Live reads the file and compares it with its copy every
// VerifyInterval, and so follows such a writer within that bound, and
// not sooner (each look reads the whole file). Before, the change was
// never seen.
func TestLiveVerifiesWritesThatChangeNoTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.pkbf")
	writeVersion(t, path, 1)
	l, err := OpenLive(path, LiveOptions{Interval: -1, VerifyInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.watch.Confirm = 0 // the copy is trusted at the first look that agrees
	newKeys := testKeys("new", 200)
	g := grownVersion(t, newKeys)
	m := mapShared(t, path)
	if err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	l.Reload() // read again: they agree
	before := stampOf(t, path)
	copy(m[HeaderSize:], g[HeaderSize:]) // the bits, not the header
	if after := stampOf(t, path); after != before {
		t.Logf("the file's times changed with the writes to dirty pages (%v -> %v): the kernel wrote them back meanwhile", before, after)
	} else if l.Reload(); present(l, newKeys) != 0 {
		t.Errorf("a change that left the times and header as they were was seen before VerifyInterval")
	}
	l.watch.Verify = time.Millisecond // as if the hour had passed
	time.Sleep(2 * time.Millisecond)
	if err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := present(l, newKeys); n != len(newKeys) {
		t.Errorf("after VerifyInterval, the Live answers for %d of the writer's %d keys", n, len(newKeys))
	}
}

// The red team's A3: the path replaced by a FIFO that a writer holds open
// and never writes to, or by a link to /dev/ptmx (a new terminal each time
// it is opened): the Live refuses it at once, as what it does not follow,
// and takes the next filter renamed over the path. Before, the read of the
// FIFO waited for ever, holding every later reload (and Close) up. The
// watchdog only catches that hang; its bound is no assertion on how long
// anything took.
func TestLiveFollowsRegularFilesOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	writeVersion(t, path, 1)
	l, err := OpenLive(path, LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	writer, err := os.OpenFile(fifo, os.O_RDWR, 0) // holds it open, writes nothing
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	things := []string{fifo}
	if _, err := os.Stat("/dev/ptmx"); err == nil {
		os.Symlink("/dev/ptmx", filepath.Join(dir, "ptmx"))
		things = append(things, filepath.Join(dir, "ptmx"))
	}
	for i, thing := range things {
		if err := os.Rename(thing, path); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- l.Reload() }()
		select {
		case err := <-done:
			if err == nil || !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s at the path: Reload = %v, want an error saying it is not a regular file", thing, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s at the path: Reload is still waiting", thing)
		}
		if !query(t, l, fmt.Sprintf("marker %d", i+1)) {
			t.Errorf("%s at the path: the filter in use stopped answering", thing)
		}
		writeVersion(t, path, i+2)
		if err := l.Reload(); err != nil || !query(t, l, fmt.Sprintf("marker %d", i+2)) {
			t.Errorf("a filter renamed over %s: %v, %+v", thing, err, l.Stats())
		}
	}
}

// overwrite writes b over the file at path in place, as dd conv=notrunc
// does, or, with truncate, as cp does (the file cut to nothing first).
func overwrite(t *testing.T, path string, b []byte, truncate bool) {
	flag := os.O_WRONLY
	if truncate {
		flag |= os.O_TRUNC
	}
	w, err := os.OpenFile(path, flag, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// A Live while another process adds keys in place, under the lock (this
// package's writer, through a mapping, and the reference's, with writes):
// every copy it answers from is consistent, at least as many of the
// writer's keys present as its header counts, and once the writer is done
// the Live answers for all of them at its next poll.
func TestLiveWhileWritersAddInPlace(t *testing.T) {
	for _, writer := range []string{"pkbf", "reference"} {
		t.Run(writer, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.pkbf")
			if err := Create(path, 4, 16); err != nil {
				t.Fatal(err)
			}
			l, err := OpenLive(path, LiveOptions{Interval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			keys := testKeys("writer", 3000)
			cmd := exec.Command(os.Args[0]) // TestMain runs writerHelper
			cmd.Env = append(os.Environ(), "PKBF_HELPER_WRITER="+writer+":"+path)
			out, _ := cmd.StdoutPipe()
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewReader(out)
			if line, _ := lines.ReadString('\n'); line != "adding\n" {
				t.Fatalf("helper said %q", line)
			}
			done := make(chan struct{})
			go func() { io.Copy(io.Discard, lines); close(done) }()
			copies, last := 0, uint32(0)
			check := func() {
				l.Do(func(f *Filter) {
					present := 0
					for _, key := range keys {
						if f.Probably(key) {
							present++
						}
					}
					if n := f.Header().EntryCount; int(n) > present {
						t.Fatalf("a copy counts %d entries and holds %d of the writer's keys: a torn copy", n, present)
					} else if n != last {
						copies, last = copies+1, n
					}
				})
			}
		loop:
			for {
				select {
				case <-done:
					break loop
				default:
				}
				l.Reload()
				check()
			}
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			if err := l.Reload(); err != nil {
				t.Fatal(err)
			}
			check()
			final, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer final.Close()
			if h := l.Stats().Header; h != final.Header() {
				t.Errorf("after the writer: the Live's header %+v, the file's %+v", h, final.Header())
			}
			for _, key := range keys {
				if !l.Probably(key) {
					t.Fatalf("after the writer: Probably(%q) = false", key)
				}
			}
			t.Logf("%d copies read while the %s writer added keys; %d errors (%v)", copies, writer, l.Stats().Errors, l.Stats().LastError)
		})
	}
}
