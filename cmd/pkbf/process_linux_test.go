package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// A file system too small for the filter: create fails at once, saying
// so, and leaves nothing; a sparse filter made there by other means gives
// check and add an error, not a SIGBUS. Needs a tmpfs of 1 MiB (root).
func TestFullFileSystem(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a small tmpfs here: %v", err)
	}
	defer unix.Unmount(dir, 0)
	p := filepath.Join(dir, "f.pkbf")
	r := runWith(t, nil, "create", "-hashes", "4", "-length", "30", p)
	if r.code != exitTrouble || !strings.Contains(r.stderr, "no space left") {
		t.Errorf("create of 128 MiB on a 1 MiB file system: %+v", r)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("create left %v behind", entries)
	}
	// A sparse file as an older create made it.
	hdr, _ := (pkbf.Header{HashCount: 4, HashLength: 30}).AppendBinary(nil)
	if err := os.WriteFile(p, hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, int64(len(hdr))+1<<27); err != nil {
		t.Fatal(err)
	}
	r = runWith(t, nil, "add", p, key("p256.pub"))
	if r.code != exitTrouble || !strings.Contains(r.stderr, "no space left") {
		t.Errorf("add to a sparse filter on a full file system: %+v", r)
	}
	keys := bytes.Repeat(testkit.ReadFile(t, key("rsa2048.pub")), 200)
	cmd := pkbfProcess("check", p)
	cmd.Stdin = bytes.NewReader(keys)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd); code != exitOK && code != exitTrouble {
		t.Errorf("check on a sparse filter on a full file system: exit %d\n%s", code, stderr.String())
	} else {
		t.Logf("check on a sparse filter on a full tmpfs: exit %d %s", code, stderr.String())
	}
}

// filesOpenIn returns the files in dir that process pid holds open.
func filesOpenIn(t *testing.T, pid int, dir string) []string {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			open = append(open, target)
		}
	}
	return open
}

// startServe runs pkbf serve on a free port and returns its address.
func startServe(t testing.TB, args ...string) (*exec.Cmd, string, *syncBuffer) {
	cmd := pkbfProcess(append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	logs := &syncBuffer{}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		logs.WriteString(lines.Text() + "\n")
		if _, addr, ok := strings.Cut(lines.Text(), "://"); ok && strings.Contains(lines.Text(), " serving ") {
			go func() {
				for lines.Scan() {
					logs.WriteString(lines.Text() + "\n")
				}
			}()
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			return cmd, addr, logs
		}
	}
	t.Fatalf("serve did not start: %s", logs.String())
	return nil, "", nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) WriteString(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(v)
}

func (s *syncBuffer) Write(b []byte) (int, error) {
	s.WriteString(string(b))
	return len(b), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// writeFilterVersion renames over path a filter holding the p256 key and,
// in version v, v filler keys: entries 2+v (both point forms of p256). It
// writes and renames as cp and mv do, without WriteFile's syncs, which
// would make the test wait on the disk.
func writeFilterVersion(t *testing.T, path string, v int) {
	f, _ := pkbf.New(4, 16)
	if _, err := keycheck.AddKey(f, testkit.ReadFile(t, key("p256.pub"))); err != nil {
		t.Fatal(err)
	}
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

// Clients query while the filter is replaced 40 times: no request fails,
// every answer comes from a complete filter (the key all versions hold is
// always found), old copies are released with their files (counted in
// /proc/PID/fd);
// SIGHUP reloads; SIGTERM lets a request in flight finish.
func TestServeReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.pkbf")
	writeFilterVersion(t, p, 0)
	cmd, addr, logs := startServe(t, "--poll", "5ms", p)
	url := "http://" + addr + "/v1/check"
	body := append(testkit.ReadFile(t, key("p256.pub")), testkit.ReadFile(t, key("p384.pub"))...)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var requests, failures atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				requests.Add(1)
				resp, err := http.Post(url, "text/plain", bytes.NewReader(body))
				if err != nil {
					failures.Add(1)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(strings.SplitN(string(b), "\n", 2)[0], `"probably":true`) {
					failures.Add(1)
				}
			}
		}()
	}
	for v := 1; v <= 40; v++ {
		writeFilterVersion(t, p, v)
		// A few polls: a file just renamed in is read once it has been
		// left alone 50 ms (see mapfile.Copy).
		time.Sleep(60 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if open := filesOpenIn(t, cmd.Process.Pid, dir); len(open) != 1 {
		t.Errorf("%d filter files open after 40 replacements, want 1: %q", len(open), open)
	}
	if failures.Load() != 0 || requests.Load() < 100 || strings.Count(logs.String(), "reloaded ") < 10 {
		t.Errorf("%d of %d requests failed; log:\n%s", failures.Load(), requests.Load(), logs.String())
	}
	t.Logf("%d requests, %d reloads logged, none failed", requests.Load(), strings.Count(logs.String(), "reloaded "))

	// SIGHUP, with polling that would take an hour.
	cmd2, addr2, logs2 := startServe(t, "--poll", "1h", p)
	writeFilterVersion(t, p, 99)
	cmd2.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs2.String(), "101 entries") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr2 + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st["entries"] != float64(101) || st["reloads"] != float64(1) {
		t.Errorf("after SIGHUP: status %v\n%s", st, logs2.String())
	}
	// SIGTERM during a slow request: it is answered, then the server ends.
	pr, pw := io.Pipe()
	answered := make(chan int, 1)
	go func() {
		resp, err := http.Post("http://"+addr2+"/v1/check", "text/plain", pr)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	pw.Write(testkit.ReadFile(t, key("p256.pub")))
	time.Sleep(100 * time.Millisecond)
	cmd2.Process.Signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	pw.Close()
	if code := <-answered; code != 200 {
		t.Errorf("request in flight at SIGTERM: status %d", code)
	}
	if err := cmd2.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v\n%s", err, logs2.String())
	}
}

// Issue 43, item 6: serve stops on Ctrl-C as every other command does
// (interruptContext): a first interrupt drains, letting a request in
// flight finish, a second one quits at once, here while a client holds
// its upload open.
func TestServeSecondInterruptQuits(t *testing.T) {
	cmd, addr, logs := startServe(t, exampleFilter)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nssh-")
	waitBodyHeld(t, addr, 1000)
	cmd.Process.Signal(os.Interrupt)
	for !strings.Contains(logs.String(), "shutting down") {
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != os.Interrupt {
		t.Errorf("after a second Ctrl-C while draining: %v, want killed by it; log:\n%s", cmd.ProcessState, logs.String())
	}
}
