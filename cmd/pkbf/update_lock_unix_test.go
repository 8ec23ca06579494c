//go:build unix

package main

import (
	"bufio"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cespare/xxhash/v2"
	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
)

// Issue 48, item 6: pkbf add running during pkbf update lost its key:
// update compared the installed filter's bits, then renamed the new
// filter over it, and a key added in place between the two went with the
// old file while both commands said all was well. Update takes the
// filter's flock(2) around its last check and the rename now, so a key
// add reports added is in the filter installed after, or update refuses
// the new filter (it lacks the key), or add says that the filter was
// replaced under it. Real processes race on one file, at random moments:
// the moment that lost keys is narrow (main lost one key in 40 rounds
// here), and TestUpdateWaitsForAddersLock holds it still.
func TestUpdateRacingAddKeepsKeys(t *testing.T) {
	pub := testkit.NewPublisher(t)
	old := updateClient
	updateClient = pub.Client()
	t.Cleanup(func() { updateClient = old })
	certFile := testkit.WritePEM(t, t.TempDir(), "server.pem", "CERTIFICATE", pub.Certificate().Raw)
	t.Setenv("SSL_CERT_FILE", certFile)

	const l = 24 // 2 MiB: the comparison takes a moment
	base := time.Now().Add(-time.Hour)
	v1, v2 := publishedAt(t, 1, l, 100, base), publishedAt(t, 2, l, 200, base.Add(time.Minute))
	keyDir := t.TempDir()
	rng := rand.New(rand.NewPCG(48, 6))
	rounds, addsPerRound := 12, 3
	if testing.Short() {
		rounds = 4
	}
	lost, kept, refused, replaced := 0, 0, 0, 0
	for round := range rounds {
		dir := t.TempDir()
		path := filepath.Join(dir, "f.pkbf")
		pub.Publish("f.pkbf", v1, base)
		if r := runWith(t, nil, "update", "--quiet", pub.FileURL("f.pkbf"), path); r.code != 0 {
			t.Fatal(r)
		}
		pub.Publish("f.pkbf", v2, base.Add(time.Minute))
		update := pkbfProcess("update", pub.FileURL("f.pkbf"), path)
		var updateOut strings.Builder
		update.Stdout, update.Stderr = &updateOut, &updateOut
		if err := update.Start(); err != nil {
			t.Fatal(err)
		}
		// Adds started at random moments over the update's run, one key each.
		type adder struct {
			cmd  *exec.Cmd
			out  *strings.Builder
			spki []byte
		}
		var adds []adder
		start := time.Now()
		for i := range addsPerRound {
			time.Sleep(time.Until(start.Add(time.Duration(rng.IntN(200)) * time.Millisecond)))
			keyFile, spki := edKeyFile(t, keyDir, round*addsPerRound+i)
			a := adder{pkbfProcess("add", path, keyFile), &strings.Builder{}, spki}
			a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
			if err := a.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			adds = append(adds, a)
		}
		updateCode := exitCode(t, update)
		codes := make([]int, len(adds))
		for i, a := range adds {
			codes[i] = exitCode(t, a.cmd)
		}
		f, err := pkbf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range adds {
			has := f.Probably(a.spki)
			switch {
			case codes[i] == 0 && !has:
				lost++
				t.Errorf("round %d: add said the key was added, and it is not in the filter; update exit %d: %s", round, updateCode, updateOut.String())
			case codes[i] == 0 && updateCode != 0:
				refused++
				if !strings.Contains(updateOut.String(), "refused") {
					t.Errorf("round %d: update exit %d: %s", round, updateCode, updateOut.String())
				}
			case codes[i] == 0:
				kept++
			case strings.Contains(a.out.String(), "replaced"):
				replaced++
			default:
				t.Errorf("round %d: add exit %d: %s", round, codes[i], a.out.String())
			}
		}
		f.Close()
	}
	t.Logf("%d rounds of %d adds: key in the new filter %d, new filter refused %d, add told of the replacement %d, key lost %d", rounds, addsPerRound, kept, refused, replaced, lost)
}

// edKeyFile writes a new Ed25519 public key to a PEM file in dir and
// returns the file and the key's SPKI.
func edKeyFile(t *testing.T, dir string, i int) (string, []byte) {
	t.Helper()
	pubKey, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(pubKey)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, fmt.Sprintf("key%d.pem", i))
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, spki
}

