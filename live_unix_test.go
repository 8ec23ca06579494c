//go:build unix

package pkbf

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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

// Issue 48, item 7: a file overwritten in place under a Live (dd of zeros,
// cp of another filter of the same size, a truncation) changes none of
// its answers: it answers from its own validated copy until it has read
// and validated the new content. Before, the zeros showed through the
// mapping at once (the compromised "marker 1" answered no), and a
// truncation made queries panic.
func TestLiveAnswersFromItsOwnCopy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, path string, size int)
		valid string // the new content's marker, if it is a filter
	}{
		{"zeros written over it (dd conv=notrunc)", func(t *testing.T, path string, size int) {
			overwrite(t, path, make([]byte, size), false)
		}, ""},
		{"truncated", func(t *testing.T, path string, size int) {
			if err := os.Truncate(path, 100); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"another filter copied over it (cp)", func(t *testing.T, path string, size int) {
			other := filepath.Join(t.TempDir(), "other")
			writeVersion(t, other, 2)
			b, _ := os.ReadFile(other)
			if len(b) != size {
				t.Fatalf("the other filter is %d bytes, want %d", len(b), size)
			}
			overwrite(t, path, b, true)
		}, "marker 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.pkbf")
			writeVersion(t, path, 1)
			fi, _ := os.Stat(path)
			l, err := OpenLive(path, LiveOptions{Interval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			tc.write(t, path, int(fi.Size()))
			if !query(t, l, "marker 1") {
				t.Error("the key the filter holds answered no once the file was written over, before any reload")
			}
			err = l.Reload()
			if tc.valid == "" {
				if err == nil {
					t.Error("Reload took content that is not a filter")
				}
				if !query(t, l, "marker 1") || !query(t, l, "common key") {
					t.Error("the key the filter holds answered no after a failed reload")
				}
				var changed error
				l.Do(func(f *Filter) { changed = f.FileChanged() })
				if !errors.Is(changed, ErrFileChanged) {
					t.Errorf("FileChanged of the copy in use = %v, want ErrFileChanged: the file is broken", changed)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if query(t, l, "marker 1") || !query(t, l, tc.valid) || l.Stats().Header.EntryCount != 4 {
				t.Errorf("after the reload: %+v, want the new filter's answers", l.Stats())
			}
		})
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
