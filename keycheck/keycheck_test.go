package keycheck

import (
	"bytes"
	"crypto/rand"
	"encoding/asn1"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cloudflare/circl/sign/mldsa/mldsa44"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keys"
)

// The filter types of package pkbf are Queriers, and a Checker is the
// KeyChecker integrations take.
var (
	_ Querier    = (*pkbf.Filter)(nil)
	_ Querier    = (*pkbf.Writable)(nil)
	_ Querier    = (*pkbf.Live)(nil)
	_ KeyChecker = (*Checker)(nil)
)

// A filter holding any encoding of a key finds it, with Contains and
// Check, from every form a file gives it in.
func TestContainsEncodings(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(keysDir, "*.pub"))
	more, _ := filepath.Glob(filepath.Join(keysDir, "*.spki.*"))
	files = append(files, more...)
	if len(files) < 8 {
		t.Fatalf("only %d key files", len(files))
	}
	spkis := map[string][]byte{}
	for _, name := range files {
		spki, err := keys.SPKI(testkit.ReadFile(t, name))
		if err != nil {
			continue // a security key, say: not this test's business
		}
		spkis[name] = spki
	}
	for name, spki := range spkis {
		encs, err := keys.Encodings(spki)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, stored := range encs {
			w := newFilter(t, 4, 16)
			w.Add(stored)
			c := New(w, Options{})
			i := 0
			for v := range c.Check(t.Context(), derInput(encs)) {
				if !c.Contains(encs[i]) || !v.Probably {
					t.Errorf("%s: a filter holding %x does not contain %x", name, stored[:8], encs[i][:8])
				}
				i++
			}
			if i != len(encs) {
				t.Errorf("%s: %d verdicts for %d encodings", name, i, len(encs))
			}
			if !c.Contains(spki) {
				t.Errorf("%s: a filter holding an encoding does not contain the file's", name)
			}
		}
	}
}

// Looking up a key already in canonical form, or an EC key in either
// point form, allocates nothing.
func TestContainsAllocs(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	c := New(newFilter(t, 4, 16), Options{})
	for _, name := range []string{"rsa2048.spki.der", "p256.spki.der"} {
		spki, err := keys.SPKI(readKey(t, name))
		if err != nil {
			t.Fatal(err)
		}
		if allocs := testing.AllocsPerRun(100, func() { c.Contains(spki) }); allocs != 0 {
			t.Errorf("Contains of %s: %v allocations", name, allocs)
		}
	}
}

// CheckKey gives, for every key file that holds one key, the verdict
// Check gives for it: the same answer, and for a hit the same
// fingerprints; a "no" carries nothing but its answer. The filter holds
// every other distinct key, so both answers occur.
func TestCheckKeyAgreesWithCheck(t *testing.T) {
	w := newFilter(t, 4, 18)
	seen := map[string]bool{}
	files := keyFiles(t)
	for _, path := range files {
		spki, err := keys.SPKI(testkit.ReadFile(t, path))
		if err != nil {
			continue
		}
		if fp := keys.Fingerprint(spki); !seen[fp] {
			seen[fp] = true
			if len(seen)%2 == 0 {
				mustAddKey(t, w, spki)
			}
		}
	}
	c := New(readOnly(t, w), Options{Workers: 1})
	hits, misses, errs := 0, 0, 0
	for _, path := range files {
		data := testkit.ReadFile(t, path)
		var verdicts []Verdict
		for v := range c.Check(t.Context(), Bytes(path, data)) {
			verdicts = append(verdicts, v)
		}
		if len(verdicts) != 1 {
			continue // a bundle, a file of lines: not one key
		}
		want, got := verdicts[0], c.CheckKey(data)
		switch {
		case (want.Err != nil) != (got.Err != nil):
			t.Errorf("%s: Check's error %v, CheckKey's %v", path, want.Err, got.Err)
		case got.Err != nil:
			errs++
			if !errors.Is(got.Err, keys.ErrInvalidKey) {
				t.Errorf("%s: CheckKey's error %v is not ErrInvalidKey", path, got.Err)
			}
		case got.Probably != want.Probably:
			t.Errorf("%s: Check says %v, CheckKey %v", path, want.Probably, got.Probably)
		case got.Probably:
			hits++
			if got.Key != want.Key {
				t.Errorf("%s: CheckKey's hit\n%+v\nCheck's\n%+v", path, got, want)
			}
		default:
			misses++
			if !reflect.DeepEqual(got, Verdict{lookedUp: true}) {
				t.Errorf("%s: a no carries more than its answer: %+v", path, got)
			}
		}
	}
	if hits < 20 || misses < 20 || errs < 3 {
		t.Fatalf("%d hits, %d misses, %d errors: the test does not discriminate", hits, misses, errs)
	}
}

