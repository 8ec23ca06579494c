//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pkbf/pkbf/internal/testkit"
)

// openPTY opens a pseudo-terminal: the master to read what is written to
// the terminal, the slave to write to as stderr.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open slave: %v", err)
	}
	return master, slave
}

// recordTerminal reads everything written to the terminal of master, and
// returns a function that, once the slave is closed, waits for the end of
// it and returns it.
func recordTerminal(t *testing.T, master *os.File) func() []byte {
	var stream bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&stream, master); close(done) }()
	return func() []byte {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("reading the terminal did not finish")
		}
		return stream.Bytes()
	}
}

// Under a terminal, a check that lasts long enough shows progress on
// stderr, erases it at the end, and never writes it to stdout.
func TestProgressOnTerminal(t *testing.T) {
	master, slave := openPTY(t)
	defer master.Close()
	defer setProgressTiming(20*time.Millisecond, 10*time.Millisecond)()
	screen := recordTerminal(t, master)

	pr, pw := io.Pipe()
	go slowWriter(pw, testkit.ReadFile(t, key("ed25519.pub")), 30, 10*time.Millisecond)
	var stdout bytes.Buffer
	code := run([]string{"check", exampleFilter}, pr, &stdout, slave)
	slave.Close()
	got := string(screen())
	if code != 1 || !strings.Contains(got, " keys, ") || !strings.Contains(got, " keys/s") || !strings.HasSuffix(got, "\r\x1b[Kpkbf: checked 30 keys: 30 probably, 0 no\r\n") {
		t.Errorf("exit %d; terminal showed %q; want progress lines, erased at the end", code, got)
	}
	if strings.Contains(got, "% of") {
		t.Errorf("progress shows a percentage for a pipe: %q", got)
	}
	if strings.Contains(stdout.String(), "keys/s") || strings.Count(stdout.String(), "\n") != 30 {
		t.Errorf("stdout %q", stdout.String())
	}
}

// renderTerminal plays a terminal's byte stream onto a screen of the given
// width, as a terminal would: carriage return, line feed, erase to the end
// of the line (ESC [ K) and automatic wrap at the right margin. It returns
// the logical lines: rows joined where the text wrapped.
func renderTerminal(stream []byte, width int) []string {
	type row struct {
		text    []rune
		wrapped bool // continues on the next row
	}
	rows := []row{{}}
	col := 0
	put := func(r rune) {
		if col == width {
			rows[len(rows)-1].wrapped = true
			rows = append(rows, row{})
			col = 0
		}
		cur := &rows[len(rows)-1]
		for len(cur.text) <= col {
			cur.text = append(cur.text, ' ')
		}
		cur.text[col] = r
		col++
	}
	s := string(stream)
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\r':
			col = 0
		case s[i] == '\n':
			rows = append(rows, row{})
			col = 0
		case strings.HasPrefix(s[i:], "\x1b[K"):
			cur := &rows[len(rows)-1]
			if col < len(cur.text) {
				cur.text = cur.text[:col]
			}
			i += 2
		default:
			put(rune(s[i]))
		}
	}
	var lines []string
	var cur strings.Builder
	for _, r := range rows {
		cur.WriteString(strings.TrimRight(string(r.text), " "))
		if !r.wrapped {
			lines = append(lines, cur.String())
			cur.Reset()
		}
	}
	return lines
}

// Progress and verdicts on one terminal of 40 columns, as in an interactive
// shell: every verdict line comes out whole, and no progress is left.
func TestProgressAndVerdictsShareATerminal(t *testing.T) {
	master, slave := openPTY(t)
	defer master.Close()
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 40}); err != nil {
		t.Skipf("set the terminal size: %v", err)
	}
	defer setProgressTiming(0, time.Millisecond)()
	terminal := recordTerminal(t, master)

	const n = 150
	pr, pw := io.Pipe()
	keys := [][]byte{testkit.ReadFile(t, key("ed25519.pub")), testkit.ReadFile(t, key("p384.pub"))}
	go func() {
		for i := range n {
			if _, err := pw.Write(keys[i%2]); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
		pw.Close()
	}()
	code := run([]string{"check", exampleFilter}, pr, slave, slave)
	slave.Close()
	stream := terminal()
	if !bytes.Contains(stream, []byte("keys/s")) {
		t.Fatal("no progress was shown: the test does not test anything")
	}
	lines := renderTerminal(stream, 40)
	verdict := regexp.MustCompile(`^(probably|no      )\t[0-9a-f]{64}\t<stdin>: line (\d+)\tSHA256:[A-Za-z0-9+/]{43}( .*)?$`)
	seen := 0
	for _, line := range lines {
		switch {
		case verdict.MatchString(line):
			seen++
		case line == "", strings.HasPrefix(line, "pkbf: checked 150 keys"):
		default:
			t.Errorf("garbled line on the terminal: %q", line)
		}
	}
	if code != exitFound || seen != n {
		t.Errorf("exit %d, %d whole verdict lines of %d", code, seen, n)
	}
}

// update shows its progress on a terminal (bytes, rate, time left), and
// erases it before its summary and before a retry's warning.
func TestUpdateProgressOnTerminal(t *testing.T) {
	master, slave := openPTY(t)
	defer master.Close()
	defer setProgressTiming(20*time.Millisecond, 10*time.Millisecond)()
	terminal := recordTerminal(t, master)
	pub := &publisher{delay: 2 * time.Millisecond}
	pub.set(publishedFilter(t, 1, 24, 10)) // 2 MiB in 32 KiB writes: about 130 ms
	ts := tlsServer(t, pub)
	t.Setenv(updateHeaderEnv, "X-Api-Key: k3y")
	var stdout bytes.Buffer
	p := filepath.Join(t.TempDir(), "f.pkbf")
	code := run([]string{"update", ts.URL, p}, nil, &stdout, slave)
	slave.Close()
	screen := terminal()
	got := renderTerminal(screen, 80)
	if code != 0 || !strings.Contains(string(screen), " of 2 MiB (") || !strings.Contains(string(screen), "/s, ") || !strings.Contains(string(screen), " left") {
		t.Errorf("exit %d; terminal showed %q; want progress with size, rate and time left", code, screen)
	}
	if len(got) != 1 || got[0] != "" {
		t.Errorf("the progress line was not erased at the end: %q", got)
	}
	if !strings.HasPrefix(stdout.String(), "updated: "+p+", revision none -> 1, 2 097 176 bytes") || strings.Contains(stdout.String(), "MiB/s") {
		t.Errorf("stdout %q", stdout.String())
	}
}
