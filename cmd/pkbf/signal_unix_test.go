//go:build unix

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
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
			line := fmt.Sprintf("%s\n", mustRead(t, key("ed25519.pub")))
			if i%2 == 1 {
				line = string(mustRead(t, key("p256.pub")))
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
