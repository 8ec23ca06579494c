//go:build unix

package pkbf

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pkbf/pkbf/internal/testkit"
	"golang.org/x/sys/unix"
)

// Editing in place, which needs mmap and flock(2).

func flockForTest(f *os.File, exclusive bool) error {
	if exclusive {
		return unix.Flock(int(f.Fd()), unix.LOCK_EX)
	}
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}

func TestReferenceSemanticsInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.pkbf")
	if err := Create(path, 4, 12); err != nil {
		t.Fatal(err)
	}
	epoch := time.Unix(0, 0)
	// Session 1: revision 0 -> 1 on the first add, kept on the second.
	f, err := Edit(path)
	if err != nil {
		t.Fatal(err)
	}
	checkHeader(t, "created", f.Header(), 0, 0, epoch, epoch)
	start := time.Now()
	if !mustAdd(t, f, []byte("a")) || !mustAdd(t, f, []byte("b")) || mustAdd(t, f, []byte("a")) {
		t.Fatal("session 1: adds of a, b, a did not return true, true, false")
	}
	checkHeader(t, "session 1", f.Header(), 1, 2, start, time.Now())
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	h, _ := ParseHeader(testkit.ReadFile(t, path))
	checkHeader(t, "file after session 1", h, 1, 2, start, time.Now())
	// Session 2: a duplicate changes nothing, even the revision; a new key
	// raises it once.
	f, err = Edit(path)
	if err != nil {
		t.Fatal(err)
	}
	if mustAdd(t, f, []byte("b")) {
		t.Error("session 2: Add(b) = true")
	}
	if got := f.Header(); got != h {
		t.Errorf("session 2: duplicate changed the header to %+v", got)
	}
	if !mustAdd(t, f, []byte("c")) || !mustAdd(t, f, []byte("d")) {
		t.Fatal("session 2: Add(c), Add(d) = false")
	}
	checkHeader(t, "session 2", f.Header(), 2, 4, start, time.Now())
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	g, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	checkHeader(t, "file after session 2", g.Header(), 2, 4, start, time.Now())
	for _, k := range []string{"a", "b", "c", "d"} {
		if !g.Probably([]byte(k)) {
			t.Errorf("Probably(%s) = false after the sessions", k)
		}
	}
	// The in-place file equals the same adds made in memory.
	m, _ := New(4, 12)
	for _, k := range []string{"a", "b", "c", "d"} {
		m.Add([]byte(k))
	}
	if !bytes.Equal(g.data, m.data) {
		t.Error("in-place data differs from in-memory data")
	}
}

// TestFlockProtocol runs a second process that adds keys to the same file
// at the same time as this one: with the lock, no count update is lost.
func TestFlockProtocol(t *testing.T) {
	const n = 20000
	path := filepath.Join(t.TempDir(), "shared.pkbf")
	if err := Create(path, 5, 20); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0]) // TestMain runs flockHelper
	cmd.Env = append(os.Environ(), "PKBF_HELPER_ADD="+path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f, err := Edit(path)
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("helper said %q, %v; stderr: %s", line, err, stderr.String())
	}
	io.WriteString(stdin, "go\n") // both add from here on
	mine := addKeys(t, f, "parent", n)
	rest, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v\n%s%s", err, rest, stderr.String())
	}
	var theirs int
	if _, err := fmt.Sscanf(string(rest), "added %d", &theirs); err != nil {
		t.Fatalf("helper output %q: %v", rest, err)
	}
	g, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	h := g.Header()
	if int(h.EntryCount) != mine+theirs || mine < n*99/100 || theirs < n*99/100 || h.Revision != 2 {
		t.Errorf("file has %d entries, revision %d; the parent added %d and the helper %d (want the sum, revision 2)", h.EntryCount, h.Revision, mine, theirs)
	}
	for _, key := range append(testKeys("parent", n), testKeys("helper", n)...) {
		if !g.Probably(key) {
			t.Fatalf("Probably(%q) = false", key)
		}
	}
}

func init() { helpers["PKBF_HELPER_ADD"] = flockHelper }

// flockHelper is the second process of TestFlockProtocol: it adds keys to
// the filter at path once the parent says go, and says how many were new.
func flockHelper(path string) error {
	f, err := Edit(path)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	if line, _ := bufio.NewReader(os.Stdin).ReadString('\n'); line != "go\n" {
		return fmt.Errorf("parent said %q", line)
	}
	added := 0
	for _, key := range testKeys("helper", 20000) {
		ok, err := f.Add(key)
		if err != nil {
			return err
		}
		if ok {
			added++
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("added %d\n", added)
	return nil
}

// addKeys adds n test keys to f, closes it and returns how many were new.
func addKeys(t *testing.T, f *Writable, prefix string, n int) int {
	added := 0
	for _, key := range testKeys(prefix, n) {
		if mustAdd(t, f, key) {
			added++
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return added
}

// The lock itself: while another descriptor holds the exclusive lock, an
// in-place Add waits; a header changed by another writer is honoured.
func TestInPlaceWaitsForLockAndRereadsHeader(t *testing.T) {
	path, f := createInPlace(t, 3, 10)
	defer f.Close()
	other, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := flockForTest(other, true); err != nil {
		t.Skipf("flock: %v", err)
	}
	// Another writer's change: count 41, revision 7.
	if _, err := other.WriteAt(rawHeader("pkbfv1", 7, 100, 41, 3, 10), 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	go func() { added, _ := f.Add([]byte("k")); done <- added }()
	select {
	case <-done:
		t.Fatal("Add went ahead while another descriptor held the exclusive lock")
	case <-time.After(100 * time.Millisecond):
	}
	if err := flockForTest(other, false); err != nil {
		t.Fatal(err)
	}
	if !<-done {
		t.Fatal("Add = false")
	}
	if h := f.Header(); h.EntryCount != 42 || h.Revision != 8 {
		t.Errorf("after another writer's change: count %d, revision %d; want 42, 8", h.EntryCount, h.Revision)
	}
}
