//go:build unix

package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keys"
)

// pkbf update processes killed with SIGKILL at random points, while
// pkbf check processes read the filter in a loop: every check finds the
// key every revision holds (never a partial or missing filter), the filter
// is always a complete old or new one, and nothing but the documented
// files is left beside it (a state file being saved may be left under
// its temporary name, which the next update removes). A last update, left
// to finish, resumes and installs the newest revision, and leaves only
// the documented files.
func TestUpdateKilled(t *testing.T) {
	pub := &publisher{delay: 500 * time.Microsecond} // 4 MiB in 32 KiB writes: about 70 ms a download
	pub.set(publishedFilter(t, 1, 25, 100))
	ts := tlsServer(t, pub)
	dir := t.TempDir()
	p := filepath.Join(dir, "f.pkbf")
	t.Setenv(updateHeaderEnv, "X-Api-Key: k3y")
	if r := runWith(t, nil, "update", ts.URL, p); r.code != 0 {
		t.Fatal(r)
	}

	stop := make(chan struct{})
	var checks, bad atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			cmd := pkbfProcess("check", "--quiet", p, key("p256.pub"))
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				bad.Add(1)
				t.Errorf("check during updates: exit %d: %s", code, out)
			}
			checks.Add(1)
		}
	})
	rng := rand.New(rand.NewPCG(7, 8))
	killed := 0
	for rev := uint32(2); rev <= 12; rev++ {
		pub.set(publishedFilter(t, rev, 25, 100+int(rev)))
		cmd := pkbfProcess("update", ts.URL, p)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
			killed++
		}
		f, err := pkbf.Open(p)
		if err != nil {
			t.Fatalf("after update %d was killed: %v", rev, err)
		}
		if h := f.Header(); h.Revision > rev || !f.Probably(spkiOf(t, "p256.pub")) {
			t.Errorf("revision %d installed while %d was published", h.Revision, rev)
		}
		f.Close()
		checkBeside(t, dir, true)
	}
	r := runWith(t, nil, "update", ts.URL, p)
	checkBeside(t, dir, false)
	close(stop)
	wg.Wait()
	if r.code != 0 || !strings.Contains(r.stdout, "-> 12") && !strings.HasPrefix(r.stdout, "up to date") {
		t.Fatalf("last update: %+v", r)
	}
	if h := header(t, p); h.Revision != 12 {
		t.Errorf("revision %d installed at the end, want 12", h.Revision)
	}
	if killed == 0 || checks.Load() < 5 {
		t.Errorf("%d updates killed, %d checks made: the test did not test", killed, checks.Load())
	}
	t.Logf("%d of 11 updates killed mid-way, %d checks meanwhile, %d failed; last: %s", killed, checks.Load(), bad.Load(), strings.TrimSpace(r.stdout))
}

// spkiOf is the SPKI of a test key file.
// checkBeside fails the test if dir holds other files than f.pkbf and
// those update keeps beside it, and, if stateTemp, a state file killed
// while being saved.
func checkBeside(t *testing.T, dir string, stateTemp bool) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		switch name := e.Name(); {
		case name == "f.pkbf", name == ".f.pkbf.download", name == ".f.pkbf.update.json", name == ".f.pkbf.update.lock":
		case stateTemp && strings.HasPrefix(name, "..f.pkbf.update.json.tmp-"):
		default:
			t.Errorf("stray file %s after a killed update", name)
		}
	}
}

func spkiOf(t *testing.T, name string) []byte {
	t.Helper()
	spki, err := keys.SPKI(testkit.ReadFile(t, key(name)))
	if err != nil {
		t.Fatal(err)
	}
	return spki
}
