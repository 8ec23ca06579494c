package pkbf

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keys"
)

// derInput is one input holding the DER objects given, concatenated.
func derInput(objects [][]byte) iter.Seq[Input] {
	return bytesInput("der", bytes.Join(objects, nil))
}

func bytesInput(name string, b []byte) iter.Seq[Input] {
	return func(yield func(Input) bool) {
		yield(Input{Name: name, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }})
	}
}

// keyFiles returns every key file under testdata/keys.
func keyFiles(t *testing.T) []string {
	var files []string
	filepath.WalkDir(keysDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasSuffix(path, "MANIFEST") && !strings.HasSuffix(path, ".sh") {
			files = append(files, path)
		}
		return nil
	})
	if len(files) < 100 {
		t.Fatalf("only %d key files under %s", len(files), keysDir)
	}
	return files
}

// Check answers exactly as Contains, key by key, for every key file in
// every encoding, in any mode: inline and parallel, filters in and out
// of the caches; and says where each key was found.
func TestCheckAgreesWithContains(t *testing.T) {
	files := keyFiles(t)
	f, _ := New(4, 18)
	var spkis [][]byte
	seen := map[string]bool{}
	for _, path := range files {
		spki, err := SPKI(testkit.ReadFile(t, path))
		if err != nil {
			continue // several keys, or encrypted
		}
		spkis = append(spkis, spki)
		c, err := keys.Canonical(spki)
		if err != nil {
			c = spki
		}
		// Every other distinct key in the filter, in its canonical form.
		if fp := keys.Fingerprint(c); !seen[fp] {
			seen[fp] = true
			if len(seen)%2 == 0 {
				f.Add(c)
			}
		}
	}
	spkis = append(spkis, randomKeys(100, 4)...) // not SPKIs at all
	inputs := func(yield func(Input) bool) {
		for i, spki := range spkis {
			if !yield(Input{Name: fmt.Sprint(i), Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(spki)), nil }}) {
				return
			}
		}
	}
	for _, large := range []bool{false, true} {
		for _, workers := range []int{1, 3} {
			f.large = large
			hits, n := 0, 0
			for v := range f.Check(context.Background(), inputs, CheckOptions{Workers: workers}) {
				if v.Input != fmt.Sprint(n) {
					t.Fatalf("verdict %d is of input %q", n, v.Input)
				}
				want := f.Contains(spkis[n])
				if v.Err == nil && v.Probably != want {
					t.Fatalf("large %v, %d workers: key %d: Check %v, Contains %v", large, workers, n, v.Probably, want)
				}
				if v.Err != nil && want {
					t.Fatalf("key %d: an error (%v) for a key Contains finds", n, v.Err)
				}
				if v.Probably {
					hits++
				}
				n++
			}
			if n != len(spkis) || hits < 10 || hits > n-100 {
				t.Fatalf("%d verdicts for %d keys, %d hits: the test does not discriminate", n, len(spkis), hits)
			}
		}
	}
}

// The verdicts of every key file, read as the files they are, with
// inputs that cannot be read among them: in order, each key where the
// file has it, the same in both modes.
func TestCheckFilesInOrder(t *testing.T) {
	files := keyFiles(t)
	f, _ := New(3, 16)
	f.AddKey(testkit.ReadFile(t, filepath.Join(keysDir, "p256.pub")))
	names := append([]string{filepath.Join(t.TempDir(), "missing")}, files...)
	var runs [2][]string
	for i, workers := range []int{1, 0} {
		for v := range f.Check(context.Background(), Files(names...), CheckOptions{Workers: workers}) {
			line := v.Source() + " " + v.Status() + " " + v.Fingerprint
			if v.Err != nil {
				line += " " + v.Err.Error()
			}
			runs[i] = append(runs[i], line)
		}
	}
	if strings.Join(runs[0], "\n") != strings.Join(runs[1], "\n") {
		t.Fatal("inline and parallel runs differ")
	}
	if !strings.Contains(runs[0][0], "missing error  open ") {
		t.Errorf("first verdict %q, want the missing file's error", runs[0][0])
	}
	prev := ""
	for _, line := range runs[0] {
		file, _, _ := strings.Cut(line, ": ")
		if file < prev && !strings.Contains(file, "missing") {
			t.Fatalf("%s after %s: not in input order", file, prev)
		}
		prev = file
	}
	if len(runs[0]) < len(files) {
		t.Errorf("%d verdicts from %d files", len(runs[0]), len(files))
	}
}

