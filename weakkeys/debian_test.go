package weakkeys

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	mrand "math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

// randomHashes returns n random SHA-256 hashes as a published list's
// lines.
func randomHashes(t testing.TB, n int, digits int) string {
	t.Helper()
	b := make([]byte, n*digits/2)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	var s strings.Builder
	for i := range n {
		s.WriteString(hex.EncodeToString(b[i*digits/2 : (i+1)*digits/2]))
		s.WriteByte('\n')
	}
	return s.String()
}

// writeDebian writes the builder's file in a temporary directory.
func writeDebian(t testing.TB, b *Builder) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "debian.pkwk")
	if err := b.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func openDebian(t testing.TB, path string) *Debian {
	t.Helper()
	d, err := OpenDebian(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestDebianLookup builds a file of lists of every scheme and finds every
// hash in it, and no other.
func TestDebianLookup(t *testing.T) {
	var b Builder
	lists := []List{
		{Name: "sha256_modulus_2048.csv", Key: "RSA-2048", Scheme: SHA256Modulus},
		{Name: "sha256_xcoord_P-256.csv", Key: "P-256", Scheme: SHA256X},
		{Name: "blacklist.RSA-2048", Key: "RSA-2048", Scheme: VulnKey},
	}
	text := map[string]string{}
	for i, l := range lists {
		text[l.Name] = "# a comment\n\n" + randomHashes(t, 1000*(i+1), hashDigits(l.Scheme))
		if err := b.ReadList(l, strings.NewReader(text[l.Name])); err != nil {
			t.Fatal(err)
		}
	}
	d := openDebian(t, writeDebian(t, &b))
	got := d.Lists()
	if len(got) != len(lists) {
		t.Fatalf("%d lists, want %d", len(got), len(lists))
	}
	for i, l := range d.lists {
		want := strings.Split(strings.TrimSpace(strings.TrimPrefix(text[l.Name], "# a comment\n\n")), "\n")
		if l.Entries != len(want) || got[i].Entries != len(want) {
			t.Fatalf("list %s: %d entries, want %d", l.Name, l.Entries, len(want))
		}
		for _, line := range want {
			h, _ := hex.DecodeString(line)
			if !l.contains(h) {
				t.Fatalf("list %s: %s not found", l.Name, line)
			}
			h[l.width-1] ^= 1
			if l.contains(h) {
				t.Fatalf("list %s: %x found, never added", l.Name, h)
			}
		}
		for range 1000 {
			h := make([]byte, 32)
			rand.Read(h)
			if l.contains(h) {
				t.Fatalf("list %s: random %x found", l.Name, h)
			}
		}
		// The first and last entries, and beyond them.
		first, last := l.entries[:l.width], l.entries[len(l.entries)-l.width:]
		for _, h := range [][]byte{first, last} {
			if !l.contains(append(bytes.Clone(h), make([]byte, 32)...)) {
				t.Fatalf("list %s: edge entry %x not found", l.Name, h)
			}
		}
		if l.contains(make([]byte, 32)) || l.contains(bytes.Repeat([]byte{0xff}, 32)) {
			t.Fatalf("list %s: all zeros or all ones found", l.Name)
		}
	}
}

// TestDebianLookupEqualPrefixes: entries that share their first 8 bytes,
// which all fall in one bucket of the index: the bisection decides.
func TestDebianLookupEqualPrefixes(t *testing.T) {
	var b Builder
	var s strings.Builder
	for i := range 300 {
		fmt.Fprintf(&s, "%016x%048x\n", uint64(i/100)*0x1111111111111111, i*7919)
	}
	l := List{Name: "prefixes", Key: "RSA-2048", Scheme: SHA256Modulus}
	if err := b.ReadList(l, strings.NewReader(s.String())); err != nil {
		t.Fatal(err)
	}
	d := openDebian(t, writeDebian(t, &b))
	for _, line := range strings.Fields(s.String()) {
		h, _ := hex.DecodeString(line)
		if !d.lists[0].contains(h) {
			t.Fatalf("%s not found", line)
		}
		h[15]++
		if d.lists[0].contains(h) != strings.Contains(s.String(), hex.EncodeToString(h)) {
			t.Fatalf("%x: found %v", h, !d.lists[0].contains(h))
		}
	}
}

// listOf builds a one-list file in memory of the given entries (their
// width is the scheme's) and returns its list, as OpenDebian reads it.
func listOf(t *testing.T, scheme Scheme, entries [][]byte) *debianList {
	t.Helper()
	var text strings.Builder
	for _, e := range entries {
		h := hex.EncodeToString(e)
		text.WriteString(h + strings.Repeat("0", hashDigits(scheme)-len(h)) + "\n")
	}
	var b Builder
	if err := b.ReadList(List{Name: "l", Key: "RSA-2048", Scheme: scheme}, strings.NewReader(text.String())); err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if _, err := b.WriteTo(&file); err != nil {
		t.Fatal(err)
	}
	lists, err := parseDebian(file.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return &lists[0]
}

// plusOne returns e + d (d is 1 or -1) as a number of len(e) bytes,
// wrapping.
func plusOne(e []byte, d int) []byte {
	out := bytes.Clone(e)
	for i := len(out) - 1; i >= 0; i-- {
		out[i] += byte(d)
		if (d > 0 && out[i] != 0) || (d < 0 && out[i] != 0xff) {
			break
		}
	}
	return out
}

// TestDebianIndex: the index of a list sends each lookup to the bucket of
// entries that share its top bits, whatever the list's size (so the
// index's bits) and however its entries spread: at random, on both sides
// of every bucket boundary (the first and last values a bucket holds),
// all in one bucket (every other empty), at the two ends of the range.
// Every entry and nothing else is found: its neighbours, zero, all ones.
func TestDebianIndex(t *testing.T) {
	r := mrand.New(mrand.NewSource(20))
	layouts := map[string]func(n, w int) [][]byte{
		"random": func(n, w int) [][]byte {
			out := make([][]byte, n)
			for i := range out {
				out[i] = make([]byte, w)
				r.Read(out[i])
			}
			return out
		},
		"bucket edges": func(n, w int) [][]byte {
			k := max(bits.Len(uint(n))-3, 0) // the index's bits
			var out [][]byte
			for i := 0; len(out) < n; i++ {
				e := make([]byte, w)
				r.Read(e[8:])
				top := uint64(r.Intn(1<<k)) << (64 - k)
				if i%2 == 1 {
					top-- // the top bits of the last values of the bucket before
				}
				binary.BigEndian.PutUint64(e, top)
				out = append(out, e)
			}
			return out
		},
		"one bucket": func(n, w int) [][]byte {
			out := make([][]byte, n)
			for i := range out {
				out[i] = make([]byte, w)
				r.Read(out[i])
				out[i][0], out[i][1], out[i][2], out[i][3] = 0x5a, 0x5a, 0x5a, 0x5a
			}
			return out
		},
		"ends": func(n, w int) [][]byte {
			out := make([][]byte, n)
			for i := range out {
				out[i] = make([]byte, w)
				r.Read(out[i][4:])
				if i%2 == 1 {
					out[i][0], out[i][1], out[i][2], out[i][3] = 0xff, 0xff, 0xff, 0xff
				}
			}
			return out
		},
	}
	for _, scheme := range []Scheme{SHA256Modulus, VulnKey} {
		for name, layout := range layouts {
			for _, n := range []int{1, 2, 7, 8, 9, 15, 16, 17, 100, 4096, 5000} {
				entries := layout(n, scheme.width())
				in := map[string]bool{}
				for _, e := range entries {
					in[string(e)] = true
				}
				l := listOf(t, scheme, entries)
				if k := max(bits.Len(uint(len(in)))-3, 0); l.Entries != len(in) || l.shift != uint(64-k) {
					t.Fatalf("%s, %s, %d entries: %d entries, index of %d bits; want %d, %d", scheme, name, n, l.Entries, 64-l.shift, len(in), k)
				}
				for b := range l.index {
					below := 0
					for i := 0; i < l.Entries; i++ {
						if binary.BigEndian.Uint64(l.entries[i*l.width:])>>l.shift < uint64(b) {
							below++
						}
					}
					if b == len(l.index)-1 {
						below = l.Entries
					}
					if int(l.index[b]) != below {
						t.Fatalf("%s, %s, %d entries: index[%d] = %d, want %d", scheme, name, n, b, l.index[b], below)
					}
				}
				probes := [][]byte{make([]byte, l.width), bytes.Repeat([]byte{0xff}, l.width)}
				for _, e := range entries {
					probes = append(probes, e, plusOne(e, 1), plusOne(e, -1))
				}
				for _, h := range probes {
					if got := l.contains(append(bytes.Clone(h), 0xee, 0xee)); got != in[string(h)] {
						t.Fatalf("%s, %s, %d entries: %x found %v, want %v", scheme, name, n, h, got, in[string(h)])
					}
				}
			}
		}
	}
}

// TestBuilderDeduplicates: a hash given twice is stored once, and the
// lists are in the file's order whatever the order they were read in.
func TestBuilderDeduplicates(t *testing.T) {
	var b Builder
	hashes := randomHashes(t, 50, 64)
	for _, l := range []List{
		{Name: "b", Key: "RSA-4096", Scheme: SHA256Modulus},
		{Name: "a", Key: "RSA-4096", Scheme: SHA256Modulus},
		{Name: "a", Key: "RSA-2048", Scheme: SHA256Modulus},
	} {
		for range 2 {
			if err := b.ReadList(l, strings.NewReader(hashes)); err != nil {
				t.Fatal(err)
			}
		}
	}
	d := openDebian(t, writeDebian(t, &b))
	var names []string
	for _, l := range d.Lists() {
		names = append(names, l.Key+"/"+l.Name)
		if l.Entries != 50 {
			t.Fatalf("list %s: %d entries, want 50", l.Name, l.Entries)
		}
	}
	if got := strings.Join(names, " "); got != "RSA-2048/a RSA-4096/a RSA-4096/b" {
		t.Fatalf("lists %s, want RSA-2048/a RSA-4096/a RSA-4096/b", got)
	}
}

func TestBuilderReadListErrors(t *testing.T) {
	rsa := List{Name: "l", Key: "RSA-2048", Scheme: SHA256Modulus}
	tests := []struct {
		name string
		list List
		text string
		want string
	}{
		{"short hash", rsa, strings.Repeat("a", 63) + "\n", "line 1: 63 characters, want a hash of 64 hex digits"},
		{"long hash", rsa, "# c\n" + strings.Repeat("a", 65) + "\n", "line 2: 65 characters"},
		{"not hex", rsa, strings.Repeat("g", 64) + "\n", "line 1: not hex"},
		{"vulnkey of 64 digits", List{Name: "v", Key: "RSA-2048", Scheme: VulnKey}, strings.Repeat("a", 64), "want a hash of 20 hex digits"},
		{"line too long", rsa, strings.Repeat("a", 2000), "line 1: longer than 1024 bytes"},
		{"no name", List{Key: "RSA-2048", Scheme: SHA256Modulus}, "", "list name"},
		{"name of 65 characters", List{Name: strings.Repeat("n", 65), Key: "RSA-2048", Scheme: SHA256Modulus}, "", "list name"},
		{"name with a newline", List{Name: "a\nb", Key: "RSA-2048", Scheme: SHA256Modulus}, "", "list name"},
		{"RSA-2047", List{Name: "l", Key: "RSA-2047", Scheme: SHA256Modulus}, "", "RSA-2047"},
		{"RSA-504", List{Name: "l", Key: "RSA-504", Scheme: SHA256Modulus}, "", "RSA-504"},
		{"RSA-16392", List{Name: "l", Key: "RSA-16392", Scheme: SHA256Modulus}, "", "RSA-16392"},
		{"RSA-02048", List{Name: "l", Key: "RSA-02048", Scheme: SHA256Modulus}, "", "RSA-02048"},
		{"P-224", List{Name: "l", Key: "P-224", Scheme: SHA256X}, "", "P-224"},
		{"sha256-x for RSA", List{Name: "l", Key: "RSA-2048", Scheme: SHA256X}, "", "does not hash RSA-2048 keys"},
		{"vulnkey for EC", List{Name: "l", Key: "P-256", Scheme: VulnKey}, "", "does not hash P-256 keys"},
		{"scheme 4", List{Name: "l", Key: "RSA-2048", Scheme: 4}, "", "scheme 4 is not a scheme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Builder
			err := b.ReadList(tt.list, strings.NewReader(tt.text))
			if err == nil || !strings.HasPrefix(err.Error(), "pkbf: ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadList = %v, want an error saying %q", err, tt.want)
			}
		})
	}
	// The limits' other sides are accepted.
	var b Builder
	for _, l := range []List{
		{Name: strings.Repeat("n", 64), Key: "RSA-512", Scheme: SHA256Modulus},
		{Name: "l", Key: "RSA-16384", Scheme: VulnKey},
		{Name: "l", Key: "P-521", Scheme: SHA256X},
	} {
		if err := b.ReadList(l, strings.NewReader("\r\n"+strings.ToUpper(randomHashes(t, 1, hashDigits(l.Scheme)))+"\r\n")); err != nil {
			t.Fatalf("%s: %v", l.Key, err)
		}
	}
	if _, err := OpenDebian(writeDebian(t, &b)); err != nil {
		t.Fatal(err)
	}
}

// hashDigits is the length of a scheme's hashes in its lists' text.
func hashDigits(s Scheme) int {
	if s == VulnKey {
		return 20
	}
	return 64
}

// TestBuilderLimits: 256 lists are written, a 257th is refused; an empty
// builder and an empty list are not written.
func TestBuilderLimits(t *testing.T) {
	var b Builder
	for i := range maxLists {
		if err := b.ReadList(List{Name: fmt.Sprint(i), Key: "RSA-2048", Scheme: VulnKey}, strings.NewReader("0123456789abcdef0123\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.ReadList(List{Name: "one more", Key: "RSA-2048", Scheme: VulnKey}, strings.NewReader("")); err == nil || !strings.Contains(err.Error(), "at most 256 lists") {
		t.Fatalf("list 257: %v, want an error", err)
	}
	d := openDebian(t, writeDebian(t, &b))
	if len(d.Lists()) != maxLists {
		t.Fatalf("%d lists, want %d", len(d.Lists()), maxLists)
	}
	var empty Builder
	if _, err := empty.WriteTo(new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "no Debian weak-key lists") {
		t.Fatalf("empty builder: %v", err)
	}
	if err := empty.ReadList(List{Name: "l", Key: "RSA-2048", Scheme: VulnKey}, strings.NewReader("# nothing\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := empty.WriteTo(new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "has no hashes") {
		t.Fatalf("empty list: %v", err)
	}
}

func TestListForFile(t *testing.T) {
	tests := map[string]string{
		"sha256_modulus_2048.csv":      "RSA-2048 sha256-modulus",
		"sha256_modulus_8192.csv":      "RSA-8192 sha256-modulus",
		"sha256_xcoord_P-256.csv":      "P-256 sha256-x",
		"sha256_xcoord_secp384r1.csv":  "P-384 sha256-x",
		"sha256_xcoord_prime256v1.csv": "P-256 sha256-x",
		"sha256_xcoord_P521.csv":       "P-521 sha256-x",
		"blacklist.RSA-1024":           "RSA-1024 sha1-vulnkey-80",
		"blacklist.RSA-4096.le32":      "RSA-4096 sha1-vulnkey-80",
		"sha256_modulus_2047.csv":      "",
		"sha256_modulus_2048.txt":      "",
		"sha256_xcoord_P-224.csv":      "",
		"blacklist.DSA-1024":           "",
		"debian.csv":                   "",
	}
	for name, want := range tests {
		l, ok := listForFile(name)
		got := ""
		if ok {
			got = l.Key + " " + l.Scheme.String()
			if l.Name != name {
				t.Errorf("%s: named %q", name, l.Name)
			}
		}
		if got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

func TestBuilderReadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "sha256_modulus_3072.csv")
	os.WriteFile(good, []byte(randomHashes(t, 10, 64)), 0o644)
	bad := filepath.Join(dir, "blacklist.RSA-2048")
	os.WriteFile(bad, []byte("# openssl-vulnkey\nnot a hash\n"), 0o644)
	var b Builder
	if err := b.ReadFile(good); err != nil {
		t.Fatal(err)
	}
	if err := b.ReadFile(bad); err == nil || !strings.Contains(err.Error(), bad+": list blacklist.RSA-2048, line 2") {
		t.Fatalf("ReadFile(bad) = %v, want the file and line named", err)
	}
	if err := b.ReadFile(filepath.Join(dir, "keys.csv")); err == nil || !strings.Contains(err.Error(), "use Builder.ReadList") {
		t.Fatalf("ReadFile(unknown name) = %v", err)
	}
	if err := b.ReadFile(filepath.Join(dir, "sha256_modulus_4096.csv")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile(missing) = %v", err)
	}
}

// validFile is a small valid file and its lists.
func validFile(t testing.TB) []byte {
	var b Builder
	for _, l := range []List{
		{Name: "m", Key: "RSA-2048", Scheme: SHA256Modulus},
		{Name: "v", Key: "RSA-2048", Scheme: VulnKey},
		{Name: "x", Key: "P-384", Scheme: SHA256X},
	} {
		if err := b.ReadList(l, strings.NewReader(randomHashes(t, 5, hashDigits(l.Scheme)))); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// resum recomputes a file's checksum after an edit, so that the edit
// itself is what the parser meets.
func resum(b []byte) []byte {
	sum := sha256.Sum256(b[headerSize:])
	copy(b[offChecksum:], sum[:])
	return b
}

// TestParseDebianInvalid: every field of the format, broken, is refused
// with a message that says what is wrong.
func TestParseDebianInvalid(t *testing.T) {
	be := binary.BigEndian
	rec := func(i int) int { return headerSize + i*recordSize }
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(validFile(t))) }
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "shorter than the 64-byte header"},
		{"header cut", validFile(t)[:63], "shorter than the 64-byte header"},
		{"magic", edit(func(b []byte) []byte { b[0] = 'P'; return b }), "no \"pkbfweak\" magic"},
		{"version 2", edit(func(b []byte) []byte { be.PutUint32(b[offVersion:], 2); return b }), "version 2, want 1"},
		{"size field", edit(func(b []byte) []byte { be.PutUint64(b[offFileSize:], uint64(len(b)+1)); return b }), "its header says"},
		{"cut short", edit(func(b []byte) []byte { return b[:len(b)-1] }), "its header says"},
		{"reserved header bytes", edit(func(b []byte) []byte { b[offZero+7] = 1; return b }), "are not zero"},
		{"0 lists", edit(func(b []byte) []byte { be.PutUint32(b[offLists:], 0); return b }), "0 lists, want 1 to 256"},
		{"257 lists", edit(func(b []byte) []byte { be.PutUint32(b[offLists:], 257); return b }), "257 lists, want 1 to 256"},
		{"table past the end", edit(func(b []byte) []byte {
			be.PutUint32(b[offLists:], 200)
			return b
		}), "bytes of table"},
		{"empty name", edit(func(b []byte) []byte { clear(b[rec(0) : rec(0)+nameSize]); return resum(b) }), "name is not"},
		{"name with a NUL inside", edit(func(b []byte) []byte { b[rec(0)+3] = 'a'; return resum(b) }), "name is not"},
		{"name with a control character", edit(func(b []byte) []byte { b[rec(0)] = '\n'; return resum(b) }), "name is not"},
		{"key type 3", edit(func(b []byte) []byte { b[rec(0)+recType] = 3; return resum(b) }), "key type 3"},
		{"RSA-2047", edit(func(b []byte) []byte { be.PutUint32(b[rec(0)+recBits:], 2047); return resum(b) }), "RSA key size 2047"},
		{"P-255", edit(func(b []byte) []byte { be.PutUint32(b[rec(2)+recBits:], 255); return resum(b) }), "EC key size 255"},
		{"scheme 0", edit(func(b []byte) []byte { b[rec(0)+recScheme] = 0; return resum(b) }), "scheme 0 is not"},
		{"sha256-x for RSA", edit(func(b []byte) []byte { b[rec(0)+recScheme] = 2; return resum(b) }), "does not hash RSA-2048"},
		{"width", edit(func(b []byte) []byte { b[rec(0)+recWidth] = 32; return resum(b) }), "entries of 32 bytes"},
		{"reserved record byte", edit(func(b []byte) []byte { b[rec(1)+recZero1] = 1; return resum(b) }), "reserved bytes"},
		{"reserved record word", edit(func(b []byte) []byte { b[rec(1)+recZero2] = 1; return resum(b) }), "reserved bytes"},
		{"offset", edit(func(b []byte) []byte { be.PutUint64(b[rec(1)+recOffset:], 0); return resum(b) }), "entries at offset 0"},
		{"count 0", edit(func(b []byte) []byte { be.PutUint64(b[rec(0)+recCount:], 0); return resum(b) }), "no entries"},
		{"count huge", edit(func(b []byte) []byte { be.PutUint64(b[rec(0)+recCount:], 1<<62); return resum(b) }), "do not fit"},
		{"bytes after the lists", edit(func(b []byte) []byte {
			b = append(b, 0)
			be.PutUint64(b[offFileSize:], uint64(len(b)))
			return resum(b)
		}), "1 bytes after the last list"},
		{"lists out of order", edit(func(b []byte) []byte { be.PutUint32(b[rec(0)+recBits:], 4096); return resum(b) }), "list 2 (v) is not after list 1 (m)"},
		{"checksum", edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), "checksum mismatch"},
		{"entries out of order", edit(func(b []byte) []byte {
			off := be.Uint64(b[rec(0)+recOffset:])
			e := b[off : off+32]
			a := bytes.Clone(e[:16])
			copy(e, e[16:])
			copy(e[16:], a)
			return resum(b)
		}), "entry 2 is not above entry 1"},
		{"duplicate entries", edit(func(b []byte) []byte {
			off := be.Uint64(b[rec(1)+recOffset:])
			copy(b[off+10:off+20], b[off:off+10])
			return resum(b)
		}), "entry 2 is not above entry 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lists, err := parseDebian(tt.file)
			if err == nil || lists != nil {
				t.Fatalf("parseDebian = %d lists, %v; want an error", len(lists), err)
			}
			testkit.CheckErr(t, err, ErrInvalidFile)
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
		})
	}
	if _, err := parseDebian(validFile(t)); err != nil {
		t.Fatalf("the valid file: %v", err)
	}
}