// The SSH fingerprint of a hit is the one ssh-keygen -l prints; recorded
// with: ssh-keygen -l -f testdata/keys/ed25519.pub
func TestCheckKeySSHFingerprint(t *testing.T) {
	data := readKey(t, "ed25519.pub")
	w := newFilter(t, 4, 16)
	mustAddKey(t, w, data)
	out, err := exec.Command("ssh-keygen", "-l", "-f", filepath.Join(keysDir, "ed25519.pub")).Output()
	if err != nil {
		t.Skipf("ssh-keygen: %v", err)
	}
	v := New(w, Options{}).CheckKey(data)
	if fields := strings.Fields(string(out)); !v.Probably || len(fields) < 3 || v.Key.SSHFingerprint != fields[1] || !strings.HasPrefix(v.Key.Comment, fields[2]) {
		t.Fatalf("CheckKey: %+v; ssh-keygen -l: %s", v, out)
	}
}

// CheckKey allocates what Contains allocates (nothing for a key in a
// canonical DER form, a compressed point's square root for one that is
// not), and for a hit one string more, for its fingerprints.
func TestCheckKeyAllocs(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	for _, name := range []string{"rsa2048.spki.der", "p256.spki.der", "p256.spki-compressed.der", "p256.cert.der", "ed25519.spki.der"} {
		data := readKey(t, name)
		spki, err := keys.SPKI(data)
		if err != nil {
			t.Fatal(err)
		}
		w := newFilter(t, 4, 16)
		c := New(readOnly(t, w), Options{})
		contains := testing.AllocsPerRun(100, func() { c.Contains(spki) })
		if allocs := testing.AllocsPerRun(100, func() { c.CheckKey(data) }); allocs != contains {
			t.Errorf("CheckKey of %s, not in the filter: %v allocations, Contains %v", name, allocs, contains)
		}
		mustAddKey(t, w, data)
		c = New(readOnly(t, w), Options{})
		if allocs := testing.AllocsPerRun(100, func() { c.CheckKey(data) }); allocs != contains+1 {
			t.Errorf("CheckKey of %s, in the filter: %v allocations, want %v", name, allocs, contains+1)
		}
	}
}