// A key read from a pipe gets its verdict before the pipe ends: verdicts
// are not held back for a batch to fill.
func TestCheckStreamsFromAPipe(t *testing.T) {
	f, _ := New(3, 16)
	line := testkit.ReadFile(t, filepath.Join(keysDir, "p384.pub"))
	pr, pw := io.Pipe()
	defer pw.Close()
	in := func(yield func(Input) bool) {
		yield(Input{Name: "pipe", Open: func() (io.ReadCloser, error) { return pr, nil }})
	}
	go pw.Write(line)
	got := make(chan Verdict)
	go func() {
		for v := range f.Check(context.Background(), in, CheckOptions{}) {
			got <- v
		}
		close(got)
	}()
	select {
	case v := <-got:
		if v.Err != nil || v.Line != 1 {
			t.Fatalf("%+v", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no verdict while the pipe stays open")
	}
	pw.Close()
	for range got {
	}
}

// Leaving the loop early or cancelling the context stops Check; no
// goroutine is left but a read in progress, which ends with its input.
func TestCheckStops(t *testing.T) {
	f, _ := New(3, 16)
	key := testkit.ReadFile(t, filepath.Join(keysDir, "p384.pub"))
	many := bytes.Repeat(key, 5000)
	before := runtime.NumGoroutine()
	n := 0
	for range f.Check(context.Background(), bytesInput("many", many), CheckOptions{Workers: 4}) {
		if n++; n == 300 {
			break
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n = 0
	for range f.Check(ctx, bytesInput("many", many), CheckOptions{Workers: 4}) {
		if n++; n == 10 {
			cancel()
		}
	}
	if n >= 5000 {
		t.Errorf("%d verdicts after the context was cancelled at 10", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines before, %d after", before, after)
	}
}

// With FingerprintHitsOnly, the verdicts of keys the filter holds have
// their fingerprints, the same as without it, and the others none; the
// answers do not change. AddKeys ignores it.
func TestCheckFingerprintHitsOnly(t *testing.T) {
	files := keyFiles(t)
	f, _ := New(4, 18)
	for i, path := range files {
		if i%3 == 0 {
			f.AddKey(testkit.ReadFile(t, path))
		}
	}
	for _, workers := range []int{1, 2} {
		all := slices.Collect(f.Check(context.Background(), Files(files...), CheckOptions{Workers: workers}))
		hits := slices.Collect(f.Check(context.Background(), Files(files...), CheckOptions{Workers: workers, FingerprintHitsOnly: true}))
		if len(all) != len(hits) {
			t.Fatalf("%d verdicts, %d with FingerprintHitsOnly", len(all), len(hits))
		}
		probably := 0
		for i, a := range all {
			h := hits[i]
			if a.Probably != h.Probably || (a.Err == nil) != (h.Err == nil) || a.Source() != h.Source() {
				t.Fatalf("%s: %+v, with FingerprintHitsOnly %+v", a.Source(), a, h)
			}
			switch {
			case a.Probably:
				probably++
				if h.Fingerprint != a.Fingerprint || h.OtherFingerprint != a.OtherFingerprint || h.OtherLabel != a.OtherLabel || h.Fingerprint == "" {
					t.Errorf("%s: a hit's fingerprints %q %q, want %q %q", a.Source(), h.Fingerprint, h.OtherFingerprint, a.Fingerprint, a.OtherFingerprint)
				}
			case h.Fingerprint != "" || h.OtherFingerprint != "" || h.OtherLabel != "":
				t.Errorf("%s: not a hit, and fingerprints %q %q", a.Source(), h.Fingerprint, h.OtherFingerprint)
			}
		}
		if probably == 0 || probably == len(all) {
			t.Fatalf("%d of %d verdicts probably: the test proves nothing", probably, len(all))
		}
	}
	w, _ := New(4, 18)
	for v := range w.AddKeys(context.Background(), Files(files[0]), CheckOptions{FingerprintHitsOnly: true}) {
		if v.Err == nil && v.Fingerprint == "" {
			t.Errorf("AddKeys with FingerprintHitsOnly: %s has no fingerprint", v.Source())
		}
	}
}

// With Confirm, keys the filter holds are confirmed, others are not asked
// about; an answer that never came is "unconfirmed", never a "no".
func TestCheckConfirm(t *testing.T) {
	f, _ := New(3, 16)
	hit, miss, unsure := "p256.pub", "p384.pub", "rsa2048.pub"
	for _, name := range []string{hit, unsure} {
		f.AddKey(testkit.ReadFile(t, filepath.Join(keysDir, name)))
	}
	var body []byte
	for _, name := range []string{hit, miss, unsure} {
		body = append(body, testkit.ReadFile(t, filepath.Join(keysDir, name))...)
	}
	hitSPKI, _ := SPKI(testkit.ReadFile(t, filepath.Join(keysDir, hit)))
	asked := 0
	confirm := func(ctx context.Context, canonical []byte) (bool, error) {
		asked++
		if bytes.Equal(canonical, hitSPKI) {
			return true, nil
		}
		return false, errors.New("no answer")
	}
	var got []string
	for v := range f.Check(context.Background(), bytesInput("keys", body), CheckOptions{Workers: 1, Confirm: confirm}) {
		got = append(got, v.Status())
		if !strings.Contains(string(v.AppendJSON(nil)), `"verdict":"`+v.Status()+`"`) {
			t.Errorf("JSON lacks the verdict: %s", v.AppendJSON(nil))
		}
	}
	if strings.Join(got, " ") != "compromised no unconfirmed" || asked != 2 {
		t.Errorf("statuses %q after %d questions", got, asked)
	}
}

// AddKeys adds each key under every encoding, in order, and says how many
// were new; the filter then finds every one, as AddKey would have made it.
func TestAddKeys(t *testing.T) {
	files := keyFiles(t)
	w, _ := New(4, 18)
	ref, _ := New(4, 18)
	added, keysSeen := 0, 0
	for v := range w.AddKeys(context.Background(), Files(files...), CheckOptions{}) {
		if v.Err != nil {
			continue
		}
		keysSeen++
		added += v.Added
	}
	for _, path := range files {
		sc := keys.NewScanner(bytes.NewReader(testkit.ReadFile(t, path)))
		for sc.Scan() {
			k := sc.Key()
			if spki, err := k.SPKI(); err == nil {
				ref.AddKey(spki)
			}
		}
	}
	var a, b bytes.Buffer
	w.WriteTo(&a)
	ref.WriteTo(&b)
	if !bytes.Equal(a.Bytes()[HeaderSize:], b.Bytes()[HeaderSize:]) || w.Header().EntryCount != ref.Header().EntryCount || int(w.Header().EntryCount) != added {
		t.Errorf("AddKeys: %d entries, %d added; AddKey one by one: %d entries", w.Header().EntryCount, added, ref.Header().EntryCount)
	}
	if keysSeen < 100 {
		t.Errorf("only %d keys added", keysSeen)
	}
	for v := range w.Check(context.Background(), Files(files...), CheckOptions{}) {
		if v.Err == nil && !v.Probably {
			t.Errorf("%s: not found after AddKeys", v.Source())
		}
	}
}

// A run cancelled while batches are being looked up never yields a key
// that was not looked up: every key here is in the filter, so a "no"
// could only be a key dropped half done.
func TestCheckCancelledNeverSaysNo(t *testing.T) {
	line := testkit.ReadFile(t, filepath.Join(keysDir, "p256.pub"))
	f, _ := New(3, 16)
	f.AddKey(line)
	many := bytes.Repeat(line, 20000)
	for _, workers := range []int{1, 2, 8} {
		for stopAt := range 5 {
			ctx, cancel := context.WithCancel(context.Background())
			n := 0
			for v := range f.Check(ctx, bytesInput("many", many), CheckOptions{Workers: workers}) {
				if !v.Probably || v.Err != nil {
					t.Fatalf("%d workers, cancelled after %d: verdict %d is %q", workers, stopAt*100, n+1, v.Status())
				}
				if n++; n == stopAt*100 {
					cancel()
				}
			}
			cancel()
		}
	}
}

// Check allocates little a key: the keys' memory comes from batches it
// reuses (keys.Scanner.SetRawAlloc, Key.Forms into the batch's room), and
// a batch's fingerprints are one string. A program that leaves the
// collector at its default pays for what is allocated a key.
func TestCheckAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocations")
	}
	var pems []byte
	for _, name := range []string{"p256.cert.pem", "rsa2048.cert.pem", "p384.cert.pem", "ed25519.cert.pem"} {
		pems = append(pems, testkit.ReadFile(t, filepath.Join(keysDir, name))...)
	}
	input := bytes.Repeat(pems, 5000)
	f, _ := New(3, 16)
	check := func() int {
		n := 0
		for v := range f.Check(context.Background(), bytesInput("pems", input), CheckOptions{Workers: 2}) {
			if v.Err != nil {
				t.Fatal(v.Err)
			}
			n++
		}
		return n
	}
	check() // the pools warm up
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := check()
	runtime.ReadMemStats(&after)
	allocs := float64(after.Mallocs-before.Mallocs) / float64(n)
	bytesPerKey := float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
	if allocs > 0.5 || bytesPerKey > 600 {
		t.Errorf("%d PEM certificates: %.2f allocations, %.0f bytes a key", n, allocs, bytesPerKey)
	}
	t.Logf("%d PEM certificates: %.2f allocations, %.0f bytes a key", n, allocs, bytesPerKey)
}

// DER objects arriving through a pipe in writes of five and a half
// objects: each batch goes out between the reads of one object (the
// reader flushes before a read that may wait), whose memory was taken
// before it, and every key still gets its own verdict and fingerprint.
func TestCheckDERTrickle(t *testing.T) {
	var spkis [][]byte
	var want []string
	f, _ := New(3, 16)
	for i := range 300 {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		spki, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
		spkis, want = append(spkis, spki), append(want, keys.Fingerprint(spki))
		if i%3 == 0 {
			f.Add(spki)
		}
	}
	all := bytes.Join(spkis, nil)
	step := len(spkis[0])*11/2 + 1
	for _, workers := range []int{1, 2, 4} {
		pr, pw := io.Pipe()
		go func() {
			for b := all; len(b) > 0; b = b[min(step, len(b)):] {
				pw.Write(b[:min(step, len(b))])
			}
			pw.Close()
		}()
		in := func(yield func(Input) bool) {
			yield(Input{Name: "pipe", Open: func() (io.ReadCloser, error) { return pr, nil }})
		}
		i := 0
		for v := range f.Check(context.Background(), in, CheckOptions{Workers: workers}) {
			if v.Err != nil || v.Fingerprint != want[i] || v.Probably != (i%3 == 0) || v.Index != i+1 {
				t.Fatalf("%d workers: verdict %d: %+v, want fingerprint %s", workers, i+1, v, want[i])
			}
			i++
		}
		if i != len(spkis) {
			t.Fatalf("%d workers: %d verdicts for %d keys", workers, i, len(spkis))
		}
	}
}

// BenchmarkCheckOne times Check on one certificate at a time, inline, as
// a server checks a request, a lint a certificate or sshd a login, next
// to its floor: Key.Forms and Contains on the same certificate.
func BenchmarkCheckOne(b *testing.B) {
	cert := testkit.ReadFile(b, filepath.Join(keysDir, "p256.cert.der"))
	w, _ := New(3, 16)
	f := readOnly(b, w)
	in := bytesInput("cert", cert)
	b.Run("Check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for v := range f.Check(context.Background(), in, CheckOptions{Workers: 1}) {
				if v.Err != nil || v.Fingerprint == "" {
					b.Fatal(v.Err)
				}
			}
		}
	})
	b.Run("CheckKey", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if v := f.CheckKey(cert); v.Err != nil {
				b.Fatal(v.Err)
			}
		}
	})
	b.Run("Floor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			spki, err := SPKI(cert)
			if err != nil {
				b.Fatal(err)
			}
			f.Contains(spki)
			Fingerprint(spki)
		}
	})
}
