//go:build unix

package pkbf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Files that change under readers and writers: the tests of a filter file
// edited, replaced or cut short while in use.

// referenceAdd adds spki to the filter file the way the reference
// implementation does, with plain reads and writes and no mapping:
// LOCK_EX, the bits, then the header, fdatasync, unlock. It is independent
// of this package's writer, to test the lock protocol from the other side.
func referenceAdd(file *os.File, spki []byte, firstOfSession bool) (bool, error) {
	fd := int(file.Fd())
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		return false, err
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	var hdr [HeaderSize]byte
	if _, err := file.ReadAt(hdr[:], 0); err != nil {
		return false, err
	}
	k, l := hdr[22], hdr[23]
	changed := false
	for _, p := range (Header{HashCount: k, HashLength: l}).positions(nil, spki) {
		var b [1]byte
		off := int64(HeaderSize) + int64(p/8)
		if _, err := file.ReadAt(b[:], off); err != nil {
			return false, err
		}
		if mask := byte(0x80 >> (p % 8)); b[0]&mask == 0 {
			b[0] |= mask
			if _, err := file.WriteAt(b[:], off); err != nil {
				return false, err
			}
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	if firstOfSession {
		binary.BigEndian.PutUint32(hdr[6:], binary.BigEndian.Uint32(hdr[6:])+1)
	}
	binary.BigEndian.PutUint64(hdr[10:], uint64(time.Now().Unix()))
	binary.BigEndian.PutUint32(hdr[18:], binary.BigEndian.Uint32(hdr[18:])+1)
	if _, err := file.WriteAt(hdr[:], 0); err != nil {
		return false, err
	}
	return true, file.Sync() // the reference calls fdatasync
}

// TestReadersWhileWritersAdd opens and queries a filter over and over while
// another process adds keys to it, once with this package's in-place writer
// and once with the reference protocol: no Open may fail, and every key
// added before a reader opened the file answers "probably".
func TestReadersWhileWritersAdd(t *testing.T) {
	for _, writer := range []string{"pkbf", "reference"} {
		t.Run(writer, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.pkbf")
			if err := Create(path, 4, 16); err != nil {
				t.Fatal(err)
			}
			before := testKeys("before", 100)
			g, err := Edit(path)
			if err != nil {
				t.Fatal(err)
			}
			addKeys(t, g, "before", 100)

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
			opens, failures := 0, 0
			var firstErr error
			done := make(chan error, 1)
			go func() { rest, _ := io.ReadAll(lines); done <- fmt.Errorf("%s", rest) }()
		loop:
			for {
				select {
				case <-done:
					break loop
				default:
				}
				opens++
				f, err := Open(path)
				if err != nil {
					failures++
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				for _, key := range before {
					if !f.Probably(key) {
						t.Fatalf("Probably(%q) = false while a writer adds keys", key)
					}
				}
				f.Close()
			}
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d opens while the %s writer added keys, %d failed", opens, writer, failures)
			if failures > 0 {
				t.Errorf("%d of %d opens failed while a writer added keys; first: %v", failures, opens, firstErr)
			}
			// A reader polls for its shared lock, up to SharedLockWait
			// under a writer that takes the lock key after key, then reads
			// without it: one open may outlast a short writer (CI's 32-bit
			// run saw a single one).
			if opens < 1 {
				t.Errorf("only %d opens overlapped the writer", opens)
			}
		})
	}
}

func init() {
	helpers["PKBF_HELPER_WRITER"] = writerHelper
	helpers["PKBF_HELPER_CREATE"] = createCrashHelper
}

// writerHelper is the writing process of TestReadersWhileWritersAdd:
// spec is "pkbf:PATH" or "reference:PATH".
func writerHelper(spec string) error {
	writer, path, _ := strings.Cut(spec, ":")
	fmt.Println("adding")
	keys := testKeys("writer", 3000)
	switch writer {
	case "pkbf":
		f, err := Edit(path)
		if err != nil {
			return err
		}
		for _, key := range keys {
			if _, err := f.Add(key); err != nil {
				return err
			}
		}
		return f.Close()
	case "reference":
		file, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer file.Close()
		for i, key := range keys {
			if _, err := referenceAdd(file, key, i == 0); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("no writer %q", writer)
}

// recoverFileChanged runs fn and returns the error of a panic wrapping
// ErrFileChanged, or nil if fn returned. Any other panic fails the test.
func recoverFileChanged(t *testing.T, fn func()) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok || !errors.Is(e, ErrFileChanged) {
				t.Fatalf("panic %v, want an error wrapping ErrFileChanged", r)
			}
			err = e
		}
	}()
	fn()
	return nil
}

// A mapped filter whose file is truncated or copied over with a smaller
// file: queries panic with an error naming the file (the runtime would end
// the process with SIGBUS), and Check says so too.
func TestTruncatedUnderReader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(path string) error
	}{
		{"truncate to 0", func(path string) error { return os.Truncate(path, 0) }},
		{"truncate to the header", func(path string) error { return os.Truncate(path, HeaderSize) }},
		{"cp of a smaller filter", func(path string) error {
			return os.WriteFile(path, buildFilter(t, 3, 10, []byte("other")), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.pkbf")
			keys := testKeys("k", 50)
			if err := os.WriteFile(path, buildFilter(t, 4, 18, keys...), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.FileChanged(); err != nil {
				t.Fatalf("Check before any change: %v", err)
			}
			if err := tc.change(path); err != nil {
				t.Fatal(err)
			}
			var qerr error
			for _, key := range testKeys("q", 1000) {
				if qerr = recoverFileChanged(t, func() { f.Probably(key) }); qerr != nil {
					break
				}
			}
			if qerr == nil || !strings.Contains(qerr.Error(), path) || !strings.Contains(qerr.Error(), "renaming a new file over them") {
				t.Errorf("queries after the change: error %v, want one naming %s and the advice", qerr, path)
			}
			// Batches too, both ways of probing a large filter.
			f.large = true
			batch := testKeys("b", 200)
			out := make([]bool, len(batch))
			for _, mean := range []uint32{0, 4 * 32} { // depth 1, depth 4
				f.batchVisits.Store(mean)
				berr := recoverFileChanged(t, func() { f.ProbablyBatch(batch, out) })
				if berr == nil || !strings.Contains(berr.Error(), path) {
					t.Errorf("ProbablyBatch after the change, mean visits %d/16: error %v, want one naming %s", mean, berr, path)
				}
			}
			if err := f.FileChanged(); !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), path) {
				t.Errorf("Check after the change = %v, want ErrFileChanged naming the file", err)
			}
		})
	}
}