// TestOpenDebianErrors: what is not a file of the format, or no file, is
// an error naming the path.
func TestOpenDebianErrors(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("pkbfweak"), 0o644)
	damaged := filepath.Join(dir, "damaged")
	b := validFile(t)
	b[len(b)-1] ^= 1
	os.WriteFile(damaged, b, 0o644)
	huge := filepath.Join(dir, "huge")
	f, _ := os.Create(huge)
	f.Truncate(maxFileSize + 1) // sparse
	f.Close()
	for _, tt := range []struct{ path, want string }{
		{dir, "not a regular file"},
		{short, "8 bytes, shorter than the 64-byte header"},
		{damaged, "checksum mismatch"},
		{huge, "over the 1073741824 this package reads"},
	} {
		d, err := OpenDebian(tt.path)
		if err == nil {
			d.Close()
			t.Fatalf("OpenDebian(%s) succeeded", tt.path)
		}
		testkit.CheckErr(t, err, ErrInvalidFile)
		if !strings.Contains(err.Error(), tt.path+": ") || !strings.Contains(err.Error(), tt.want) {
			t.Fatalf("OpenDebian(%s) = %q, want the path and %q", tt.path, err, tt.want)
		}
	}
	if _, err := OpenDebian(filepath.Join(dir, "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenDebian(absent) = %v", err)
	}
}

