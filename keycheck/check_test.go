package keycheck

import (
	"bytes"
	"context"
	//lint:ignore SA1019 DSA keys as crypto/x509 reads them
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/internal/xxh64"
	"github.com/pkbf/pkbf/keys"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// Check answers exactly as Contains, key by key, for every key file in
// every encoding, in any mode: inline and parallel, on filters in the
// caches and past them (where ProbablyBatch works in rounds); and says
// where each key was found.
func TestCheckAgreesWithContains(t *testing.T) {
	files := keyFiles(t)
	small, large := newFilter(t, 4, 18), newFilter(t, 4, 26)
	var spkis [][]byte
	seen := map[string]bool{}
	for _, path := range files {
		spki, err := keys.SPKI(testkit.ReadFile(t, path))
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
				small.Add(c)
				large.Add(c)
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
	for _, w := range []*pkbf.Writable{small, large} {
		for _, workers := range []int{1, 3} {
			c := New(w, Options{Workers: workers})
			hits, n := 0, 0
			for v := range c.Check(t.Context(), inputs) {
				if v.Source.Input != fmt.Sprint(n) {
					t.Fatalf("verdict %d is of input %q", n, v.Source.Input)
				}
				want := c.Contains(spkis[n])
				if v.Err == nil && v.Probably != want {
					t.Fatalf("%d bits, %d workers: key %d: Check %v, Contains %v", w.Header().Bits(), workers, n, v.Probably, want)
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
	w := newFilter(t, 3, 16)
	mustAddKey(t, w, readKey(t, "p256.pub"))
	names := append([]string{filepath.Join(t.TempDir(), "missing")}, files...)
	var runs [2][]string
	for i, workers := range []int{1, 0} {
		for v := range New(w, Options{Workers: workers}).Check(t.Context(), Files(names...)) {
			line := v.Source.String() + " " + v.Status() + " " + v.Key.Fingerprint
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
	for _, line := range runs[0][1:] {
		file, _, _ := strings.Cut(line, ": ")
		if file < prev {
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
	c := New(newFilter(t, 3, 16), Options{})
	line := readKey(t, "p384.pub")
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write(line)
	got := make(chan Verdict)
	go func() {
		for v := range c.Check(context.Background(), pipeInput("pipe", pr)) {
			got <- v
		}
		close(got)
	}()
	select {
	case v := <-got:
		if v.Err != nil || v.Source.Line != 1 {
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
	c := New(newFilter(t, 3, 16), Options{Workers: 4})
	many := bytes.Repeat(readKey(t, "p384.pub"), 5000)
	before := runtime.NumGoroutine()
	n := 0
	for range c.Check(context.Background(), Bytes("many", many)) {
		if n++; n == 300 {
			break
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n = 0
	for range c.Check(ctx, Bytes("many", many)) {
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
	w := newFilter(t, 4, 18)
	for i, path := range files {
		if i%3 == 0 {
			AddKey(w, testkit.ReadFile(t, path))
		}
	}
	for _, workers := range []int{1, 2} {
		all := slices.Collect(New(w, Options{Workers: workers}).Check(t.Context(), Files(files...)))
		hits := slices.Collect(New(w, Options{Workers: workers, FingerprintHitsOnly: true}).Check(t.Context(), Files(files...)))
		if len(all) != len(hits) {
			t.Fatalf("%d verdicts, %d with FingerprintHitsOnly", len(all), len(hits))
		}
		probably := 0
		for i, a := range all {
			h := hits[i]
			if a.Probably != h.Probably || (a.Err == nil) != (h.Err == nil) || a.Source != h.Source {
				t.Fatalf("%s: %+v, with FingerprintHitsOnly %+v", a.Source, a, h)
			}
			switch {
			case a.Probably:
				probably++
				if h.Key != a.Key || h.Key.Fingerprint == "" {
					t.Errorf("%s: a hit's names %+v, want %+v", a.Source, h.Key, a.Key)
				}
			case h.Key.Fingerprint != "" || h.Key.OtherFingerprint != "" || h.Key.OtherLabel != "":
				t.Errorf("%s: not a hit, and fingerprints %+v", a.Source, h.Key)
			}
		}
		if probably == 0 || probably == len(all) {
			t.Fatalf("%d of %d verdicts probably: the test proves nothing", probably, len(all))
		}
	}
	for v := range AddKeys(t.Context(), newFilter(t, 4, 18), Files(files[0]), Options{FingerprintHitsOnly: true}) {
		if v.Err == nil && v.Key.Fingerprint == "" {
			t.Errorf("AddKeys with FingerprintHitsOnly: %s has no fingerprint", v.Source)
		}
	}
}

// With Confirm, keys the filter holds are confirmed, others are not asked
// about; an answer that never came is "unconfirmed", never a "no".
func TestCheckConfirm(t *testing.T) {
	w := newFilter(t, 3, 16)
	hit, miss, unsure := "p256.pub", "p384.pub", "rsa2048.pub"
	for _, name := range []string{hit, unsure} {
		mustAddKey(t, w, readKey(t, name))
	}
	var body []byte
	for _, name := range []string{hit, miss, unsure} {
		body = append(body, readKey(t, name)...)
	}
	hitSPKI, _ := keys.SPKI(readKey(t, hit))
	asked := 0
	confirm := func(ctx context.Context, canonical []byte) (bool, error) {
		asked++
		if bytes.Equal(canonical, hitSPKI) {
			return true, nil
		}
		return false, errors.New("no answer")
	}
	var got []string
	for v := range New(w, Options{Workers: 1, Confirm: confirm}).Check(t.Context(), Bytes("keys", body)) {
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
	w, ref := newFilter(t, 4, 18), newFilter(t, 4, 18)
	added, keysSeen := 0, 0
	for v, n := range AddKeys(t.Context(), w, Files(files...), Options{}) {
		if v.Err != nil {
			continue
		}
		keysSeen++
		added += n
	}
	for _, path := range files {
		sc := keys.NewScanner(bytes.NewReader(testkit.ReadFile(t, path)))
		for sc.Scan() {
			k := sc.Key()
			if spki, err := k.SPKI(); err == nil {
				AddKey(ref, spki)
			}
		}
	}
	var a, b bytes.Buffer
	w.WriteTo(&a)
	ref.WriteTo(&b)
	if !bytes.Equal(a.Bytes()[pkbf.HeaderSize:], b.Bytes()[pkbf.HeaderSize:]) || w.Header().EntryCount != ref.Header().EntryCount || int(w.Header().EntryCount) != added {
		t.Errorf("AddKeys: %d entries, %d added; AddKey one by one: %d entries", w.Header().EntryCount, added, ref.Header().EntryCount)
	}
	if keysSeen < 100 {
		t.Errorf("only %d keys added", keysSeen)
	}
	for v := range New(w, Options{}).Check(t.Context(), Files(files...)) {
		if v.Err == nil && !v.Probably {
			t.Errorf("%s: not found after AddKeys", v.Source)
		}
	}
}

// A run cancelled while batches are being looked up never yields a key
// that was not looked up: every key here is in the filter, so a "no"
// could only be a key dropped half done.
func TestCheckCancelledNeverSaysNo(t *testing.T) {
	line := readKey(t, "p256.pub")
	w := newFilter(t, 3, 16)
	mustAddKey(t, w, line)
	many := bytes.Repeat(line, 20000)
	for _, workers := range []int{1, 2, 8} {
		for stopAt := range 5 {
			ctx, cancel := context.WithCancel(context.Background())
			n := 0
			for v := range New(w, Options{Workers: workers}).Check(ctx, Bytes("many", many)) {
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
	if testkit.RaceEnabled {
		t.Skip("the race detector changes allocations")
	}
	var pems []byte
	for _, name := range []string{"p256.cert.pem", "rsa2048.cert.pem", "p384.cert.pem", "ed25519.cert.pem"} {
		pems = append(pems, readKey(t, name)...)
	}
	input := bytes.Repeat(pems, 5000)
	c := New(newFilter(t, 3, 16), Options{Workers: 2})
	check := func() int {
		n := 0
		for v := range c.Check(context.Background(), Bytes("pems", input)) {
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
	w := newFilter(t, 3, 16)
	for i := range 300 {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		spki, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
		spkis, want = append(spkis, spki), append(want, keys.Fingerprint(spki))
		if i%3 == 0 {
			w.Add(spki)
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
		i := 0
		for v := range New(w, Options{Workers: workers}).Check(context.Background(), pipeInput("pipe", pr)) {
			if v.Err != nil || v.Key.Fingerprint != want[i] || v.Probably != (i%3 == 0) || v.Source.Index != i+1 {
				t.Fatalf("%d workers: verdict %d: %+v, want fingerprint %s", workers, i+1, v, want[i])
			}
			i++
		}
		if i != len(spkis) {
			t.Fatalf("%d workers: %d verdicts for %d keys", workers, i, len(spkis))
		}
	}
}

// A verdict's JSON, for each kind of verdict: what pkbf check --json, pkbf
// serve and the Beam pipelines write.
func TestVerdictJSON(t *testing.T) {
	for _, tc := range []struct {
		v    Verdict
		want string
	}{
		{Verdict{Source: Source{Input: "a.pem", Index: 2, Line: 31, Block: 2, Offset: 900, Part: "certificate 1"}, Key: Key{Fingerprint: "f1", OtherFingerprint: "f2", OtherLabel: "as given"}, Probably: true},
			`{"source":"a.pem: block 2 (line 31), certificate 1","file":"a.pem","line":31,"index":2,"offset":900,"block":2,"part":"certificate 1","fingerprint":"f1","fingerprint_as_given":"f2","probably":true}`},
		{Verdict{Source: Source{Input: "keys", Index: 1, Line: 1}, Key: Key{Fingerprint: "f", SSHFingerprint: "SHA256:x", Comment: "me\t"}, confirming: true, Confirmation: Confirmation{Err: perr.New("timeout")}, Probably: true},
			`{"source":"keys: line 1","file":"keys","line":1,"index":1,"offset":0,"ssh_fingerprint":"SHA256:x","comment":"me\t","fingerprint":"f","probably":true,"verdict":"unconfirmed","error":"timeout"}`},
		{Verdict{Source: Source{Input: "missing"}, Err: perr.Errorf("%w", &fs.PathError{Op: "open", Path: "missing", Err: fs.ErrNotExist})},
			`{"source":"missing","file":"missing","error":"open missing: file does not exist"}`},
	} {
		if got := string(tc.v.AppendJSON(nil)); got != tc.want+"\n" {
			t.Errorf("AppendJSON:\n%s\nwant\n%s", got, tc.want)
		}
	}
}

// Check answers as Contains with either way this machine has of hashing
// keys: both hashes in one vector pass, where it can, and two scalar XXH64
// calls, which ProbablyBatch then computes lazily.
func TestHashPaths(t *testing.T) {
	for _, vector := range []bool{true, false} {
		restore := xxh64.Use(vector)
		if vector && !xxh64.Vector() {
			restore()
			continue
		}
		t.Run(map[bool]string{true: "vector", false: "scalar"}[vector], TestCheckAgreesWithContains)
		restore()
	}
}

// A key pkbf cannot re-encode, looked up as given and not found, has no
// answer: Check gives it the error CheckKey gives, never a "no"; found
// as given, it is probably in the filter. Such keys: an algorithm pkbf
// does not know, and a DSA key without domain parameters (its issuer's),
// which a filter may hold with them (red team R5 F1: an OpenSSL DSA key
// in a filter was a definite "no" without its parameters).
func TestNoAnswerWithoutEveryEncoding(t *testing.T) {
	var params dsa.Parameters
	if err := dsa.GenerateParameters(&params, rand.Reader, dsa.L1024N160); err != nil {
		t.Fatal(err)
	}
	priv := dsa.PrivateKey{PublicKey: dsa.PublicKey{Parameters: params}}
	if err := dsa.GenerateKey(&priv, rand.Reader); err != nil {
		t.Fatal(err)
	}
	withParams, err := keys.MarshalPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	spki := func(alg func(*cryptobyte.Builder), key func(*cryptobyte.Builder)) []byte {
		var b cryptobyte.Builder
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, alg)
			var k cryptobyte.Builder
			key(&k)
			b.AddASN1BitString(k.BytesOrPanic())
		})
		return b.BytesOrPanic()
	}
	noParams := spki(func(b *cryptobyte.Builder) { b.AddASN1ObjectIdentifier(asn1.ObjectIdentifier{1, 2, 840, 10040, 4, 1}) },
		func(b *cryptobyte.Builder) { b.AddASN1BigInt(priv.Y) })
	unknown := spki(func(b *cryptobyte.Builder) { b.AddASN1ObjectIdentifier(asn1.ObjectIdentifier{1, 2, 3, 4}) },
		func(b *cryptobyte.Builder) { b.AddBytes([]byte{1, 2, 3}) })
	for _, tc := range []struct {
		name     string
		key      []byte
		filter   []byte // what the filter holds
		probably bool
	}{
		{"DSA without parameters, the filter holding it with them", noParams, withParams, false},
		{"DSA without parameters, the filter holding it so", noParams, noParams, true},
		{"an unknown algorithm, the filter lacking it", unknown, withParams, false},
		{"an unknown algorithm, the filter holding it as given", unknown, unknown, true},
	} {
		w := newFilter(t, 4, 16)
		if _, err := w.Add(tc.filter); err != nil {
			t.Fatal(err)
		}
		c := New(w, Options{})
		var got []Verdict
		for v := range c.Check(t.Context(), Bytes(tc.name, tc.key)) {
			got = append(got, v)
		}
		for i, v := range []Verdict{got[0], c.CheckKey(tc.key)} {
			call := [...]string{"Check", "CheckKey"}[i]
			switch {
			case tc.probably && (v.Err != nil || !v.Probably):
				t.Errorf("%s: %s: %v, %v; want probably", tc.name, call, v.Probably, v.Err)
			case !tc.probably && !errors.Is(v.Err, keys.ErrUnsupportedKey):
				t.Errorf("%s: %s: probably %v, error %v; want an error wrapping keys.ErrUnsupportedKey, no answer", tc.name, call, v.Probably, v.Err)
			}
		}
	}
}