// spkiWithAlgorithm wraps the PKCS #1 key of an RSA SPKI in an
// AlgorithmIdentifier of oid with no parameters.
func spkiWithAlgorithm(t *testing.T, rsaSPKI []byte, oid asn1.ObjectIdentifier) []byte {
	t.Helper()
	var info struct {
		Algorithm struct{ Algorithm asn1.ObjectIdentifier }
		Key       asn1.BitString
	}
	if _, err := asn1.Unmarshal(rsaSPKI, &info); err != nil {
		t.Fatal(err)
	}
	info.Algorithm.Algorithm = oid
	b, err := asn1.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A compromised RSA key wrapped as RSA-PSS or RSA-OAEP (the same key,
// restricted to one use) is found where the filter holds its
// rsaEncryption form; a key of an algorithm pkbf knows no encodings of,
// absent as given, is an error, never a "no" (a red-team review got a
// PSS-wrapped compromised key allowed through the step-ca webhook).
func TestCheckKeyFailsClosed(t *testing.T) {
	rsaSPKI, err := keys.SPKI(readKey(t, "rsa2048.spki.der"))
	if err != nil {
		t.Fatal(err)
	}
	w := newFilter(t, 4, 16)
	mustAddKey(t, w, rsaSPKI)
	c := New(w, Options{})
	for _, tc := range []struct {
		name string
		oid  asn1.ObjectIdentifier
	}{
		{"RSA-PSS", asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 10}},
		{"RSA-OAEP", asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 7}},
	} {
		wrapped := spkiWithAlgorithm(t, rsaSPKI, tc.oid)
		if v := c.CheckKey(wrapped); !v.Probably || v.Err != nil {
			t.Errorf("%s-wrapped compromised key: %+v, want probably", tc.name, v)
		}
		if !c.Contains(wrapped) {
			t.Errorf("%s-wrapped compromised key: Contains false", tc.name)
		}
	}
	clean := New(newFilter(t, 4, 16), Options{})
	for _, oid := range []asn1.ObjectIdentifier{{1, 2, 3, 4}, {2, 5, 8, 1, 1}} {
		v := clean.CheckKey(spkiWithAlgorithm(t, rsaSPKI, oid))
		if v.Probably || !errors.Is(v.Err, keys.ErrUnsupportedKey) {
			t.Errorf("a key of algorithm %v the filter lacks: %+v, want an ErrUnsupportedKey", oid, v)
		}
	}
	// Found as given, it is a hit all the same.
	odd := spkiWithAlgorithm(t, rsaSPKI, asn1.ObjectIdentifier{1, 2, 3, 4})
	held := newFilter(t, 4, 16)
	if _, err := AddKey(held, odd); !errors.Is(err, keys.ErrUnsupportedKey) {
		t.Errorf("AddKey of a key of an unknown algorithm: %v, want ErrUnsupportedKey", err)
	}
	held.Add(odd)
	if v := New(held, Options{}).CheckKey(odd); !v.Probably || v.Err != nil || v.Key.Fingerprint != keys.Fingerprint(odd) {
		t.Errorf("a key of an unknown algorithm the filter holds as given: %+v, want its fingerprint %s", v, keys.Fingerprint(odd))
	}
}

// CheckKey reads what keys.SPKI reads: an OpenSSH line with old Mac line
// ends (CR alone), which ParseKey once left out (found on review).
func TestCheckKeyReadsWhatSPKIReads(t *testing.T) {
	line := bytes.TrimSpace(readKey(t, "ed25519.pub"))
	data := append(append([]byte("# a comment\r"), line...), '\r')
	if _, err := keys.SPKI(data); err != nil {
		t.Fatalf("SPKI: %v", err)
	}
	w := newFilter(t, 4, 16)
	c := New(w, Options{})
	if v := c.CheckKey(data); v.Err != nil || v.Probably {
		t.Fatalf("CheckKey of a clean key: %+v", v)
	}
	mustAddKey(t, w, data)
	if v := c.CheckKey(data); v.Err != nil || !v.Probably || v.Key.SSHFingerprint == "" {
		t.Fatalf("CheckKey of a key the filter holds: %+v", v)
	}
}

// Issue 48, item 10: a key whose SPKI has one DER encoding (ML-DSA-44
// here, made by circl) gets a definite "no" from a filter that lacks it
// and "probably" from one that holds it; before, CheckKey answered an
// error ("pkbf knows no canonical encoding") and a TLS gate refused every
// peer that presented one. A pre-hash variant, which has no certificate
// encoding, still gets an error.
func TestCheckKeyOneEncoding(t *testing.T) {
	pub, _, err := mldsa44.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := pub.MarshalBinary()
	spki := spkiOf(t, asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 3, 17}, raw)
	clean := New(newFilter(t, 4, 16), Options{})
	if v := clean.CheckKey(spki); v.Err != nil || v.Probably {
		t.Errorf("a clean ML-DSA-44 key: %+v, want a definite no", v)
	}
	held := newFilter(t, 4, 16)
	mustAddKey(t, held, spki)
	if v := New(held, Options{}).CheckKey(spki); v.Err != nil || !v.Probably || v.Key.Fingerprint != keys.Fingerprint(spki) {
		t.Errorf("a compromised ML-DSA-44 key: %+v, want probably, fingerprint %s", v, keys.Fingerprint(spki))
	}
	hashMLDSA := spkiOf(t, asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 3, 32}, raw)
	if v := clean.CheckKey(hashMLDSA); !errors.Is(v.Err, keys.ErrUnsupportedKey) {
		t.Errorf("a HashML-DSA-44 key: %+v, want ErrUnsupportedKey", v)
	}
}