// Issue 48, item 6, step by step: a writer following the reference's lock
// protocol (the gem's add: flock(2) LOCK_EX on the filter, the key's bits,
// the header) holds the lock when pkbf update is ready to install. Update
// waits for it and then sees the key: the new filter, which lacks it, is
// refused. (Update used to rename the new filter over the old one while
// the writer held the lock, and the key went with the old file.)
func TestUpdateWaitsForAddersLock(t *testing.T) {
	pub := testkit.NewPublisher(t)
	t.Setenv("SSL_CERT_FILE", testkit.WritePEM(t, t.TempDir(), "server.pem", "CERTIFICATE", pub.Certificate().Raw))
	base := time.Now().Add(-time.Hour)
	path := filepath.Join(t.TempDir(), "f.pkbf")
	pub.Publish("f.pkbf", publishedAt(t, 1, 16, 100, base), base)
	if r := exitCode(t, startedProcess(t, "update", "--quiet", pub.FileURL("f.pkbf"), path)); r != 0 {
		t.Fatalf("the first update: exit %d", r)
	}
	pub.Publish("f.pkbf", publishedAt(t, 2, 16, 200, base.Add(time.Minute)), base.Add(time.Minute))

	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if err := unix.Flock(int(file.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	update := pkbfProcess("update", pub.FileURL("f.pkbf"), path)
	var stdout strings.Builder
	update.Stdout = &stdout
	stderr, err := update.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := update.Start(); err != nil {
		t.Fatal(err)
	}
	// Until update waits for the lock, or ends without it.
	var said strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		said.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "waiting for the lock on") {
			break
		}
	}
	_, spki := edKeyFile(t, t.TempDir(), 0)
	addUnderLock(t, file, spki)
	unix.Flock(int(file.Fd()), unix.LOCK_UN)
	io.Copy(&said, stderr)
	code := exitCode(t, update)
	f, err := pkbf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !f.Probably(spki) && (code == 0 || !strings.Contains(said.String(), "refused")) {
		t.Fatalf("the key added under the lock is lost: update exit %d: %s%s", code, stdout.String(), said.String())
	}
	// The key made the installed filter newer than the publisher's, and
	// the publisher's lacks it: refused.
	if code != 2 || !strings.Contains(said.String(), "refused") {
		t.Errorf("update exit %d, want 2 and the new filter refused: %s", code, said.String())
	}
}

// startedProcess starts the pkbf command as a process.
func startedProcess(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := pkbfProcess(args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// positions are the bits of spki in a filter with header h, as the format
// defines them (pkbf.Header's documentation): f_i = h1 + i·h2 + (i³-i)/6
// mod 2^L, in wrapping arithmetic, h1 and h2 XXH64 under seeds 0 and 1,
// h2 made odd.
func positions(h pkbf.Header, spki []byte) []uint64 {
	d := xxhash.NewWithSeed(1)
	d.Write(spki)
	h1, h2 := xxhash.Sum64(spki), d.Sum64()|1
	var out []uint64
	for i := range uint64(h.HashCount) {
		out = append(out, (h1+i*h2+(i*i*i-i)/6)&(h.Bits()-1))
	}
	return out
}

// addUnderLock adds spki to the filter file as the reference does, the
// lock already held: its bits, then the header's count and time.
func addUnderLock(t *testing.T, file *os.File, spki []byte) {
	t.Helper()
	hdr := make([]byte, pkbf.HeaderSize)
	if _, err := file.ReadAt(hdr, 0); err != nil {
		t.Fatal(err)
	}
	h, err := pkbf.ParseHeader(hdr)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range positions(h, spki) {
		b := make([]byte, 1)
		off := int64(pkbf.HeaderSize + p/8)
		file.ReadAt(b, off)
		b[0] |= 0x80 >> (p % 8)
		if _, err := file.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
	h.EntryCount++
	h.Updated = time.Now().UTC().Truncate(time.Second)
	hdr, _ = h.AppendBinary(hdr[:0])
	if _, err := file.WriteAt(hdr, 0); err != nil {
		t.Fatal(err)
	}
	if err := file.Sync(); err != nil {
		t.Fatal(err)
	}
}
