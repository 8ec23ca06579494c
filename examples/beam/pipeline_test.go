package pkbfbeam

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/fileio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
)

// pkbfCommand is the pkbf command, built from this repository for the tests.
var pkbfCommand string

func TestMain(m *testing.M) {
	beam.Init()
	dir, err := os.MkdirTemp("", "pkbfbeam-test-")
	if err != nil {
		panic(err)
	}
	pkbfCommand = filepath.Join(dir, "pkbf")
	if out, err := exec.Command("go", "build", "-o", pkbfCommand, "github.com/pkbf/pkbf/cmd/pkbf").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the pkbf command: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pkbfRun runs the pkbf command; exit codes in ok are not failures.
func pkbfRun(t testing.TB, ok []int, args ...string) string {
	t.Helper()
	cmd := exec.Command(pkbfCommand, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 || code != 0 && !contains(ok, code) {
		t.Fatalf("pkbf %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// genKeyFiles writes n generated keys to files in dir, in the forms users
// have: PEM SPKIs (EC points uncompressed and compressed), self-signed
// certificates, PKCS#8 private keys and authorized_keys lines, several
// files of each, and one file with a key no tool reads. It returns the
// files' paths.
func genKeyFiles(t testing.TB, dir string, n int) []string {
	t.Helper()
	var files []string
	bufs := map[string]*bytes.Buffer{}
	add := func(name string, b []byte) {
		if bufs[name] == nil {
			bufs[name] = new(bytes.Buffer)
			files = append(files, filepath.Join(dir, name))
		}
		bufs[name].Write(b)
	}
	for i := range n {
		var priv crypto.Signer
		var err error
		switch i % 5 {
		case 0, 1:
			priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		case 2:
			priv, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		case 3:
			_, priv, err = ed25519.GenerateKey(rand.Reader)
		case 4:
			if i%25 == 4 {
				priv, err = rsa.GenerateKey(rand.Reader, 1024)
			} else {
				priv, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		spki, err := x509.MarshalPKIXPublicKey(priv.Public())
		if err != nil {
			t.Fatal(err)
		}
		shard := i % 3
		switch i / 5 % 5 {
		case 0:
			add(fmt.Sprintf("spki%d.pem", shard), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}))
		case 1:
			if ec, ok := priv.Public().(*ecdsa.PublicKey); ok { // the compressed point form
				ecdhKey, _ := ec.ECDH()
				_, other, err := keys.Forms(nil, spki)
				if err != nil || ecdhKey == nil {
					t.Fatal(err)
				}
				spki = other
			}
			add(fmt.Sprintf("compressed%d.pem", shard), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}))
		case 2:
			tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 1)), Subject: pkix.Name{CommonName: fmt.Sprint("key ", i)},
				NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1e10, 0)}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, priv.Public(), priv)
			if err != nil {
				t.Fatal(err)
			}
			add(fmt.Sprintf("certs%d.pem", shard), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
		case 3:
			der, err := x509.MarshalPKCS8PrivateKey(priv)
			if err != nil {
				t.Fatal(err)
			}
			add(fmt.Sprintf("private%d.pem", shard), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		case 4:
			pub, err := ssh.NewPublicKey(priv.Public())
			if err != nil {
				t.Fatal(err)
			}
			add(fmt.Sprintf("authorized_keys%d", shard), append(bytes.TrimSpace(ssh.MarshalAuthorizedKey(pub)), fmt.Sprintf(" key %d\n", i)...))
		}
	}
	add("junk.pem", []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"))
	for i, name := range files {
		if err := os.WriteFile(name, bufs[filepath.Base(name)].Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files[i] = name
	}
	return files
}

func runPipeline(t testing.TB, p *beam.Pipeline) beam.PipelineResult {
	t.Helper()
	r, err := prism.Execute(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Build on the local runner makes the filter pkbf create and pkbf add
// make from the same files: the same bits.
func TestBuildMatchesAdd(t *testing.T) {
	dir := t.TempDir()
	files := genKeyFiles(t, filepath.Join(mkdir(t, dir, "keys")), 300)
	out := filepath.Join(dir, "beam.pkbf")
	p, s := beam.NewPipelineWithRoot()
	Build(s, 4, 14, out, Files(s, filepath.Join(dir, "keys", "*")))
	runPipeline(t, p)

	want := filepath.Join(dir, "pkbf.pkbf")
	pkbfRun(t, nil, "create", "--hashes", "4", "--length", "14", want)
	pkbfRun(t, []int{2}, append([]string{"add", want}, files...)...) // 2: junk.pem
	got, wantB := readFile(t, out), readFile(t, want)
	if !bytes.Equal(got[pkbf.HeaderSize:], wantB[pkbf.HeaderSize:]) {
		t.Fatal("the pipeline's filter has other bits than pkbf create + add on the same files")
	}
	gh, _ := pkbf.ParseHeader(got)
	wh, _ := pkbf.ParseHeader(wantB)
	if gh.HashCount != 4 || gh.HashLength != 14 || gh.EntryCount < wh.EntryCount || wh.EntryCount == 0 {
		t.Errorf("pipeline's header %+v; pkbf add's %+v", gh, wh)
	}
}

func mkdir(t testing.TB, parts ...string) string {
	dir := filepath.Join(parts...)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Check on the local runner gives pkbf check's verdict for every key, on
// a filter holding some of them.
func TestCheckMatchesCommand(t *testing.T) {
	dir := t.TempDir()
	files := genKeyFiles(t, mkdir(t, dir, "keys"), 300)
	filter := filepath.Join(dir, "f.pkbf")
	pkbfRun(t, nil, "create", "--hashes", "3", "--length", "16", filter)
	var some []string
	for _, f := range files {
		if strings.HasSuffix(f, "0.pem") || strings.HasSuffix(f, "keys1") {
			some = append(some, f)
		}
	}
	pkbfRun(t, nil, append([]string{"add", filter}, some...)...)

	out := filepath.Join(dir, "verdicts.jsonl")
	p, s := beam.NewPipelineWithRoot()
	WriteLines(s, out, Check(s, filter, Files(s, filepath.Join(dir, "keys", "*"))))
	r := runPipeline(t, p)

	got := verdicts(t, string(readFile(t, out)))
	want := verdicts(t, pkbfRun(t, []int{1, 2}, append([]string{"check", "--json", filter}, files...)...))
	if len(want) < 290 {
		t.Fatalf("pkbf check gave %d verdicts for 300 keys", len(want))
	}
	probably := 0
	for source, w := range want {
		if g := got[source]; !sameVerdict(g, w) {
			t.Errorf("%s: pipeline %s, pkbf check %s", source, g, w)
		}
		if w.Probably != nil && *w.Probably {
			probably++
		}
	}
	if len(got) != len(want) {
		t.Errorf("pipeline gave %d verdicts, pkbf check %d", len(got), len(want))
	}
	if probably == 0 || probably == len(want) {
		t.Errorf("%d of %d keys probably present: the test needs both verdicts", probably, len(want))
	}
	if c := counter(r, "keys_probably"); c != int64(probably) {
		t.Errorf("keys_probably counter %d, want %d", c, probably)
	}
	if c := counter(r, "keys_unreadable"); c != 1 {
		t.Errorf("keys_unreadable counter %d, want 1 (junk.pem)", c)
	}
}

// Verdict is a JSON verdict line, decoded to compare the pipeline's with
// pkbf check --json's.
type Verdict struct {
	Source                string `json:"source"`
	File                  string `json:"file"`
	Line                  int    `json:"line,omitempty"`
	Index                 int    `json:"index"`
	Offset                int64  `json:"offset"`
	Block                 int    `json:"block,omitempty"`
	Part                  string `json:"part,omitempty"`
	SSHFingerprint        string `json:"ssh_fingerprint,omitempty"`
	Comment               string `json:"comment,omitempty"`
	Fingerprint           string `json:"fingerprint,omitempty"`
	FingerprintAsGiven    string `json:"fingerprint_as_given,omitempty"`
	FingerprintNamedCurve string `json:"fingerprint_named_curve,omitempty"`
	Probably              *bool  `json:"probably,omitempty"`
	Error                 string `json:"error,omitempty"`
}

// sameVerdict compares two verdicts field by field.
func sameVerdict(a, b Verdict) bool {
	pa, pb := a.Probably, b.Probably
	a.Probably, b.Probably = nil, nil
	return a == b && (pa == nil) == (pb == nil) && (pa == nil || *pa == *pb)
}

func (v Verdict) String() string {
	b, _ := json.Marshal(v)
	return string(b)
}

// verdicts reads JSON lines into source -> verdict.
func verdicts(t testing.TB, lines string) map[string]Verdict {
	t.Helper()
	m := map[string]Verdict{}
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		var v Verdict
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if _, dup := m[v.Source]; dup {
			t.Fatalf("two verdicts for %s", v.Source)
		}
		m[v.Source] = v
	}
	return m
}

func counter(r beam.PipelineResult, name string) int64 {
	var sum int64
	for _, c := range r.Metrics().AllMetrics().Counters() {
		if c.Key.Name == name {
			sum += c.Committed
		}
	}
	return sum
}

// Partial filters that travel between workers (encoded, decoded) and merge
// in any grouping give the one filter of all the keys.
func TestBuildCombine(t *testing.T) {
	fn := &buildFn{HashCount: 5, HashLength: 12}
	dir := t.TempDir()
	var spkis [][]byte
	whole, _ := fn.CreateAccumulator()
	parts := make([]*partial, 3)
	for i := range parts {
		parts[i], _ = fn.CreateAccumulator()
	}
	for i := range 60 {
		var pems []byte
		for range 3 {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			spki, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
			spkis = append(spkis, spki)
			pems = append(pems, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki})...)
		}
		path := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(path, pems, 0o644); err != nil {
			t.Fatal(err)
		}
		file := fileio.ReadableFile{Metadata: fileio.FileMetadata{Path: path}}
		if _, err := fn.AddInput(parts[i%3], file); err != nil {
			t.Fatal(err)
		}
		fn.AddInput(whole, file)
	}
	for i, p := range parts {
		b, err := encodePartial(p)
		if err != nil {
			t.Fatal(err)
		}
		if parts[i], err = decodePartial(b); err != nil {
			t.Fatal(err)
		}
	}
	acc, _ := fn.MergeAccumulators(parts[2], parts[0])
	acc, _ = fn.MergeAccumulators(parts[1], acc)
	got, _ := fn.ExtractOutput(acc)
	want, _ := fn.ExtractOutput(whole)
	if !bytes.Equal(got[pkbf.HeaderSize:], want[pkbf.HeaderSize:]) {
		t.Fatal("merged partial filters differ from one filter of all the keys")
	}
	f, _ := pkbf.Parse(got)
	for _, spki := range spkis {
		if !keycheck.New(f, keycheck.Options{}).Contains(spki) {
			t.Fatal("a key added to a partial filter is missing from the merged one")
		}
	}
	if _, err := decodePartial([]byte("pkbfv1 but too short")); err == nil {
		t.Error("decodePartial of a broken filter: no error")
	}
	missing := fileio.ReadableFile{Metadata: fileio.FileMetadata{Path: filepath.Join(dir, "missing")}}
	if _, err := fn.AddInput(whole, missing); err == nil {
		t.Error("AddInput of a missing file: no error")
	}
}

// BenchmarkPipeline runs Check and Build on the local runner over 20000
// generated keys and reports keys/s, beside pkbf check and pkbf add on the
// same files.
func BenchmarkPipeline(b *testing.B) {
	dir := b.TempDir()
	files := genKeyFiles(b, mkdir(b, dir, "keys"), 20000)
	filter := filepath.Join(dir, "f.pkbf")
	pkbfRun(b, nil, "create", "--hashes", "3", "--length", "20", filter)
	b.Run("check/beam-prism", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			p, s := beam.NewPipelineWithRoot()
			WriteLines(s, filepath.Join(dir, fmt.Sprint("out", i)), Check(s, filter, Files(s, filepath.Join(dir, "keys", "*"))))
			runPipeline(b, p)
		}
		b.ReportMetric(20000*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
	})
	b.Run("check/pkbf-check", func(b *testing.B) {
		for b.Loop() {
			pkbfRun(b, []int{2}, append([]string{"check", "--json", filter}, files...)...)
		}
		b.ReportMetric(20000*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
	})
	b.Run("build/beam-prism", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			p, s := beam.NewPipelineWithRoot()
			Build(s, 3, 20, filepath.Join(dir, fmt.Sprint("built", i)), Files(s, filepath.Join(dir, "keys", "*")))
			runPipeline(b, p)
		}
		b.ReportMetric(20000*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
	})
	b.Run("build/pkbf-add", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			out := filepath.Join(dir, fmt.Sprint("added", i))
			pkbfRun(b, nil, "create", "--hashes", "3", "--length", "20", out)
			pkbfRun(b, []int{2}, append([]string{"add", out}, files...)...)
		}
		b.ReportMetric(20000*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
	})
}
