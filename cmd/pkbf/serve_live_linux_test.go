package main

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
)

// filterHolding returns a filter file of 2 MiB of bits (large enough that
// writing it takes a while) holding the keys in spkis.
func filterHolding(t *testing.T, spkis ...[]byte) []byte {
	f, err := pkbf.New(4, 24)
	if err != nil {
		t.Fatal(err)
	}
	for _, spki := range spkis {
		if _, err := keycheck.AddKey(f, spki); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	f.WriteTo(&b)
	return b.Bytes()
}

// Issue 48, item 7, and the red team's A0: pkbf serve as a process, its
// filter file written over under it as operators and accidents do (dd of
// zeros, over the data only or the whole file, another filter copied over
// it slowly or with cp, truncate): /v1/check and the step-ca webhook
// answer from a filter that was whole and valid, and one that lacks a key
// of the filter in use is never taken in place (it must be renamed in),
// while one that holds every key and more is, as keys added in place are.
// The filters: "A" holds the P-256 key, "B" the P-384 key, "AB" both;
// every check asks about both, so an answer from a mix, or from zeros,
// says neither. Before, zeros over the whole file answered
// "probably":false and {"allow":true} for the key A holds; with copies,
// zeros over the data only, and B copied over A in place, still did, and
// /healthz answered 200.
func TestServeNeverAnswersFromABrokenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	a, b := testkit.ReadFile(t, key("p256.spki.der")), testkit.ReadFile(t, key("p384.spki.der"))
	filterA, filterB, filterAB := filterHolding(t, a), filterHolding(t, b), filterHolding(t, a, b)
	if err := os.WriteFile(path, filterA, 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr, logs := startServe(t, "--poll", "20ms", "--webhook-insecure", path)
	base := "http://" + addr
	body := append(testkit.ReadFile(t, key("p256.spki.pem")), testkit.ReadFile(t, key("p384.spki.pem"))...)
	webhook := fmt.Appendf(nil, `{"x509CertificateRequest":{"publicKey":%q}}`, base64.StdEncoding.EncodeToString(a))

	// The phases, and which filters may answer in each.
	var phase atomic.Value
	phase.Store("A")
	var mu sync.Mutex
	seen := map[string]int{}
	var last atomic.Value
	last.Store("")
	violation := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if seen["violations"]++; seen["violations"] <= 5 {
			t.Errorf(format, args...)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		client := &http.Client{Timeout: 10 * time.Second}
		for {
			select {
			case <-stop:
				return
			default:
			}
			allowed := phase.Load().(string)
			resp, err := client.Post(base+"/v1/check", "text/plain", bytes.NewReader(body))
			if err != nil {
				violation("check: %v", err)
				continue
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			state := "error"
			if resp.StatusCode == 200 && len(lines) == 2 {
				switch ya, yb := strings.Contains(lines[0], `"probably":true`), strings.Contains(lines[1], `"probably":true`); {
				case ya && !yb:
					state = "A"
				case yb && !ya:
					state = "B"
				case ya && yb:
					state = "AB"
				default:
					state = "neither"
				}
			}
			mu.Lock()
			seen[state]++
			mu.Unlock()
			last.Store(state)
			if !slices.Contains(strings.Split(allowed, " "), state) {
				violation("in phase %q the check answered %s: %d %s", allowed, state, resp.StatusCode, out)
			}
			resp, err = client.Post(base+"/v1/step-ca/authorize", "application/json", bytes.NewReader(webhook))
			if err != nil {
				violation("webhook: %v", err)
				continue
			}
			out, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(out), `"allow":true`) {
				violation("in phase %q the webhook allowed the key every filter holds: %d %s", allowed, resp.StatusCode, out)
			}
		}
	})
	waitFor := func(state string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); last.Load() != state; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the checks never answered from filter %s; log:\n%s", state, logs.String())
			}
		}
	}
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %q: %v\n%s", name, args, err, out)
		}
	}
	settle := func() { time.Sleep(300 * time.Millisecond) } // many polls
	healthz := func(step string, want int) {
		t.Helper()
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("healthz %s: %d %s, want %d", step, resp.StatusCode, out, want)
		}
	}
	renameIn := func(b []byte) {
		os.WriteFile(path+".new", b, 0o644)
		os.Rename(path+".new", path)
		settle()
	}
	slowly := func(b []byte) { // in place, as a large cp does
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(b); off += 64 << 10 {
			w.WriteAt(b[off:min(off+64<<10, len(b))], int64(off))
			time.Sleep(3 * time.Millisecond)
		}
		w.Close()
	}

	waitFor("A")
	run("dd", "if=/dev/zero", "of="+path, fmt.Sprintf("bs=%d", len(filterA)), "count=1", "conv=notrunc", "status=none")
	settle()
	healthz("with the file zeroed", 503)
	renameIn(filterA)
	healthz("with A renamed in", 200)
	run("dd", "if=/dev/zero", "of="+path, fmt.Sprintf("bs=%d", len(filterA)-pkbf.HeaderSize), "count=1", "seek=24", "oflag=seek_bytes", "conv=notrunc", "status=none")
	settle()
	healthz("with zeros over the data, the header kept", 503)
	renameIn(filterA)
	slowly(filterB) // lacks A's key: not keys added in place
	settle()
	healthz("with B written over A in place", 503)
	renameIn(filterA)
	phase.Store("A AB")
	slowly(filterAB) // A's keys and more, as keys added in place
	waitFor("AB")
	phase.Store("AB")
	healthz("with AB written over A in place", 200)
	os.WriteFile(filepath.Join(dir, "a.pkbf"), filterA, 0o644)
	run("cp", filepath.Join(dir, "a.pkbf"), path) // cut to nothing, then A
	settle()
	healthz("with A copied over AB", 503)
	run("truncate", "-s", "100", path)
	settle()
	close(stop)
	wg.Wait()
	t.Logf("answers: %v", seen)
	if seen["A"] == 0 || seen["AB"] == 0 {
		t.Errorf("answers %v: both A and AB should have answered", seen)
	}
	if t.Failed() {
		t.Logf("serve's log:\n%s", logs.String())
	}
}

