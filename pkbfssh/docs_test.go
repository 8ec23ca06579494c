package pkbfssh_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
)

// lockedBuffer is a bytes.Buffer a process writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The server docs/sshserver.md shows is examples/sshserver, verbatim; built
// and run on 127.0.0.1, OpenSSH's ssh client logs in to it with a clean
// key, and compromised RSA, ECDSA and Ed25519 keys, all in its
// authorized_keys file, are refused, each refusal logged with the
// fingerprint ssh-keygen -l gives the key.
func TestDocServer(t *testing.T) {
	doc := string(testkit.ReadFile(t, "../docs/sshserver.md"))
	if !strings.Contains(doc, "```go\n"+string(testkit.ReadFile(t, "../examples/sshserver/main.go"))+"```\n") {
		t.Error("docs/sshserver.md does not show examples/sshserver/main.go as it is")
	}
	if testing.Short() {
		t.Skip("-short: the server is not built")
	}
	requireOpenSSH(t, "/usr/bin/ssh", "/usr/bin/ssh-keygen")
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+"/", "./examples/sshserver")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	keygen := func(name string, args ...string) string {
		path := filepath.Join(dir, name)
		if out, err := exec.Command("ssh-keygen", append([]string{"-q", "-N", "", "-C", name, "-f", path}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return path
	}
	host := keygen("host", "-t", "ed25519")
	clean := keygen("clean", "-t", "ed25519")
	bad := []string{keygen("bad-rsa", "-t", "rsa", "-b", "2048"), keygen("bad-ecdsa", "-t", "ecdsa"), keygen("bad-ed25519", "-t", "ed25519")}
	var authorized []byte
	w, _ := pkbf.New(4, 16)
	for _, k := range append([]string{clean}, bad...) {
		pub := testkit.ReadFile(t, k+".pub")
		authorized = append(authorized, pub...)
		if k != clean {
			if _, err := keycheck.AddKey(w, pub); err != nil {
				t.Fatal(err)
			}
		}
	}
	filter, keysFile := filepath.Join(dir, "f.pkbf"), filepath.Join(dir, "authorized_keys")
	if err := w.WriteFile(filter); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keysFile, authorized, 0o600); err != nil {
		t.Fatal(err)
	}

	var log lockedBuffer
	srv := exec.Command(filepath.Join(dir, "sshserver"), filter, host, keysFile, "127.0.0.1:0")
	srv.Stdout, srv.Stderr = &log, &log
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	var addr string
	for deadline := time.Now().Add(20 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, rest, ok := strings.Cut(log.String(), "listening on "); ok && strings.Contains(rest, "\n") {
			addr, _, _ = strings.Cut(rest, "\n")
		}
	}
	if addr == "" {
		t.Fatalf("the server did not start:\n%s", log.String())
	}
	_, port, _ := strings.Cut(addr, ":")
	login := func(key string) (string, error) {
		out, err := exec.Command("ssh", "-i", key, "-p", port, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
			"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
			"alice@127.0.0.1", "true").CombinedOutput()
		return string(out), err
	}
	if out, err := login(clean); err != nil || out != "hello, alice\n" {
		t.Errorf("the clean key: %v, %q", err, out)
	}
	for _, k := range bad {
		out, err := login(k)
		if err == nil || !strings.Contains(out, "Permission denied") {
			t.Errorf("%s: %v, %q; want Permission denied", filepath.Base(k), err, out)
		}
		fp, err := exec.Command("ssh-keygen", "-l", "-f", k+".pub").Output()
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(fp)); len(f) < 2 || !strings.Contains(log.String(), fmt.Sprintf("refused: pkbf: user alice offered %s key %s: probably compromised", keyType(t, k), f[1])) {
			t.Errorf("the server's log does not name %s (%s):\n%s", filepath.Base(k), fp, log.String())
		}
	}
}

// keyType is the type name of the key file's .pub line.
func keyType(t *testing.T, key string) string {
	typ, _, _ := strings.Cut(string(testkit.ReadFile(t, key+".pub")), " ")
	return typ
}
