package doctest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A document's blocks run as one shell session: a block with the file
// directive is saved where the session is, as the reader saves it, and a
// server started in the background runs on for the blocks after it, and
// is killed when the document is done (docs/stepca.md's recipe saves
// ca.json, and runs pkbf serve and step-ca across its blocks).
func TestSessionFilesAndBackground(t *testing.T) {
	src := "```console\n$ mkdir sub && cd sub\n```\n\n" +
		"<!-- doctest: file ca.json -->\n```json\n{\"a\": \"$HOME `x`\"}\n```\n\n" +
		"```console\n$ cat ca.json\n{\"a\": \"$HOME `x`\"}\n$ sleep 300 >/dev/null 2>&1 & echo $! >sleep.pid\n```\n\n" +
		"```console\n$ kill -0 $(cat sleep.pid) && echo running\nrunning\n```\n"
	blocks, err := Parse("d.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d := &doc{t: t, dir: dir, copy: filepath.Join(dir, "copy"), bin: filepath.Join(dir, "bin"), mark: fmt.Sprintf("PKBF_DOCTEST=test-%d", time.Now().UnixNano())}
	if err := os.Mkdir(d.copy, 0o755); err != nil {
		t.Fatal(err)
	}
	d.run(blocks)
	if d.ran != 5 {
		t.Errorf("%d commands and files run, want 5", d.ran)
	}
	b, err := os.ReadFile(filepath.Join(d.copy, "sub", "sleep.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the background process is gone before the document is done: %v", err)
	}
	killMarked(d.mark)
	for i := 0; syscall.Kill(pid, 0) == nil; i++ {
		if i == 100 { // a zombie until init reaps it; /proc then says so
			if stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); strings.Contains(string(stat), ") Z ") {
				break
			}
			t.Fatalf("the background process %d still runs after the document", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