// checkState asks serve at base about the P-256 and P-384 keys and says
// which it answers probably for: "A", "B", "AB", "neither", or "error".
func checkState(t *testing.T, base string) string {
	body := append(testkit.ReadFile(t, key("p256.spki.pem")), testkit.ReadFile(t, key("p384.spki.pem"))...)
	resp, err := http.Post(base+"/v1/check", "text/plain", bytes.NewReader(body))
	if err != nil {
		return "error"
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if resp.StatusCode != 200 || len(lines) != 2 {
		return "error"
	}
	state := ""
	if strings.Contains(lines[0], `"probably":true`) {
		state += "A"
	}
	if strings.Contains(lines[1], `"probably":true`) {
		state += "B"
	}
	return cmp.Or(state, "neither")
}

// The red team's A1 and A2: a newer filter written over the file in place
// by a writer that holds no lock, through a shared mapping whose pages it
// had written before, first its header and some of its bits, then, after
// a pause, the rest, which changes no time of the file. pkbf serve takes the
// half-written copy (it holds every key the old one did), and then the
// rest within --verify. Before, the torn copy was kept for good: the new
// key answered no, and /healthz 200.
func TestServeFollowsWritesThatChangeNoTime(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	a, b := testkit.ReadFile(t, key("p256.spki.der")), testkit.ReadFile(t, key("p384.spki.der"))
	filterAB := filterHolding(t, a, b)
	if err := os.WriteFile(path, filterHolding(t, a), 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr, logs := startServe(t, "--poll", "20ms", "--verify", "1s", path)
	base := "http://" + addr
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, len(filterAB), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	for i := 0; i < len(m); i += os.Getpagesize() {
		m[i] ^= noChange // dirty from now on
	}
	time.Sleep(300 * time.Millisecond) // many polls: the same content, read and read again
	half := pkbf.HeaderSize + (len(m)-pkbf.HeaderSize)/2
	copy(m[:pkbf.HeaderSize], filterAB) // the header first, as one long write(2) from a slow source
	for i := pkbf.HeaderSize; i < half; i++ {
		m[i] |= filterAB[i] & 0x0f // and some of the bits
	}
	deadline := time.Now().Add(20 * time.Second)
	for checkState(t, base) != "A" || !strings.Contains(logs.String(), "changed in place") {
		if time.Now().After(deadline) {
			t.Fatalf("the half-written filter was never taken; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Many polls: the half-written copy, read again and agreeing, past the
	// 2 s after a new copy in which every poll compares it with the file.
	time.Sleep(2500 * time.Millisecond)
	var before, after unix.Stat_t
	unix.Stat(path, &before)
	copy(m, filterAB)
	unix.Stat(path, &after)
	if before.Mtim != after.Mtim || before.Ctim != after.Ctim {
		t.Logf("the file's times changed with the writes to dirty pages: the kernel wrote them back meanwhile")
	}
	start := time.Now()
	for checkState(t, base) != "AB" {
		if time.Now().After(deadline) {
			t.Fatalf("the rest of the writer's bits were never taken; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the rest taken %v after it was written (--verify 1s)", time.Since(start).Round(time.Millisecond))
}

// noChange is 0, in a variable: m[i] ^= noChange is a store the compiler
// keeps.
var noChange byte

// The red team's A3: the filter path renamed to a FIFO that a process
// holds open for writing and never writes to. pkbf serve logs that it is
// not a regular file, keeps answering, and takes the next filter renamed
// over the path, on SIGHUP as at its polls; SIGTERM then ends it. Before,
// the reload waited on the FIFO for ever: the new filter was never
// loaded, SIGHUP blocked serve's main loop, and SIGTERM did nothing.
func TestServeFIFOAtThePathHoldsNothingUp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	a, b := testkit.ReadFile(t, key("p256.spki.der")), testkit.ReadFile(t, key("p384.spki.der"))
	if err := os.WriteFile(path, filterHolding(t, a), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, addr, logs := startServe(t, "--poll", "50ms", path)
	base := "http://" + addr
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	writer, err := os.OpenFile(fifo, os.O_RDWR, 0) // holds it open, writes nothing
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if err := os.Rename(fifo, path); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), "not a regular file") {
		if time.Now().After(deadline) {
			t.Fatalf("serve never said the FIFO is not a regular file; log:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := checkState(t, base); got != "A" {
		t.Errorf("with a FIFO at the path: %s, want A's answers", got)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	os.WriteFile(path+".new", filterHolding(t, b), 0o644)
	os.Rename(path+".new", path)
	for checkState(t, base) != "B" {
		if time.Now().After(deadline) {
			t.Fatalf("the filter renamed over the FIFO was never taken; log:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("serve did not end after SIGTERM; log:\n%s", logs.String())
	}
}
