package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pkbf/pkbf/ct/cttest"
)

// build builds pkbf-ct into a temporary directory.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pkbf-ct")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building pkbf-ct: %v\n%s", err, out)
	}
	return bin
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1000
	}
	return 0
}

// serveStatic writes the fixture's entries as a Static CT log in a
// temporary directory's log/ and serves it on 127.0.0.1 until the test
// ends; it returns the directory and the server.
func serveStatic(t *testing.T, fx *cttest.Fixture) (dir string, srv *httptest.Server) {
	t.Helper()
	dir = t.TempDir()
	fx.WriteStatic(t, filepath.Join(dir, "log"), len(fx.Entries))
	srv = httptest.NewServer(http.FileServer(http.Dir(filepath.Join(dir, "log"))))
	t.Cleanup(srv.Close)
	return dir, srv
}

// hitIndexes reads the JSON hits of an output file.
func hitIndexes(t *testing.T, path string) []int64 {
	t.Helper()
	b, _ := os.ReadFile(path)
	var idx []int64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var h struct {
			Index       int64  `json:"index"`
			Fingerprint string `json:"fingerprint"`
		}
		if err := json.Unmarshal([]byte(line), &h); err != nil || h.Fingerprint == "" {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		idx = append(idx, h.Index)
	}
	return idx
}

// pkbf-ct killed with SIGKILL ten times at random moments, and resumed
// each time with the same state and output file, ends with the output of
// one uninterrupted run: no hit missed, none twice. SIGINT saves the
// position and exits 130.
func TestKilledAndResumed(t *testing.T) {
	bin := build(t)
	fx := cttest.NewFixture(t, 20000, 300, 113)
	dir, srv := serveStatic(t, fx)

	args := func(state, out string, extra ...string) []string {
		return append([]string{"--json", "--quiet", "--kind", "static", "--state", state, "--output", out}, append(extra, fx.Filter, srv.URL)...)
	}
	once := filepath.Join(dir, "once.jsonl")
	if err := exec.Command(bin, args(filepath.Join(dir, "once.state"), once)...).Run(); exitCode(err) != exitFound {
		t.Fatalf("one run: %v", err)
	}
	want := hitIndexes(t, once)
	var planted []int64
	for i := range fx.Planted {
		planted = append(planted, i)
	}
	slices.Sort(planted)
	if !slices.Equal(want, planted) {
		t.Fatalf("one run found %v\nwant %v", want, planted)
	}

	state, out := filepath.Join(dir, "killed.state"), filepath.Join(dir, "killed.jsonl")
	readState := func() (next, offset int64) { // where the next run starts, in the log and the output
		var st struct {
			Next  int64
			Extra struct {
				Offset int64 `json:"output_offset"`
			}
		}
		b, _ := os.ReadFile(state)
		json.Unmarshal(b, &st)
		return st.Next, st.Extra.Offset
	}
	next := func() int64 { n, _ := readState(); return n }
	unsaved := func() bool { // hits in the output that the state does not cover
		_, off := readState()
		fi, err := os.Stat(out)
		return err == nil && fi.Size() > off
	}
	r := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	// A kill counts when the run had moved the state on and not finished:
	// the next run resumes from the middle.
	kills, interrupts, unsavedKills := 0, 0, 0
	for run := 0; ; run++ {
		if run > 300 {
			t.Fatalf("no end after %d runs (%d kills)", run, kills)
		}
		// Slow enough to be killed midway: 100 requests a second.
		cmd := exec.Command(bin, args(state, out, "--rate", "100", "--parallel", "2", "--save-every", "300ms")...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		before := next()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		signal := syscall.SIGKILL
		if kills >= 10 && unsavedKills >= 2 {
			signal = syscall.SIGINT
		}
		// Kill it once it has moved the state on: in the middle of the
		// log, most often with hits written since the last save.
		var err error
		tick := time.NewTicker(5 * time.Millisecond)
	wait:
		for {
			select {
			case err = <-done:
				break wait
			case <-tick.C:
				if next() > before && (interrupts == 0 || kills < 10 || unsavedKills < 2) && (unsaved() || r.IntN(8) == 0) {
					if unsaved() {
						unsavedKills++
					}
					cmd.Process.Signal(signal)
					err = <-done
					break wait
				}
			}
		}
		tick.Stop()
		code, after := exitCode(err), next()
		switch {
		case code == -int(syscall.SIGKILL):
			if after > before && after < int64(len(fx.Entries)) {
				kills++
			}
			continue
		case signal == syscall.SIGINT && interrupts == 0 && code == exitSignaled && strings.Contains(stderr.String(), "interrupted"):
			interrupts++
			if !strings.Contains(stderr.String(), "interrupted: the next run goes on from entry") {
				t.Errorf("SIGINT: %s", stderr.String())
			}
			continue
		case code == exitOK || code == exitFound:
		default:
			t.Fatalf("run %d: exit %d\n%s", run, code, stderr.String())
		}
		if kills >= 10 && interrupts > 0 && unsavedKills >= 2 {
			break
		}
		// It finished too soon: start over.
		os.Remove(state)
		os.Remove(out)
		kills, interrupts, unsavedKills = 0, 0, 0
	}
	t.Logf("%d kills midway (%d of them with hits written since the last save), %d interrupt", kills, unsavedKills, interrupts)
	if got := hitIndexes(t, out); !slices.Equal(got, want) {
		t.Errorf("after %d kills and %d interrupts: hits %v\nwant %v", kills, interrupts, got, want)
	}
}

// On an RFC 6962 log, a SIGINT that arrives while a get-entries answer is
// half sent is an interruption (exit 130, the position saved), and a log
// whose entries do not match its tree head is a failure (exit 2, the
// roots named): the command tells the two apart, whatever words the
// client library puts around a cancelled request.
func TestRFC6962InterruptedOrFailed(t *testing.T) {
	bin := build(t)
	fx := cttest.NewFixture(t, 500, 50, 7)
	rs := cttest.NewRFC6962Server(t, fx)
	arrived := make(chan struct{}, 100)
	var stall atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !stall.Load() || !strings.Contains(r.URL.Path, "get-entries") {
			rs.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		rs.ServeHTTP(rec, r)
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes()[:rec.Body.Len()/2])
		w.(http.Flusher).Flush()
		select { // never blocks: the handler must reach its wait
		case arrived <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	dir := t.TempDir()
	run := func(name string, interrupt bool) (int, string) {
		cmd := exec.Command(bin, "--kind", "rfc6962", "--state", filepath.Join(dir, name+".state"), fx.Filter, srv.URL)
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
				t.Fatal("no get-entries request in a minute")
			}
			time.Sleep(50 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGINT)
		}
		return exitCode(cmd.Wait()), stderr.String()
	}

	stall.Store(true)
	if code, stderr := run("interrupted", true); code != exitSignaled || !strings.Contains(stderr, "interrupted: the next run goes on from entry 0") {
		t.Errorf("SIGINT during a body: exit %d\n%s", code, stderr)
	}
	stall.Store(false)
	rs.Tamper.Store(100 + 1)
	if code, stderr := run("tampered", false); code != exitTrouble || !strings.Contains(stderr, "do not match the tree head") || strings.Contains(stderr, "interrupted") {
		t.Errorf("a tampered log: exit %d\n%s", code, stderr)
	}
}

