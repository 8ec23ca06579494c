package keys

import (
	"bufio"
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

// allocated returns the bytes f allocates, averaged over runs.
func allocated(runs int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// A small input in memory costs a small buffer, and a DER object's memory
// follows the bytes read, never the length its header declares.
func TestScannerMemoryFollowsInput(t *testing.T) {
	pub := testkit.ReadFile(t, "../testdata/keys/p256.pub")
	der := testkit.ReadFile(t, "../testdata/keys/p256.spki.der")
	for _, tc := range []struct {
		name  string
		input []byte
		keys  int
		limit uint64
	}{
		{"an OpenSSH line", pub, 1, 8 << 10},
		{"a DER SPKI", der, 1, 8 << 10},
		{"6 bytes declaring a megabyte", []byte{0x30, 0x83, 0x0f, 0xff, 0xf0, 0x30}, 1, 40 << 10},
		{"a megabyte arriving", append([]byte{0x30, 0x83, 0x0f, 0xff, 0xf0}, make([]byte, 0xffff0)...), 1, 4 << 20},
	} {
		n := 0
		used := allocated(20, func() {
			s := NewScanner(bytes.NewReader(tc.input))
			for n = 0; s.Scan(); n++ {
				k := s.Key()
				k.SPKI()
			}
		})
		if n != tc.keys || used > tc.limit {
			t.Errorf("%s (%d bytes): %d keys, %d bytes allocated; want %d keys, at most %d bytes", tc.name, len(tc.input), n, used, tc.keys, tc.limit)
		}
	}
}

// keysFile reads a .KEYS file: the fingerprints of a multi-key input's keys.
func keysFile(t *testing.T, name string) []string {
	return strings.Fields(string(testkit.ReadFile(t, filepath.Join(keysDir, name+".KEYS"))))
}

func scanAll(t *testing.T, in []byte) (fps []string, keys []Key, errs []error) {
	t.Helper()
	s := NewScanner(bytes.NewReader(in))
	for s.Scan() {
		k := s.Key()
		keys = append(keys, k)
		spki, err := k.SPKI()
		errs = append(errs, err)
		if err == nil {
			fps = append(fps, Fingerprint(spki))
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("Err: %v", err)
	}
	return fps, keys, errs
}

func TestScannerFiles(t *testing.T) {
	for _, name := range []string{"authorized_keys", "known_hosts", "bundle.pem", "bundle.der"} {
		t.Run(name, func(t *testing.T) {
			fps, keys, errs := scanAll(t, testkit.ReadFile(t, filepath.Join(keysDir, name)))
			for i, err := range errs {
				if err != nil {
					t.Errorf("%s: %v", keys[i].Source(), err)
				}
			}
			if want := keysFile(t, name); strings.Join(fps, " ") != strings.Join(want, " ") {
				t.Errorf("fingerprints = %v\nwant %v", fps, want)
			}
		})
	}
}

func TestScannerSources(t *testing.T) {
	_, keys, _ := scanAll(t, testkit.ReadFile(t, filepath.Join(keysDir, "authorized_keys")))
	if got := keys[0].Source(); got != "line 3" {
		t.Errorf("first authorized_keys key Source = %q, want line 3", got)
	}
	_, keys, _ = scanAll(t, testkit.ReadFile(t, filepath.Join(keysDir, "bundle.pem")))
	if got := keys[1].Source(); !strings.HasPrefix(got, "block 2 (line ") {
		t.Errorf("second bundle key Source = %q", got)
	}
	// The line of each PEM block is its BEGIN line.
	lines := strings.Split(string(testkit.ReadFile(t, filepath.Join(keysDir, "bundle.pem"))), "\n")
	for _, k := range keys {
		if !strings.HasPrefix(lines[k.Line-1], "-----BEGIN ") {
			t.Errorf("%s: line %d is %q, not a BEGIN line", k.Source(), k.Line, lines[k.Line-1])
		}
	}
	_, keys, _ = scanAll(t, testkit.ReadFile(t, filepath.Join(keysDir, "bundle.der")))
	if got := keys[2].Source(); !strings.HasPrefix(got, "object 3 (byte ") || keys[2].Offset == 0 {
		t.Errorf("third DER object Source = %q", got)
	}
}

func TestScannerBadInputs(t *testing.T) {
	good := string(testkit.ReadFile(t, filepath.Join(keysDir, "p256.spki.pem")))
	cert := string(testkit.ReadFile(t, filepath.Join(keysDir, "rsa2048.cert.pem")))
	pub := string(testkit.ReadFile(t, filepath.Join(keysDir, "ed25519.pub")))
	tests := []struct {
		name string
		in   string
		want []string // per key: "" for a good one, else part of its error
	}{
		{"empty", "", nil},
		{"comments only", "# nothing\n\n", nil},
		{"junk", "hello\nworld\n", []string{"no key, certificate or certificate request found (first text on line 1)"}},
		{"junk around keys is ignored", "hello\n" + good + "bye\n", []string{""}},
		{"bad key among good", good + "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n" + pub, []string{"", "SubjectPublicKeyInfo is not one complete", ""}},
		{"truncated last block", good + cert[:400], []string{"", "no END line: input is truncated"}},
		{"unterminated block then good", cert[:strings.LastIndex(cert[:400], "\n")+1] + good, []string{"no END line before line 7", ""}},
		{"encrypted among good", pub + string(testkit.ReadFile(t, filepath.Join(keysDir, "p256.pkcs8-encrypted.pem"))) + pub, []string{"", "encrypted", ""}},
		{"mistyped ssh line", "shh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQ c\n" + pub, []string{"no OpenSSH key type", ""}},
		{"overlong line", strings.Repeat("x", maxLineSize+10) + "\n" + pub, []string{"longer than", ""}},
		{"overlong block", "-----BEGIN CERTIFICATE-----\n" + strings.Repeat(strings.Repeat("A", 64)+"\n", maxObjectSize/64+1) + "-----END CERTIFICATE-----\n" + pub, []string{"larger than", ""}},
		{"no final newline", strings.TrimSpace(pub), []string{""}},
		{"CRLF", strings.ReplaceAll(good, "\n", "\r\n") + strings.ReplaceAll(pub, "\n", "\r\n"), []string{"", ""}},
		{"EC PARAMETERS before another block is dropped", "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n" + good, []string{""}},
		{"DER junk after object", string(testkit.ReadFile(t, filepath.Join(keysDir, "p256.spki.der"))) + "junk", []string{"", "does not start a DER SEQUENCE"}},
		{"DER truncated", string(testkit.ReadFile(t, filepath.Join(keysDir, "rsa2048.cert.der"))[:200]), []string{"truncated"}},
		{"DER indefinite length", "\x30\x80\x30\x00", []string{"indefinite length"}},
		{"DER too large", "\x30\x84\x7f\xff\xff\xff\x30", []string{"larger than the"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, keys, errs := scanAll(t, []byte(tt.in))
			if len(errs) != len(tt.want) {
				t.Fatalf("got %d keys (errors %v), want %d", len(errs), errs, len(tt.want))
			}
			for i, want := range tt.want {
				err := errs[i]
				if want == "" && err != nil {
					t.Errorf("%s: unexpected error %v", keys[i].Source(), err)
				}
				if want != "" && (!errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), want)) {
					t.Errorf("%s: error = %v, want one containing %q", keys[i].Source(), err, want)
				}
			}
		})
	}
}

// A huge input streams through in bounded memory.
func TestScannerStreams(t *testing.T) {
	pub := testkit.ReadFile(t, filepath.Join(keysDir, "ed25519.pub"))
	const n = 20000
	r := bufio.NewReaderSize(&repeatReader{b: pub, n: n}, 4096)
	s := NewScanner(r)
	count := 0
	for s.Scan() {
		k := s.Key()
		if _, err := k.SPKI(); err != nil || k.Line != count+1 {
			t.Fatalf("key %d: line %d, %v", count+1, k.Line, err)
		}
		count++
	}
	if count != n || s.Err() != nil {
		t.Errorf("scanned %d keys, err %v; want %d", count, s.Err(), n)
	}
}

type repeatReader struct {
	b    []byte
	n    int
	rest []byte
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if len(r.rest) == 0 {
		if r.n == 0 {
			return 0, io.EOF
		}
		r.n--
		r.rest = r.b
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// Small objects' Raw share slabs: each must hold its own object's bytes
// with no room past them, so that appending to one Raw cannot overwrite
// the next key's. Keys of every small form, many to a slab, and one too
// large for a slab.
func TestScannerRawOwnBytes(t *testing.T) {
	spki := testkit.ReadFile(t, filepath.Join(keysDir, "p256.spki.der"))
	n := new(big.Int).Lsh(big.NewInt(1), 8*maxSlabbed) // an SPKI larger than maxSlabbed
	large, err := x509.MarshalPKIXPublicKey(&rsa.PublicKey{N: n.Add(n, big.NewInt(1)), E: 65537})
	if err != nil {
		t.Fatal(err)
	}
	line := testkit.ReadFile(t, filepath.Join(keysDir, "ed25519.pub"))
	for _, c := range []struct {
		name   string
		object []byte
	}{{"DER SPKI", spki}, {"DER SPKI past maxSlabbed", large}, {"OpenSSH line", line}} {
		if c.name == "DER SPKI past maxSlabbed" && len(c.object) <= maxSlabbed {
			t.Fatalf("%s is %d bytes, not past maxSlabbed", c.name, len(c.object))
		}
		const keys = 500
		s := NewScanner(bytes.NewReader(bytes.Repeat(c.object, keys)))
		var got []Key
		for s.Scan() {
			got = append(got, s.Key())
		}
		if len(got) != keys || s.Err() != nil {
			t.Fatalf("%s: %d keys, %v; want %d", c.name, len(got), s.Err(), keys)
		}
		for i := range got {
			raw := got[i].Raw
			if cap(raw) != len(raw) {
				t.Fatalf("%s: key %d's Raw has capacity %d for %d bytes", c.name, i+1, cap(raw), len(raw))
			}
			_ = append(raw, bytes.Repeat([]byte{0xff}, 64)...)
		}
		for i, k := range got {
			if !bytes.Equal(bytes.TrimRight(k.Raw, "\n"), bytes.TrimRight(c.object, "\n")) {
				t.Fatalf("%s: key %d's Raw is not its object after appends to the others", c.name, i+1)
			}
		}
	}
}

// A Scanner Reset between inputs reads each as a new Scanner does (the
// same keys, places and errors, whatever the inputs before it), keys it
// returned before stay as they were, and a bufio.Reader the caller gave
// is left alone.
func TestScannerReset(t *testing.T) {
	var inputs [][]byte
	filepath.WalkDir(keysDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			inputs = append(inputs, testkit.ReadFile(t, path))
		}
		return nil
	})
	if len(inputs) < 100 {
		t.Fatalf("only %d inputs under %s", len(inputs), keysDir)
	}
	// A line longer than any buffer, after inputs small enough to be
	// given one their size.
	long := append(bytes.Repeat([]byte("A"), maxLineSize+100), "\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq7wzzN4Sm0MxXP2Bh6U8vgP4eVkz3PiRAKnXw7EYIn\n"...)
	inputs = append(inputs, []byte("x"), long, []byte("y\r"), long)

	describe := func(s *Scanner) []string {
		var got []string
		for s.Scan() {
			k := s.Key()
			spki, err := k.SPKI()
			got = append(got, fmt.Sprintf("%d %d %d %d %q %x %x %v", k.Index, k.Line, k.Block, k.Offset, k.Part, k.Raw, spki, err))
		}
		return append(got, fmt.Sprint("err ", s.Err()))
	}
	// Alternate readers whose length is known (a small buffer) and not.
	reader := func(i int, b []byte) io.Reader {
		if i%2 == 0 {
			return bytes.NewReader(b)
		}
		return io.MultiReader(bytes.NewReader(b))
	}
	var want [][]string
	for i, in := range inputs {
		want = append(want, describe(NewScanner(reader(i, in))))
	}
	var kept []Key
	var keptRaw [][]byte
	s := NewScanner(strings.NewReader(""))
	s.SetRawAlloc(func(n int) []byte { return make([]byte, n) })
	for i, in := range inputs {
		s.Reset(reader(i, in))
		if got := describe(s); strings.Join(got, "\n") != strings.Join(want[i], "\n") {
			t.Fatalf("input %d after Reset:\n%s\nwant (a new Scanner):\n%s", i, strings.Join(got, "\n"), strings.Join(want[i], "\n"))
		}
		s.Reset(reader(i, in))
		if s.Scan() {
			k := s.Key()
			kept, keptRaw = append(kept, k), append(keptRaw, bytes.Clone(k.Raw))
		}
	}
	for i, k := range kept {
		if !bytes.Equal(k.Raw, keptRaw[i]) {
			t.Fatalf("key %d (%s) changed under later Resets", i, k.Source())
		}
	}

	br := bufio.NewReaderSize(strings.NewReader(string(inputs[0])), 1<<20)
	s = NewScanner(br)
	describe(s)
	s.Reset(bytes.NewReader(inputs[1]))
	if n, err := br.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("the caller's bufio.Reader was reset: Read = %d, %v", n, err)
	}
	if got := describe(s); strings.Join(got, "\n") != strings.Join(want[1], "\n") {
		t.Fatalf("after Reset from a caller's bufio.Reader:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want[1], "\n"))
	}
}
