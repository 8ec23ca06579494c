//go:build unix

package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

// An interrupted add stops between keys and leaves a valid filter whose
// count is what it reported.
func TestAddInterrupted(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.pkbf")
	if r := runWith(t, nil, "create", "-hashes", "4", "-length", "16", p); r.code != 0 {
		t.Fatal(r)
	}
	pr, pw := io.Pipe()
	go func() { // an endless, slow stream of distinct keys
		for i := 0; ; i++ {
			line := fmt.Sprintf("%s\n", testkit.ReadFile(t, key("ed25519.pub")))
			if i%2 == 1 {
				line = string(testkit.ReadFile(t, key("p256.pub")))
			}
			if _, err := io.WriteString(pw, line); err != nil {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	defer pw.Close()
	go func() { // interrupt once keys have gone in
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if b, err := os.ReadFile(p); err == nil && len(b) > 21 && b[21] >= 3 { // both keys in, under 3 entries
				break
			}
		}
		syscall.Kill(os.Getpid(), syscall.SIGINT)
	}()
	r := runWith(t, pr, "add", p)
	if r.code != exitSignaled || !strings.Contains(r.stderr, "interrupted") {
		t.Fatalf("interrupted add: %+v", r)
	}
	f, err := pkbf.Open(p)
	if err != nil {
		t.Fatalf("filter after an interrupted add: %v", err)
	}
	defer f.Close()
	if h := f.Header(); !strings.Contains(r.stdout, fmt.Sprintf("%d entries, revision 1", h.EntryCount)) || h.EntryCount != 3 {
		t.Errorf("file has %d entries; add said %q (the stream repeats one Ed25519 and one P-256 key: 3 entries)", h.EntryCount, r.stdout)
	}
}

// An interrupted merge stops between chunks, even while an input is slow
// to come, leaving the output as it was and no temporary file.
func TestMergeInterrupted(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.pkbf")
	if r := runWith(t, nil, "create", "-k", "2", "-l", "30", big); r.code != 0 { // 128 MiB of data
		t.Fatal(r)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	out := filepath.Join(dir, "out.pkbf")
	os.WriteFile(out, []byte("old"), 0o644)
	// The writer's end is open before merge opens the FIFO (O_RDWR does
	// not wait for a reader on Linux), as a FIFO with no writer is an
	// error at once.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() { // the FIFO gives a filter slowly, until the reader leaves
		defer w.Close()
		hdr := testkit.ReadFile(t, big)[:pkbf.HeaderSize]
		if _, err := w.Write(hdr); err != nil {
			return
		}
		chunk := make([]byte, 64<<10)
		for i := 0; ; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			if i == 32 { // 2 MiB in: the merge is under way
				syscall.Kill(os.Getpid(), syscall.SIGINT)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	r := runWith(t, nil, "merge", "--force", out, big, fifo)
	w.Close() // the writer stops
	if r.code != exitSignaled || !strings.Contains(r.stderr, "interrupted: "+out+" was not written") {
		t.Fatalf("interrupted merge: %+v", r)
	}
	if b := testkit.ReadFile(t, out); string(b) != "old" {
		t.Error("an interrupted merge changed the output")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// Issue 43, item 6: pkbf nix check handles Ctrl-C as the other commands
// and pkbf-ct do: it says it was interrupted and exits 130, whether the
// interrupt comes while the cache's filter is fetched or while a path is
// confirmed (it exited 2, with "pkbf: error: nixbloom: Get ...: interrupt
// signal received"). Its --timeout still exits 2: a cache that did not
// answer is no interruption.
func TestNixCheckInterrupted(t *testing.T) {
	filter := nixTestFilter(t, nixTestPath)
	for _, tc := range []struct {
		name, hang string
		args       []string
		code       int
	}{
		{"while fetching the filter", "/nix-cache-info", nil, exitSignaled},
		{"while confirming a path", "/" + nixTestHash + ".narinfo", []string{"--confirm"}, exitSignaled},
		{"timeout, no interrupt", "/nix-cache-info", []string{"--timeout", "200ms"}, exitTrouble},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := make(chan struct{}, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == tc.hang:
					asked <- struct{}{}
					<-r.Context().Done()
				case r.URL.Path == "/nix-cache-info":
					io.WriteString(w, "StoreDir: /nix/store\nBloomFilter: f.nixbloom\n")
				case r.URL.Path == "/f.nixbloom":
					w.Write(filter)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			if tc.code == exitSignaled {
				go func() {
					<-asked
					syscall.Kill(os.Getpid(), syscall.SIGINT)
				}()
			}
			r := runWith(t, nil, append(append([]string{"nix", "check"}, tc.args...), srv.URL, nixTestPath)...)
			interrupted := strings.Contains(r.stderr, "interrupted")
			if r.code != tc.code || interrupted != (tc.code == exitSignaled) {
				t.Errorf("exit %d, stderr %q; want %d and interrupted only for an interrupt", r.code, r.stderr, tc.code)
			}
		})
	}
}