// Issue 41, item 10: the exit status is the table in the usage text and
// docs/ct.md, row by row: a complete scan 0 without a hit and 1 with
// hits, a failed one 2 and an interrupted one 130 whatever it found, and
// the hits a failed or interrupted scan printed stay in its output.
func TestExitStatus(t *testing.T) {
	bin := build(t)
	fx := cttest.NewFixture(t, 1000, 100, 97) // planted at 7, 104, 201, ...
	rs := cttest.NewRFC6962Server(t, fx)
	var mode atomic.Value // how get-entries is answered
	mode.Store("")
	arrived := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start, _ := strconv.Atoi(r.FormValue("start"))
		if strings.HasSuffix(r.URL.Path, "get-entries") {
			switch m := mode.Load().(string); {
			case m == "refused":
				http.Error(w, "no", http.StatusBadRequest)
				return
			case m == "half a body":
				rec := httptest.NewRecorder()
				rs.ServeHTTP(rec, r)
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes()[:rec.Body.Len()/2])
				w.(http.Flusher).Flush()
				<-r.Context().Done()
				return
			case m == "stall" || m == "stall after 256" && start >= 256:
				select { // never blocks: the handler must reach its wait
				case arrived <- struct{}{}:
				default:
				}
				<-r.Context().Done()
				return
			}
		}
		rs.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	all := len(fx.Planted)
	for _, row := range []struct {
		name, mode string
		tamper     int64 // an entry served other than the tree has it, +1
		args       []string
		interrupt  bool
		code       int
		hits       int // printed
		stderr     string
		next       int64 // a state to start from, if not 0
	}{
		{"complete, no hit", "", 0, []string{"--to", "7"}, false, exitOK, 0, "0 hits", 0},
		{"complete, hits", "", 0, nil, false, exitFound, all, fmt.Sprintf("%d hits", all), 0},
		{"failed, no hit", "refused", 0, nil, false, exitTrouble, 0, "400 Bad Request", 0},
		// The hits of entry 901's batch (783, 880, 977) fail its proof:
		// held back.
		{"failed, hits", "", 901, nil, false, exitTrouble, all - 3, "do not match the tree head", 0},
		{"failed: --response-timeout", "half a body", 0, []string{"--response-timeout", "300ms"}, false, exitTrouble, 0, "the response body took longer than the 300ms limit", 0},
		{"failed: --max-response", "", 0, []string{"--max-response", "1000"}, false, exitTrouble, 0, "the response body is over the 1000-byte limit", 0},
		{"failed: a state past the tree", "", 0, nil, false, exitTrouble, 0, "would start at entry 99999999999 (the next entry in", 99999999999},
		{"interrupted, no hit", "stall", 0, nil, true, exitSignaled, 0, "interrupted: the next run goes on from entry 0", 0},
		{"interrupted, hits", "stall after 256", 0, nil, true, exitSignaled, 3, "interrupted", 0},
	} {
		t.Run(row.name, func(t *testing.T) {
			mode.Store(row.mode)
			rs.Tamper.Store(row.tamper)
			for len(arrived) > 0 {
				<-arrived
			}
			out, state := filepath.Join(dir, row.name+".jsonl"), filepath.Join(dir, row.name+".state")
			if row.next != 0 {
				os.WriteFile(state, fmt.Appendf(nil, `{"log": %q, "next": %d}`, srv.URL, row.next), 0o644)
			}
			args := append([]string{"--json", "--kind", "rfc6962", "--parallel", "1", "--state", state, "--output", out}, row.args...)
			cmd := exec.Command(bin, append(args, fx.Filter, srv.URL)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if row.interrupt {
				select {
				case <-arrived:
				case <-time.After(time.Minute):
					cmd.Process.Kill()
					t.Fatal("no stalled request in a minute")
				}
				for row.hits > 0 && len(hitIndexes(t, out)) < row.hits { // printed before the stall
					time.Sleep(10 * time.Millisecond)
				}
				cmd.Process.Signal(syscall.SIGINT)
			}
			code := exitCode(cmd.Wait())
			if code != row.code || !strings.Contains(stderr.String(), row.stderr) {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, row.code, stderr.String())
			}
			if got := len(hitIndexes(t, out)); got != row.hits {
				t.Errorf("%d hits in the output, want %d", got, row.hits)
			}
		})
	}
}

