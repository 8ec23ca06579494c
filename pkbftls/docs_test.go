package pkbftls_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

// The programs docs/tls.md shows are examples/tls/server and
// examples/tls/client, verbatim; built and run here against each other on
// 127.0.0.1 they do what the page says: a clean client is greeted, a
// compromised one refused with the server's log naming the fingerprint,
// and a compromised server refused by the client, which exits 3.
func TestDocPrograms(t *testing.T) {
	doc := string(testkit.ReadFile(t, "../docs/tls.md"))
	for _, path := range []string{"../examples/tls/server/main.go", "../examples/tls/client/main.go"} {
		if !strings.Contains(doc, "```go\n"+string(testkit.ReadFile(t, path))+"```\n") {
			t.Errorf("docs/tls.md does not show %s as it is", path)
		}
	}
	if testing.Short() {
		t.Skip("-short: the programs are not built")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./examples/tls/server", "./examples/tls/client")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	p := pki(t)
	dir := t.TempDir()
	filter := filepath.Join(dir, "compromised.pkbf")
	writeFilter(t, filter, p.compromised()...)
	roots := filepath.Join(dir, "roots.pem")
	writePEM(t, roots, "CERTIFICATE", p.root.chain...)
	_, _, serverFull, serverKey := p.clean["p256"].files(t, dir)
	addr, serverLog := startProgram(t, filepath.Join(bin, "server"), filter, serverFull, serverKey, roots, "127.0.0.1:0")

	client := func(url string, id *identity) (string, int) {
		args := []string{filter, roots, url}
		if id != nil {
			_, _, full, key := id.files(t, dir)
			args = append(args, full, key)
		}
		out, err := run(t, "", filepath.Join(bin, "client"), args...)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out, ee.ExitCode()
		}
		return out, 0
	}
	url := "https://" + addr + "/"
	if out, code := client(url, p.clean["ed25519"]); code != 0 || out != "hello, CN=clean ed25519,O=pkbf tests\n" {
		t.Errorf("a clean client: exit %d, %q", code, out)
	}
	bad := p.bad["rsa"]
	// The server closes the refused connection with the client's request
	// unread (http.Server does), which can reset it before the client
	// reads the alert (docs/tls.md says so).
	if out, code := client(url, bad); code != 1 || !strings.Contains(out, "remote error: tls: bad certificate") && !strings.Contains(out, "connection reset by peer") {
		t.Errorf("a compromised client: exit %d, %q", code, out)
	}
	want := "http: TLS handshake error from 127.0.0.1:"
	refusal := ": pkbf: peer certificate 0 (CN=compromised rsa,O=pkbf tests) has a probably compromised key (SHA-256 of its SPKI " + bad.fingerprint() + ")\n"
	if !serverLog.waitFor(refusal, 1) || !strings.Contains(serverLog.String(), want) {
		t.Errorf("the server's log does not name the refused key:\n%s", serverLog.String())
	}

	badServer := p.bad["p256"]
	_, _, full, key := badServer.files(t, dir)
	addr, _ = startProgram(t, filepath.Join(bin, "server"), filter, full, key, roots, "127.0.0.1:0")
	out, code := client("https://"+addr+"/", p.clean["rsa"])
	if code != 3 || !strings.Contains(out, "pkbf: peer certificate 0 (CN=compromised p256,O=pkbf tests) has a probably compromised key (SHA-256 of its SPKI "+badServer.fingerprint()+")") {
		t.Errorf("a compromised server: exit %d, %q", code, out)
	}
}

// startProgram starts a server program that logs "listening on ADDR", and
// returns the address and its log; it is stopped when the test ends.
func startProgram(t *testing.T, name string, args ...string) (string, *syncBuffer) {
	t.Helper()
	log := &syncBuffer{}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if !log.waitFor("listening on ", 1) {
		t.Fatalf("%s did not start:\n%s", name, log.String())
	}
	_, rest, _ := strings.Cut(log.String(), "listening on ")
	addr, _, _ := strings.Cut(rest, "\n")
	return addr, log
}