// spkiOf is the SPKI of key under the algorithm oid, with no parameters.
func spkiOf(t *testing.T, oid asn1.ObjectIdentifier, key []byte) []byte {
	t.Helper()
	b, err := asn1.Marshal(struct {
		Algorithm struct{ OID asn1.ObjectIdentifier }
		Key       asn1.BitString
	}{struct{ OID asn1.ObjectIdentifier }{oid}, asn1.BitString{Bytes: key, BitLength: 8 * len(key)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A Checker over a Live answers from the file at the path now: a key
// added by a new file renamed over it is a hit with its fingerprint after
// the reload, and a clean key costs no allocation.
func TestLiveCheckKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.pkbf")
	write := func(w *pkbf.Writable) {
		if err := w.WriteFile(path); err != nil {
			t.Fatal(err)
		}
	}
	write(newFilter(t, 4, 14))
	l, err := pkbf.OpenLive(path, pkbf.LiveOptions{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c := New(l, Options{})
	spki := readKey(t, "p256.spki.der")
	if v := c.CheckKey(spki); v.Probably || v.Err != nil {
		t.Fatalf("before the new file: %+v", v)
	}
	if n := testing.AllocsPerRun(100, func() { c.CheckKey(spki) }); n != 0 && !testkit.RaceEnabled {
		t.Errorf("CheckKey of a clean key allocates %.0f times", n)
	}
	w := newFilter(t, 4, 14)
	mustAddKey(t, w, spki)
	write(w)
	if err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	if v := c.CheckKey(spki); !v.Probably || v.Key.Fingerprint != keys.Fingerprint(spki) {
		t.Errorf("after the new file: %+v, want a hit with fingerprint %s", v, keys.Fingerprint(spki))
	}
}

// A mapped filter whose file is cut short under it: CheckKey says so in
// its verdict (no panic, no "no"), and so does Check, in its last
// verdict; Contains panics with the same error, as Probably does.
func TestFileCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.pkbf")
	w := newFilter(t, 4, 18)
	for _, k := range randomKeys(50, 1) {
		w.Add(k)
	}
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := pkbf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	c := New(f, Options{Workers: 2})
	var many []byte
	for _, name := range []string{"rsa2048.spki.der", "p256.cert.pem", "ed25519.pub"} {
		data := readKey(t, name)
		many = append(many, data...)
		v := c.CheckKey(data)
		if !errors.Is(v.Err, pkbf.ErrFileChanged) || !strings.Contains(v.Err.Error(), path) || v.Probably {
			t.Errorf("CheckKey of %s after the change: %+v, want an ErrFileChanged naming the file", name, v)
		}
	}
	for _, workers := range []int{1, 2} {
		var last Verdict
		n := 0
		for v := range New(f, Options{Workers: workers}).Check(t.Context(), Bytes("keys", bytes.Repeat(many, 100))) {
			last = v
			n++
		}
		if n != 1 || !errors.Is(last.Err, pkbf.ErrFileChanged) || last.Source.Input != "keys" {
			t.Errorf("%d workers: Check after the change: %d verdicts, the last %+v; want one, an ErrFileChanged", workers, n, last)
		}
	}
	func() {
		defer func() {
			r := recover()
			if err, ok := r.(error); !ok || !errors.Is(err, pkbf.ErrFileChanged) {
				t.Errorf("Contains after the change: panic %v, want an ErrFileChanged", r)
			}
		}()
		c.Contains(readKey(t, "p256.spki.der"))
	}()
}

// New refuses a missing filter at once, a nil pointer to a filter type
// too (an open whose error was ignored): a gate must not start without
// one.
func TestNewWithoutFilter(t *testing.T) {
	var live *pkbf.Live
	for name, q := range map[string]Querier{"nil": nil, "nil *Filter": (*pkbf.Filter)(nil), "nil *Writable": (*pkbf.Writable)(nil), "nil *Live": live} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "keycheck: New without a filter") {
					t.Errorf("New(%s): panic %v, want one saying there is no filter", name, r)
				}
			}()
			New(q, Options{})
		}()
	}
}