// Issue 43, item 6: pkbf-ct takes its flags anywhere among the
// arguments, with one dash or two, "--" ending them, as pkbf does (it
// took them before FILTER only); FILTER may be - for standard input.
func TestFlagsAnywhere(t *testing.T) {
	bin := build(t)
	fx := cttest.NewFixture(t, 600, 60, 53)
	dir, srv := serveStatic(t, fx)
	filter, err := os.ReadFile(fx.Filter)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "--odd.pkbf"), filter, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		args  []string
		stdin bool
	}{
		{"flags first", []string{"--json", "--quiet", "--state", "a.state", fx.Filter, srv.URL}, false},
		{"flags last", []string{fx.Filter, srv.URL, "--json", "--quiet", "--state", "b.state"}, false},
		{"flags between, one dash", []string{"-quiet", fx.Filter, "-json", "-state", "c.state", srv.URL}, false},
		{"-- ends them", []string{"--json", "--quiet", "--state", "d.state", "--", "--odd.pkbf", srv.URL}, false},
		{"FILTER -", []string{"-", "--json", "--quiet", "--state", "e.state", srv.URL}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, c.args...)
			cmd.Dir = dir
			if c.stdin {
				cmd.Stdin = bytes.NewReader(filter)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if code := exitCode(cmd.Run()); code != exitFound {
				t.Fatalf("exit %d, want %d\n%s", code, exitFound, stderr.String())
			}
			out := filepath.Join(t.TempDir(), "hits.jsonl")
			os.WriteFile(out, stdout.Bytes(), 0o644)
			if got := hitIndexes(t, out); len(got) != len(fx.Planted) {
				t.Errorf("%d hits, want %d", len(got), len(fx.Planted))
			}
		})
	}
	cmd := exec.Command(bin, fx.Filter, "--bogus", srv.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if code := exitCode(cmd.Run()); code != exitTrouble || !strings.Contains(stderr.String(), "bogus") {
		t.Errorf("an unknown flag after FILTER: exit %d\n%s", code, stderr.String())
	}
}