// TestBuilderRoundTrip: a file parsed and written again is the same bytes.
func TestBuilderRoundTrip(t *testing.T) {
	orig := validFile(t)
	if again := rewrite(t, orig); !bytes.Equal(again, orig) {
		t.Fatal("the file written again differs")
	}
}

// rewrite parses a valid file and writes its lists again.
func rewrite(t testing.TB, file []byte) []byte {
	lists, err := parseDebian(file)
	if err != nil {
		t.Fatal(err)
	}
	var b Builder
	for _, l := range lists {
		bl, err := b.list(l.List)
		if err != nil {
			t.Fatalf("list %s: %v", l.Name, err)
		}
		for k := 0; k < len(l.entries); k += l.width {
			bl.add(l.entries[k : k+l.width])
		}
	}
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func FuzzParseDebian(f *testing.F) {
	f.Add(validFile(f))
	f.Add([]byte(fileMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(b []byte) {
			lists, err := parseDebian(b)
			if err != nil {
				testkit.CheckErr(t, err, ErrInvalidFile)
				if lists != nil {
					t.Fatal("a failed parse returned lists")
				}
				return
			}
			if again := rewrite(t, b); !bytes.Equal(again, b) {
				t.Fatalf("the file written again differs:\n%x\n%x", again, b)
			}
		}
		check(b)
		// The input with its checksum made right, to reach the checks
		// behind it.
		if len(b) >= headerSize {
			check(resum(bytes.Clone(b)))
		}
	})
}

func FuzzReadList(f *testing.F) {
	f.Add(uint8(SHA256Modulus), []byte("# c\n"+strings.Repeat("ab", 32)+"\n"))
	f.Add(uint8(VulnKey), []byte(strings.Repeat("AB", 10)+"\r\n\n"))
	f.Fuzz(func(t *testing.T, scheme uint8, text []byte) {
		var b Builder
		l := List{Name: "fuzz", Key: "RSA-2048", Scheme: Scheme(scheme)}
		if err := b.ReadList(l, bytes.NewReader(text)); err != nil {
			if !strings.HasPrefix(err.Error(), "pkbf: ") {
				t.Fatalf("error %q without the prefix", err)
			}
			return
		}
		// Every line that is not blank or a comment is an entry.
		want := 0
		for _, line := range strings.Split(string(text), "\n") {
			if line = strings.TrimSpace(line); line != "" && line[0] != '#' {
				want++
			}
		}
		if got := len(b.lists[0].hashes); got != want {
			t.Fatalf("%d entries, %d hash lines", got, want)
		}
	})
}