// cp of a same-size filter over an open one: no fault, but Check tells that
// the file is not the one opened with keys added (its counters went back).
func TestOverwrittenUnderReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.pkbf")
	if err := os.WriteFile(path, buildFilter(t, 4, 12, testKeys("k", 50)...), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// An in-place add by another writer is fine.
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := referenceAdd(file, []byte("added in place"), true); err != nil {
		t.Fatal(err)
	}
	file.Close()
	if err := f.FileChanged(); err != nil {
		t.Fatalf("Check after an add in place: %v", err)
	}
	if !f.Probably([]byte("added in place")) {
		t.Error("a key added in place by another process is not seen")
	}
	// An older copy of another filter of the same size is not.
	if err := os.WriteFile(path, buildFilter(t, 4, 12, []byte("other")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.FileChanged(); !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), "entries") {
		t.Errorf("Check after cp of another filter = %v, want ErrFileChanged with the counters", err)
	}
}

// Keys added in place while the file is cut short or replaced: Add stops
// and Close says what happened, naming the file; nothing is silent.
func TestChangedUnderAdd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string)
		want   string
	}{
		{"truncated", func(t *testing.T, path string) {
			if err := os.Truncate(path, HeaderSize); err != nil {
				t.Fatal(err)
			}
		}, "truncated or changed"},
		{"renamed over", func(t *testing.T, path string) {
			tmp := path + ".new"
			if err := Create(tmp, 4, 16); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}, "was replaced by another file"},
		{"removed", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, "was removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, f := createInPlace(t, 4, 16)
			keys := testKeys("k", 200)
			for _, key := range keys[:100] {
				if !mustAdd(t, f, key) {
					t.Fatalf("Add(%q) = false before the change", key)
				}
			}
			tc.change(t, path)
			time.Sleep(pathCheckEvery) // adds check the path this often
			for _, key := range keys[100:] {
				added, err := f.Add(key)
				if added || !errors.Is(err, ErrFileChanged) {
					t.Fatalf("Add(%q) = %v, %v after the file %s, want false and ErrFileChanged", key, added, err, tc.name)
				}
			}
			err := f.Close()
			if !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Close = %v, want ErrFileChanged saying %q and naming the file", err, tc.want)
			}
		})
	}
}