// Issue 41 follow-up, F1: an entry whose key could not be read fails
// every run (exit 2, naming it), the ones with nothing new to read too,
// until a run with --acknowledge-unchecked drops it (before, the second
// run exited 0: the state had moved past it).
func TestUncheckedFailsUntilAcknowledged(t *testing.T) {
	bin := build(t)
	fx := cttest.NewFixture(t, 300, 30, 1000) // entry 7 planted
	fx.Entries[100] = cttest.Entry{DER: []byte{0x30, 0x03, 0x02, 0x01, 0x01}, Time: fx.Entries[100].Time}
	dir, srv := serveStatic(t, fx)
	state := filepath.Join(dir, "state.json")
	for _, run := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{nil, 2, "entry 100: not checked: the leaf's certificate has no TBSCertificate"},
		{nil, 2, "entry 100: not checked: an earlier run could not check it"},
		{nil, 2, "--acknowledge-unchecked drops it"},
		{[]string{"--acknowledge-unchecked"}, 0, "0 not checked"},
		{nil, 0, "0 not checked"},
	} {
		cmd := exec.Command(bin, append(run.args, "--state", state, "--output", filepath.Join(dir, "hits"), fx.Filter, srv.URL)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if code := exitCode(cmd.Run()); code != run.code || !strings.Contains(stderr.String(), run.stderr) {
			t.Errorf("pkbf-ct %v: exit %d, want %d with %q\n%s", run.args, code, run.code, run.stderr, stderr.String())
		}
	}
}

// Issue 43, item 7: a hit's JSON says where the key is as the text line
// does, as pkbf check's JSON source is its text's third field: "LOG:
// entry N (precertificate)", not the log's URL alone (the object's file
// is the URL). Compared on real outputs of both forms, hit by hit.
func TestHitJSONSourceIsTextSource(t *testing.T) {
	fx := cttest.NewFixture(t, 40, 20, 10)
	dir, srv := serveStatic(t, fx)
	out := func(name string, extra ...string) []string {
		var stdout, stderr bytes.Buffer
		args := append([]string{"--quiet", "--kind", "static", "--state", filepath.Join(dir, name+".state")}, append(extra, fx.Filter, srv.URL)...)
		if code := run(args, nil, &stdout, &stderr); code != exitFound {
			t.Fatalf("pkbf-ct %v: exit %d\n%s", args, code, stderr.String())
		}
		return strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	}
	text, js := out("text"), out("json", "--json")
	if len(text) != len(fx.Planted) || len(js) != len(text) {
		t.Fatalf("%d text hits, %d JSON hits, %d planted", len(text), len(js), len(fx.Planted))
	}
	for i := range text {
		var h struct {
			Source, File, Log string
			Index             int64
		}
		if err := json.Unmarshal([]byte(js[i]), &h); err != nil {
			t.Fatalf("%q: %v", js[i], err)
		}
		fields := strings.Split(text[i], "\t")
		if h.Source != fields[2] || h.File != srv.URL || h.Log != srv.URL {
			t.Errorf("hit %d: JSON source %q, file %q, log %q; the text line's source is %q, the log %q", h.Index, h.Source, h.File, h.Log, fields[2], srv.URL)
		}
	}
}

// A run killed after it wrote a hit and before its first save of the
// state, and resumed, reports every hit once: its state recorded the
// output's length before the first hit. Before, the first run saved
// nothing until --save-every, and the next appended its hits again after
// the killed run's. On both kinds of log.
func TestKilledBeforeFirstSave(t *testing.T) {
	bin := build(t)
	fx := cttest.NewFixture(t, 3000, 300, 37)
	_, static := serveStatic(t, fx)
	rfc := httptest.NewServer(cttest.NewRFC6962Server(t, fx))
	defer rfc.Close()
	for kind, url := range map[string]string{"static": static.URL, "rfc6962": rfc.URL} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			args := func(name string, extra ...string) []string {
				return append([]string{"--json", "--quiet", "--kind", kind, "--state", filepath.Join(dir, name+".state"),
					"--output", filepath.Join(dir, name+".jsonl")}, append(extra, fx.Filter, url)...)
			}
			if err := exec.Command(bin, args("once")...).Run(); exitCode(err) != exitFound {
				t.Fatalf("one run: %v", err)
			}
			want := hitIndexes(t, filepath.Join(dir, "once.jsonl"))
			// Slow, never saving: killed once it has written a hit.
			cmd := exec.Command(bin, args("killed", "--save-every", "1h", "--rate", "20", "--parallel", "1", "--batch", "32")...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(time.Minute); len(hitIndexes(t, filepath.Join(dir, "killed.jsonl"))) == 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("no hit written in a minute")
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
			if code := exitCode(cmd.Wait()); code != -int(syscall.SIGKILL) {
				t.Fatalf("the first run ended by itself (exit %d) before it was killed", code)
			}
			if err := exec.Command(bin, args("killed")...).Run(); exitCode(err) != exitFound {
				t.Fatalf("the resumed run: %v", err)
			}
			if got := hitIndexes(t, filepath.Join(dir, "killed.jsonl")); !slices.Equal(got, want) {
				t.Errorf("killed before its first save, then resumed: hits %v\nwant %v", got, want)
			}
		})
	}
}
