package main

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pkbf/pkbf/ct/cttest"
)

// Issue 48, item 12: a hostile RFC 6962 log serves a forged entry 7 (a
// certificate of another serial, for a key in the filter), then refuses
// or stalls get-entries past 256, and refuses get-sth-consistency or
// answers it honestly: nothing at or past entry 0 is proved. Then it
// turns honest. The real entry 7, also for a key in the filter, must end
// up in the hits file, alone. Before, the first run printed the forged
// hit and its state kept "reported": [7]; the honest run then exited 0
// with "0 hits", the real entry never reported (SIGINT took the same
// path), and the failed run's summary said "entries 0 to 0 ... 256 read,
// 1 hits".
func TestForgedHitDoesNotHideRealOne(t *testing.T) {
	bin := build(t)
	fx := cttest.NewFixture(t, 600, 60, 1000) // entry 7 planted, only
	rs := cttest.NewRFC6962Server(t, fx)
	der, err := x509.MarshalPKIXPublicKey(rs.Key.Public())
	if err != nil {
		t.Fatal(err)
	}
	key := base64.StdEncoding.EncodeToString(der)
	realSerial := hex.EncodeToString(big.NewInt(int64(len(fx.Entries)) + 7 + 1000).Bytes())

	var mode atomic.Value // "" (honest), or how the log is hostile
	mode.Store("")
	arrived, proofAsked := make(chan struct{}, 100), make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := mode.Load().(string)
		start, _ := strconv.ParseInt(r.FormValue("start"), 10, 64)
		switch {
		case m == "":
		case strings.HasSuffix(r.URL.Path, "/get-sth-consistency") && m != "consistent":
			select { // never blocks
			case proofAsked <- struct{}{}:
			default:
			}
			http.Error(w, "no proofs today", http.StatusBadRequest)
			return
		case strings.HasSuffix(r.URL.Path, "/get-entries") && start >= 256 && m == "stall":
			select { // never blocks: the handler must reach its wait
			case arrived <- struct{}{}:
			default:
			}
			<-r.Context().Done()
			return
		case strings.HasSuffix(r.URL.Path, "/get-entries") && start >= 256:
			http.Error(w, "no more entries", http.StatusBadRequest)
			return
		}
		rs.ServeHTTP(w, r)
	}))
	defer srv.Close()

	type hit struct {
		Index  int64
		Serial string
	}
	hits := func(path string) []hit {
		b, _ := os.ReadFile(path)
		var hs []hit
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var h hit
			if line != "" && json.Unmarshal([]byte(line), &h) == nil {
				hs = append(hs, h)
			}
		}
		return hs
	}
	type savedState struct {
		Next int64
		// Whatever the state calls the hits it holds as reported: none
		// may be there that was not proved.
		Reported       []int64 `json:"reported"`
		ReportedProved []int64 `json:"reported_proved"`
		Unchecked      []int64 `json:"unchecked"`
	}
	readState := func(path string) savedState {
		var st savedState
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return st
	}

	for _, c := range []struct {
		name      string
		mode      string
		interrupt bool
		code      int
		stderr    []string
	}{
		{"get-entries and get-sth-consistency refused past 256", "refuse", false, exitTrouble,
			[]string{"256 read (entries 0 to 255), none proved", "0 hits", "1 hit held back", "400 Bad Request"}},
		{"SIGINT, get-entries stalled past 256, get-sth-consistency refused", "stall", true, exitSignaled,
			[]string{"256 read (entries 0 to 255), none proved", "0 hits", "1 hit held back", "interrupted: the next run goes on from entry 0"}},
		{"get-entries refused past 256, the forgery caught by a consistency proof", "consistent", false, exitTrouble,
			[]string{"256 read (entries 0 to 255), none proved", "0 hits", "do not match the tree head"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			state, out := filepath.Join(dir, "state.json"), filepath.Join(dir, "hits.jsonl")
			run := func(interrupt bool) (int, string) {
				args := []string{"--json", "--kind", "rfc6962", "--key", key, "--parallel", "1", "--state", state, "--output", out}
				if interrupt { // a proof asked for once the first 256 entries are checked
					args = append(args, "--save-every", "1ns")
				}
				cmd := exec.Command(bin, append(args, fx.Filter, srv.URL)...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if interrupt {
					select {
					case <-arrived:
					case <-time.After(time.Minute):
						cmd.Process.Kill()
						t.Fatal("no stalled request in a minute")
					}
					// The entries before the stall checked (entry 7's hit
					// found, a proof asked for): then Ctrl-C.
					select {
					case <-proofAsked:
					case <-time.After(time.Minute):
						cmd.Process.Kill()
						t.Fatal("no proof asked for in a minute")
					}
					cmd.Process.Signal(syscall.SIGINT)
				}
				return exitCode(cmd.Wait()), stderr.String()
			}

			for len(arrived) > 0 {
				<-arrived
			}
			for len(proofAsked) > 0 {
				<-proofAsked
			}
			rs.Forged.Store(&map[int64][]byte{7: fx.Cert(true)})
			mode.Store(c.mode)
			code, stderr := run(c.interrupt)
			t.Logf("hostile:\n%s", stderr)
			if code != c.code {
				t.Errorf("hostile: exit %d, want %d\n%s", code, c.code, stderr)
			}
			for _, want := range c.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("hostile: stderr without %q:\n%s", want, stderr)
				}
			}
			if st := readState(state); st.Next != 0 || len(st.Reported)+len(st.ReportedProved)+len(st.Unchecked) != 0 {
				t.Errorf("hostile: the state keeps %+v; want nothing past entry 0, nothing reported", st)
			}
			if hs := hits(out); len(hs) != 0 {
				t.Errorf("hostile: hits %+v printed from entries not proved", hs)
			}

			rs.Forged.Store(nil)
			mode.Store("")
			code, stderr = run(false)
			if code != exitFound || !strings.Contains(stderr, "600 read (entries 0 to 599), all proved; 1 hits") {
				t.Errorf("honest: exit %d, want %d with 1 hit\n%s", code, exitFound, stderr)
			}
			if hs := hits(out); len(hs) != 1 || hs[0].Index != 7 || hs[0].Serial != realSerial {
				t.Errorf("honest: the hits file holds %+v; want entry 7 alone, serial %s", hs, realSerial)
			}
			if st := readState(state); st.Next != int64(len(fx.Entries)) {
				t.Errorf("honest: the state's next entry %d, want %d", st.Next, len(fx.Entries))
			}
		})
	}
}
