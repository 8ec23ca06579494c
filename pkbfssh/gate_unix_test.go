//go:build unix

package pkbfssh

import (
	"bytes"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
)

// gateFiles returns the user running the test, a temporary directory and
// an empty filter in it.
func gateFiles(t *testing.T) (me *user.User, dir, filter string) {
	t.Helper()
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	filter = filepath.Join(dir, "f.pkbf")
	if err := pkbf.Create(filter, 4, 20); err != nil {
		t.Fatal(err)
	}
	return me, dir, filter
}

// Issue 43, item 1: with FailOpen, a filter that fails after the user's
// files were read (its file cut short while they were checked) passes on
// the lines read then: the files are read once, so a file that cannot be
// read is skipped, and logged, once.
func TestGateReadsFilesOnce(t *testing.T) {
	me, dir, filter := gateFiles(t)
	typ, b64 := testLine(t, "ed25519.pub")
	keys := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(keys, []byte(typ+" "+b64+" me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "not-a-file")
	if err := os.Mkdir(unreadable, 0o700); err != nil {
		t.Fatal(err)
	}
	defer func(open func(string) (*pkbf.Filter, error)) { openFilter = open }(openFilter)
	openFilter = func(path string) (*pkbf.Filter, error) {
		f, err := pkbf.Open(path)
		if err == nil {
			err = os.Truncate(path, pkbf.HeaderSize) // cut short under the Gate
		}
		return f, err
	}
	var logs []string
	g := &Gate{Filter: filter, FailOpen: true, Files: []string{unreadable, keys}, Options: Options{IgnoreModes: true},
		Log: func(_ bool, msg string) { logs = append(logs, msg) }}
	var out bytes.Buffer
	if err := g.AuthorizedKeys(&out, me.Username, nil); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(logs, "\n")
	if out.String() != typ+" "+b64+" me\n" || strings.Count(all, "skipping "+unreadable) != 1 || !strings.Contains(all, "keys passed on unchecked (fail open)") {
		t.Errorf("printed %q, logged:\n%s\nwant the key passed on, and the directory skipped once", out.String(), all)
	}
}

// F2 of the sshd gate review: without sshd's %t %k, a cert-authority line
// was printed when its CA key was clean, and sshd then let in every
// certificate the CA signed, one of a compromised key too. With no key
// offered, the Gate leaves each cert-authority line out, with a warning
// naming the file and line and asking for %t %k; a plain key line is
// checked and printed as before.
func TestGateCertAuthorityWithoutOfferedKey(t *testing.T) {
	me, dir, filter := gateFiles(t)
	typ, b64 := testLine(t, "ed25519.pub")
	caTyp, caB64 := testLine(t, "p256.pub")
	plain := typ + " " + b64 + " me"
	keys := filepath.Join(dir, "authorized_keys")
	file := plain + "\n" +
		"cert-authority " + caTyp + " " + caB64 + " ca\n" +
		`from="127.0.0.1,cert-authority" ` + plain + "\n"
	if err := os.WriteFile(keys, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs []string
	g := &Gate{Filter: filter, Files: []string{keys}, Options: Options{IgnoreModes: true},
		Log: func(_ bool, msg string) { logs = append(logs, msg) }}
	var out bytes.Buffer
	if err := g.AuthorizedKeys(&out, me.Username, nil); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(logs, "\n")
	want := plain + "\n" + `from="127.0.0.1,cert-authority" ` + plain + "\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant the plain key lines only:\n%s", out.String(), want)
	}
	if !strings.Contains(all, "left out "+keys+" line 2: cert-authority") || !strings.Contains(all, "%t %k") {
		t.Errorf("logged:\n%s\nwant line 2 named, and %%t %%k asked for", all)
	}
}
