package pkbfssh

import (
	"bytes"
	"os"
	"os/user"
	"path/filepath"
	"testing"
)

// A Log writes each message as one line with its level, as sshd shows a
// command's standard error; with syslog off it writes nowhere else.
func TestLog(t *testing.T) {
	var b bytes.Buffer
	l := NewLog(&b, "pkbf", "off")
	l.Log(true, "left out a line")
	l.Log(false, "refused a login")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if want := "pkbf: warning: left out a line\npkbf: error: refused a login\n"; b.String() != want {
		t.Errorf("%q, want %q", b.String(), want)
	}
}

// ReadFiles skips a missing file silently, as sshd does, keeps one that
// cannot be read with its error, and reads the rest in order.
func TestReadFiles(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	os.WriteFile(keys, []byte("# none\n"), 0o600)
	files := ReadFiles([]string{filepath.Join(dir, "missing"), dir, keys}, me, Options{IgnoreModes: true})
	if len(files) != 2 || files[0].Path != dir || files[0].Err == nil || files[0].Data != nil ||
		files[1].Path != keys || files[1].Err != nil || string(files[1].Data) != "# none\n" {
		t.Errorf("%+v", files)
	}
}
