//go:build unix

package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

// pkbfProcess returns the pkbf command as a real process: this test binary,
// which TestMain turns into the command.
func pkbfProcess(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"--"}, args...)...)
	cmd.Env = append(os.Environ(), "PKBF_RUN_AS_COMMAND=1")
	return cmd
}

// exitCode runs cmd to its end and returns its exit status; a death by
// signal fails the test.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Fatalf("pkbf died of %v", ws.Signal())
	}
	return ws.ExitStatus()
}

// A filter truncated (as cp of a smaller file does) while check reads keys
// from a pipe: the verdicts made before are printed, then an error that
// names the file and says what to do, exit 2; no SIGBUS, no Go stack.
func TestCheckFilterTruncatedUnderIt(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.pkbf")
	if r := runWith(t, nil, "create", "-hashes", "4", "-length", "20", p); r.code != 0 {
		t.Fatal(r)
	}
	if r := runWith(t, nil, "add", p, key("p256.pub")); r.code != 0 {
		t.Fatal(r)
	}
	cmd := pkbfProcess("check", p)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdin.Write(testkit.ReadFile(t, key("p256.pub")))
	lines := bufio.NewReader(out)
	first, err := lines.ReadString('\n') // the verdict streams out while input idles
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		stdin.Write(testkit.ReadFile(t, key("rsa2048.pub")))
		stdin.Write(testkit.ReadFile(t, key("ed25519.pub")))
	}
	stdin.Close()
	rest, _ := io.ReadAll(lines)
	stdout := bytes.NewBufferString(first + string(rest))
	code := exitCode(t, cmd)
	// The hit found before the filter failed is real: a hit wins (exit 1),
	// and the failure is said on stderr.
	if code != exitFound || !strings.HasPrefix(stdout.String(), "probably") ||
		!strings.Contains(stderr.String(), p+" was truncated or changed while in use") ||
		!strings.Contains(stderr.String(), "renaming a new file over them") || strings.Contains(stderr.String(), "goroutine") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// The filter changed while add adds keys from a pipe: add says so and
// exits 2, instead of reporting success for keys that went to the old, now
// nameless, file, or dying of the fault of a file cut short under it.
func TestAddFilterChangedUnderIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, p string)
		want   string
	}{
		{"renamed over", func(t *testing.T, p string) {
			tmp := filepath.Join(filepath.Dir(p), "new.pkbf")
			if err := pkbf.Create(tmp, 4, 20); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}, "was replaced by another file"},
		{"truncated", func(t *testing.T, p string) {
			if err := os.Truncate(p, pkbf.HeaderSize); err != nil {
				t.Fatal(err)
			}
		}, "was truncated or changed while in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f.pkbf")
			if r := runWith(t, nil, "create", "-hashes", "4", "-length", "20", p); r.code != 0 {
				t.Fatal(r)
			}
			cmd := pkbfProcess("add", p)
			stdin, _ := cmd.StdinPipe()
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			stdin.Write(testkit.ReadFile(t, key("p256.pub")))
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				if b, err := os.ReadFile(p); err == nil && len(b) > 21 && b[21] > 0 {
					break // the key is in: add has the file open
				}
				if time.Now().After(deadline) {
					t.Fatal("add did not add the first key")
				}
			}
			tc.change(t, p)
			stdin.Write(testkit.ReadFile(t, key("rsa2048.pub")))
			stdin.Close()
			code := exitCode(t, cmd)
			if code != exitTrouble || !strings.Contains(stderr.String(), tc.want) || strings.Contains(stdout.String(), "new entries") {
				t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
		})
	}
}

// A FIFO as the filter: info and check answer at once when nobody writes
// it, and read it as a stream when somebody does (pkbf info < f works the
// same way through /dev/stdin).
func TestFilterFromFIFOAndStdin(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	for _, args := range [][]string{{"info", fifo}, {"check", fifo, key("p256.pub")}} {
		cmd := pkbfProcess(args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan int, 1)
		go func() { done <- exitCode(t, cmd) }()
		select {
		case code := <-done:
			if code != exitTrouble || !strings.Contains(stderr.String(), "FIFO") {
				t.Errorf("%s on a FIFO with no writer: exit %d, %s", args[0], code, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%s on a FIFO with no writer hangs", args[0])
		}
	}
	filter := testkit.ReadFile(t, "../../testdata/example.pkbf")
	cmd := pkbfProcess("info", "/dev/stdin")
	cmd.Stdin = io.MultiReader(bytes.NewReader(filter)) // a pipe, not a file
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hash count (k)") {
		t.Errorf("info /dev/stdin from a pipe: %v\n%s", err, out)
	}
}

// Ctrl-C while check waits for more input: the verdicts made are printed,
// a summary says it was interrupted, exit 130.
func TestCheckInterrupted(t *testing.T) {
	cmd := pkbfProcess("check", exampleFilter)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(out)
	for i := range 3 {
		stdin.Write(testkit.ReadFile(t, key("p384.pub")))
		if _, err := lines.ReadString('\n'); err != nil { // streamed as made
			t.Fatalf("verdict %d: %v", i+1, err)
		}
	}
	cmd.Process.Signal(os.Interrupt) // the input stays open: check is blocked reading it
	rest, _ := io.ReadAll(lines)
	code := exitCode(t, cmd)
	stdin.Close()
	if code != exitSignaled || len(rest) != 0 || !strings.Contains(stderr.String(), "pkbf: interrupted: checked 3 keys: 0 probably, 3 no") {
		t.Errorf("exit %d, more output %q, stderr %q", code, rest, stderr.String())
	}
}

// The text output through awk, as the README shows it: the padding that
// lined up columns made $1 "no      " and matched nothing.
func TestCheckThroughAwk(t *testing.T) {
	if _, err := exec.LookPath("awk"); err != nil {
		t.Skip("no awk here")
	}
	script := `"$0" -- check -q "$1" "$2" "$3" | awk -F'\t' '$1=="no" { print $3 }'`
	cmd := exec.Command("sh", "-c", script, os.Args[0], exampleFilter, key("p384.pub"), key("p256.pub"))
	cmd.Env = append(os.Environ(), "PKBF_RUN_AS_COMMAND=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), key("p384.pub")+": line 1\n"; got != want {
		t.Errorf("awk printed %q, want %q", got, want)
	}
}