// A file truncated under in-place adds, sooner than they check the path
// (every pathCheckEvery): the next add whose bits lie past the new end
// faults, and the fault stops editing with an ErrFileChanged error instead
// of ending the program. The large filter also loads words before the lock.
func TestTruncatedUnderAdd(t *testing.T) {
	for _, hashLength := range []int{16, 24} { // 8 KiB, and 2 MiB > warmBeforeLock
		t.Run(fmt.Sprint(hashLength), func(t *testing.T) {
			path, f := createInPlace(t, 4, hashLength)
			keys := testKeys("k", 200)
			if !mustAdd(t, f, keys[0]) {
				t.Fatal("Add = false before the truncation")
			}
			if err := os.Truncate(path, HeaderSize); err != nil {
				t.Fatal(err)
			}
			var err error
			for _, key := range keys[1:] {
				var added bool
				added, err = f.Add(key)
				if err != nil {
					if added {
						t.Fatalf("Add(%q) = true with an error", key)
					}
					break
				}
			}
			if !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), path) {
				t.Fatalf("after the truncation: Add's error %v, want ErrFileChanged naming the file", err)
			}
			if _, again := f.Add(keys[199]); !errors.Is(again, ErrFileChanged) {
				t.Fatalf("an add after the failure: %v, want the same error", again)
			}
			if cerr := f.Close(); !errors.Is(cerr, ErrFileChanged) {
				t.Errorf("Close = %v, want ErrFileChanged", cerr)
			}
		})
	}
}

// Opening a FIFO that no process writes returns at once with an error;
// one that a writer feeds is read as a stream.
func TestOpenFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	result := make(chan error, 1)
	go func() {
		_, err := Open(fifo)
		result <- err
	}()
	select {
	case err := <-result:
		if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), "FIFO") || !strings.Contains(err.Error(), fifo) {
			t.Errorf("Open(FIFO with no writer) = %v, want an error naming the FIFO", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open of a FIFO with no writer hangs")
	}
	if _, err := Edit(fifo); !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), "edited in place") {
		t.Errorf("Edit(FIFO) = %v, want an error: only a regular file can be edited in place", err)
	}

	// A writer that is there: the filter arrives as a stream.
	b := buildFilter(t, 3, 12, []byte("k"))
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { pw.Write(b); pw.Close() }()
	f, err := Open("/dev/fd/" + strconv.Itoa(int(pr.Fd())))
	pr.Close()
	if err != nil {
		t.Fatalf("Open of a pipe: %v", err)
	}
	if !f.Probably([]byte("k")) || f.Close() != nil {
		t.Error("filter read from a pipe does not answer")
	}
	// Anything after the filter in a stream is an error.
	pr2, pw2, _ := os.Pipe()
	go func() { pw2.Write(append(b, "junk"...)); pw2.Close() }()
	_, err = Open("/dev/fd/" + strconv.Itoa(int(pr2.Fd())))
	pr2.Close()
	if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), "more than the filter") {
		t.Errorf("Open of a pipe with junk after the filter = %v", err)
	}
}

// A crash at any point of Create leaves either nothing at the path or a
// complete empty filter: a child process kills itself at each stage.
func TestCreateCrash(t *testing.T) {
	for _, stage := range []string{"created", "reserved", "written", "synced", "named"} {
		t.Run(stage, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.pkbf")
			cmd := exec.Command(os.Args[0]) // TestMain runs createCrashHelper
			cmd.Env = append(os.Environ(), "PKBF_HELPER_CREATE="+stage+":"+path)
			out, err := cmd.CombinedOutput()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("helper did not die at %s: %v\n%s", stage, err, out)
			}
			f, err := Open(path)
			switch {
			case stage == "named":
				if err != nil {
					t.Fatalf("crash after naming: %v", err)
				}
				if h := f.Header(); h.EntryCount != 0 || h.HashLength != 20 {
					t.Errorf("header %+v", h)
				}
				f.Close()
			case !errors.Is(err, fs.ErrNotExist):
				t.Errorf("crash at %s: Open = %v, want no file at the path", stage, err)
			}
			if err := Create(path, 3, 20); (stage == "named") != errors.Is(err, fs.ErrExist) {
				t.Errorf("Create after a crash at %s: %v", stage, err)
			}
		})
	}
}

// createCrashHelper is the crashing process of TestCreateCrash: spec is
// "STAGE:PATH", the stage of Create at which it kills itself.
func createCrashHelper(spec string) error {
	stage, path, _ := strings.Cut(spec, ":")
	createHook = func(s string) {
		if s == stage {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	if err := Create(path, 3, 20); err != nil {
		return err
	}
	createHook("named")
	return nil
}

// A replacement just before Close, sooner than adds check the path: Close
// still says that the keys went to the old file.
func TestReplacedJustBeforeClose(t *testing.T) {
	path, f := createInPlace(t, 4, 16)
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	if err := Create(path, 4, 16); err != nil {
		t.Fatal(err)
	}
	if !mustAdd(t, f, []byte("k")) {
		t.Fatal("Add = false within the check interval")
	}
	if err := f.Close(); !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), "went to the old file") {
		t.Errorf("Close = %v", err)
	}
}
