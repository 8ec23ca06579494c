package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
)

// filterHolding returns a filter file of 2 MiB of bits (large enough that
// writing it takes a while) holding the key in spki.
func filterHolding(t *testing.T, spki []byte) []byte {
	f, err := pkbf.New(4, 24)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keycheck.AddKey(f, spki); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	f.WriteTo(&b)
	return b.Bytes()
}

// Issue 48, item 7: pkbf serve as a process, its filter file written over
// under it as operators and accidents do (dd of zeros, a slow copy in
// place, cp of another filter, truncate): /v1/check and the step-ca
// webhook answer from a filter that was whole and valid, never from the
// bytes being written. The filters: "A" holds the P-256 key, "B" the
// P-384 key; every check asks about both, so an answer from a mix of the
// two, or from zeros, says neither (or both). Before, the zeros answered
// "probably":false and {"allow":true} for the key A holds.
func TestServeNeverAnswersFromABrokenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.pkbf")
	a, b := testkit.ReadFile(t, key("p256.spki.der")), testkit.ReadFile(t, key("p384.spki.der"))
	filterA, filterB := filterHolding(t, a), filterHolding(t, b)
	if err := os.WriteFile(path, filterA, 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr, logs := startServe(t, "--poll", "20ms", "--webhook-insecure", path)
	base := "http://" + addr
	body := append(testkit.ReadFile(t, key("p256.spki.pem")), testkit.ReadFile(t, key("p384.spki.pem"))...)
	webhook := fmt.Appendf(nil, `{"x509CertificateRequest":{"publicKey":%q}}`, base64.StdEncoding.EncodeToString(a))

	// The phases, and which filter may answer in each: only A while the
	// file is broken, either while a valid filter replaces it.
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
					state = "both"
				default:
					state = "neither"
				}
			}
			mu.Lock()
			seen[state]++
			mu.Unlock()
			last.Store(state)
			if !strings.Contains(allowed, state) {
				violation("in phase %q the check answered %s: %d %s", allowed, state, resp.StatusCode, out)
			}
			resp, err = client.Post(base+"/v1/step-ca/authorize", "application/json", bytes.NewReader(webhook))
			if err != nil {
				violation("webhook: %v", err)
				continue
			}
			out, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if allowed == "A" && strings.Contains(string(out), `"allow":true`) {
				violation("in phase %q the webhook allowed the key A holds: %d %s", allowed, resp.StatusCode, out)
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

	waitFor("A")
	// dd of zeros over the file, in place.
	run("dd", "if=/dev/zero", "of="+path, fmt.Sprintf("bs=%d", len(filterA)), "count=1", "conv=notrunc", "status=none")
	settle()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("healthz with the file zeroed: %d, want 503", resp.StatusCode)
	}
	// A whole filter renamed over it.
	os.WriteFile(path+".new", filterA, 0o644)
	os.Rename(path+".new", path)
	settle()
	// Filter B written over it in place, slowly, as a large cp does.
	phase.Store("AB")
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(filterB); off += 64 << 10 {
		w.WriteAt(filterB[off:min(off+64<<10, len(filterB))], int64(off))
		time.Sleep(3 * time.Millisecond)
	}
	w.Close()
	waitFor("B")
	// cp of filter A over it (cut to nothing, then written).
	os.WriteFile(filepath.Join(dir, "a.pkbf"), filterA, 0o644)
	run("cp", filepath.Join(dir, "a.pkbf"), path)
	waitFor("A")
	phase.Store("A")
	settle()
	// Cut short.
	run("truncate", "-s", "100", path)
	settle()
	close(stop)
	wg.Wait()
	t.Logf("answers: %v", seen)
	if seen["A"] == 0 || seen["B"] == 0 {
		t.Errorf("answers %v: both filters should have answered", seen)
	}
	if t.Failed() {
		t.Logf("serve's log:\n%s", logs.String())
	}
}
