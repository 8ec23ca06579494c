package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/weakkeys"
)

// randomHashes is n lines of random hex of the given digits.
func randomHashes(t *testing.T, n, digits int) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, digits/2)
	for range n {
		rand.Read(buf)
		b.WriteString(hex.EncodeToString(buf) + "\n")
	}
	return b.String()
}

// weakSources writes the sources of a Debian weak-key file to dir: a
// CA/B Forum SHA-256 list and an openssl-vulnkey list, each holding one of
// the RSA keys returned among random hashes, and a tree of key files (an
// RSA key and a P-256 key, as openssl writes them), whose keys it also
// returns. The first key returned is in the SHA-256 list, the second in
// the openssl-vulnkey list, the others in the tree.
func weakSources(t *testing.T, dir string) (lists []string, tree string, weak [][]byte) {
	t.Helper()
	var rsaKeys []*rsa.PrivateKey
	for range 3 {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		rsaKeys = append(rsaKeys, k)
	}
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, pub := range []any{&rsaKeys[0].PublicKey, &rsaKeys[1].PublicKey, &rsaKeys[2].PublicKey, &ecKey.PublicKey} {
		spki, _ := x509.MarshalPKIXPublicKey(pub)
		weak = append(weak, spki)
	}
	modulusHash := sha256.Sum256(rsaKeys[0].N.Bytes())
	// openssl-vulnkey: the last 20 digits of the SHA-1 of what openssl rsa
	// -noout -modulus prints.
	vulnkey := sha1.Sum(fmt.Appendf(nil, "Modulus=%X\n", rsaKeys[1].N))
	files := map[string]string{
		"sha256_modulus_2048.csv": randomHashes(t, 300, 64) + hex.EncodeToString(modulusHash[:]) + "\n" + randomHashes(t, 300, 64),
		"blacklist.RSA-2048":      "# openssl-vulnkey\n" + randomHashes(t, 200, 20) + hex.EncodeToString(vulnkey[:])[20:] + "\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		lists = append(lists, path)
	}
	slices.Sort(lists)
	tree = filepath.Join(dir, "lenny")
	for name, block := range map[string]*pem.Block{
		"amd64/rnd/rsa-2048/17.key": {Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKeys[2])},
		"amd64/rnd/ec-256/18.pem":   {Type: "PUBLIC KEY", Bytes: weak[3]},
	} {
		path := filepath.Join(tree, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(tree, "README.md"), []byte("not a key file: skipped\n"), 0o644)
	return lists, tree, weak
}

// debianFindings is the names of the Debian lists that hold the key.
func debianFindings(t *testing.T, c *weakkeys.Checker, spki []byte) []string {
	t.Helper()
	res, err := c.Check(spki)
	if err != nil {
		t.Fatal(err)
	}
	var lists []string
	for _, f := range res.Findings {
		if f.Rule == weakkeys.RuleDebian {
			lists = append(lists, f.Detail)
		}
	}
	return lists
}

// pkbf weak build writes the lists and key trees given into one file,
// which the weak-key checks read and find the weak keys in (each in the
// list it came from, a key that is in none in none); weak info prints
// its lists, as text and JSON, as weakkeys reads them.
func TestWeakBuildAndInfo(t *testing.T) {
	dir := t.TempDir()
	lists, tree, weak := weakSources(t, dir)
	out := filepath.Join(dir, "debian-weak-keys.pkwk")
	r := runWith(t, nil, append([]string{"weak", "build", out}, append(lists, tree)...)...)
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("weak build: exit %d, stderr %q", r.code, r.stderr)
	}
	wantLists := []weakList{
		{"sha256_modulus_2048.csv", "RSA-2048", "sha256-modulus", 601},
		{"lenny", "RSA-2048", "sha256-modulus", 1},
		{"blacklist.RSA-2048", "RSA-2048", "sha1-vulnkey-80", 201},
		{"lenny", "P-256", "sha256-x", 1},
	}
	if !strings.HasPrefix(r.stdout, fmt.Sprintf("wrote %s: 4 lists, 804 entries, from 3 sources, ", out)) {
		t.Errorf("weak build printed %q", r.stdout)
	}
	for _, l := range wantLists {
		if !strings.Contains(r.stdout, fmt.Sprintf("%s  ", l.Key)) || !strings.Contains(r.stdout, fmt.Sprintf("%d  ", l.Entries)) {
			t.Errorf("weak build's table lacks %v:\n%s", l, r.stdout)
		}
	}

	d, err := weakkeys.OpenDebian(out)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var got []weakList
	for _, l := range d.Lists() {
		got = append(got, weakList{l.Name, l.Key, l.Scheme.String(), l.Entries})
	}
	slices.SortFunc(got, func(a, b weakList) int { return strings.Compare(a.Name+a.Key, b.Name+b.Key) })
	sorted := slices.Clone(wantLists)
	slices.SortFunc(sorted, func(a, b weakList) int { return strings.Compare(a.Name+a.Key, b.Name+b.Key) })
	if !slices.Equal(got, sorted) {
		t.Fatalf("the file's lists are %v, want %v", got, sorted)
	}
	c, err := weakkeys.New(weakkeys.WithDebian(d))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]string{{"sha256_modulus_2048.csv"}, {"blacklist.RSA-2048"}, {"lenny"}, {"lenny"}} {
		if got := debianFindings(t, c, weak[i]); !slices.Equal(got, want) {
			t.Errorf("key %d: on the lists %v, want %v", i, got, want)
		}
	}
	clean, _ := rsa.GenerateKey(rand.Reader, 2048)
	cleanSPKI, _ := x509.MarshalPKIXPublicKey(&clean.PublicKey)
	if got := debianFindings(t, c, cleanSPKI); len(got) != 0 {
		t.Errorf("a fresh key is on the lists %v", got)
	}

	r = runWith(t, nil, "weak", "info", out)
	fi, _ := os.Stat(out)
	wantText := fmt.Sprintf("file:    %s\nsize:    %s\nentries: 804 in 4 lists\n", out, sizeText(uint64(fi.Size())))
	if r.code != exitOK || !strings.HasPrefix(r.stdout, wantText) {
		t.Fatalf("weak info: exit %d, %q, want it to start %q (stderr %q)", r.code, r.stdout, wantText, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")[3:]
	if len(lines) != 1+len(d.Lists()) || strings.Join(strings.Fields(lines[0]), " ") != "key scheme entries name" {
		t.Fatalf("weak info's table:\n%s", strings.Join(lines, "\n"))
	}
	for i, l := range d.Lists() {
		if f := strings.Fields(lines[1+i]); !slices.Equal(f, []string{l.Key, l.Scheme.String(), fmt.Sprint(l.Entries), l.Name}) {
			t.Errorf("weak info's row %d is %q, want %v", i+1, lines[1+i], l)
		}
	}

	r = runWith(t, nil, "weak", "info", "--json", out)
	var info struct {
		File    string
		Size    int64
		Entries int
		Lists   []weakList
	}
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || r.code != exitOK || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("weak info --json: exit %d, %q: %v", r.code, r.stdout, err)
	}
	if info.File != out || info.Size != fi.Size() || info.Entries != 804 || len(info.Lists) != len(d.Lists()) {
		t.Fatalf("weak info --json: %+v", info)
	}
	for i, l := range d.Lists() {
		if info.Lists[i] != (weakList{l.Name, l.Key, l.Scheme.String(), l.Entries}) {
			t.Errorf("weak info --json: list %d is %+v, want %+v", i, info.Lists[i], l)
		}
	}

	// Built again over the file it wrote: a Debian weak-key file is
	// replaced without --force; --name names the tree's lists.
	r = runWith(t, nil, "weak", "build", "--name", "harica-lenny", out, tree)
	if r.code != exitOK || !strings.Contains(r.stdout, "wrote "+out+": 2 lists, 2 entries, from 1 source, ") || !strings.Contains(r.stdout, "harica-lenny") {
		t.Fatalf("weak build over a weak-key file: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
}

// What weak build cannot read is an error naming it, and nothing is
// written; an OUT that is not a weak-key file is replaced only with
// --force (a list given first by mistake is kept).
func TestWeakBuildErrors(t *testing.T) {
	dir := t.TempDir()
	lists, tree, _ := weakSources(t, dir)
	badList := filepath.Join(dir, "sha256_xcoord_P-256.csv")
	os.WriteFile(badList, []byte(randomHashes(t, 3, 64)+"not a hash\n"), 0o644)
	unnamed := filepath.Join(dir, "weak-keys.txt")
	os.WriteFile(unnamed, []byte(randomHashes(t, 3, 64)), 0o644)
	badTree := filepath.Join(dir, "bad-tree")
	os.MkdirAll(badTree, 0o755)
	badKey := filepath.Join(badTree, "1.key")
	os.WriteFile(badKey, []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"), 0o644)
	out := filepath.Join(dir, "out.pkwk")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no arguments", nil, "missing arguments"},
		{"no source", []string{out}, "missing arguments"},
		{"a missing source", []string{out, filepath.Join(dir, "missing.csv")}, "missing.csv: no such file"},
		{"a bad line", []string{out, lists[0], badList}, badList + ": list sha256_xcoord_P-256.csv, line 4: 10 characters"},
		{"a list its name does not tell", []string{out, unnamed}, unnamed + ": the file name says neither"},
		{"a key that cannot be read", []string{out, tree, badTree}, badKey + ": "},
		{"a name too long", []string{"--name", strings.Repeat("x", 65), out, tree}, "is not 1 to 64 printable ASCII characters"},
		{"OUT in no directory", []string{filepath.Join(dir, "none", "out.pkwk"), lists[0]}, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runWith(t, nil, append([]string{"weak", "build"}, tc.args...)...)
			if r.code != exitTrouble || !strings.Contains(r.stderr, tc.want) || !strings.HasPrefix(r.stderr, "pkbf: error: ") {
				t.Fatalf("exit %d, stderr %q; want 2 and an error saying %q", r.code, r.stderr, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatalf("%s was written", out)
			}
			if entries, _ := filepath.Glob(filepath.Join(dir, ".*")); len(entries) != 0 {
				t.Fatalf("left behind: %v", entries)
			}
		})
	}

	// The first list given as OUT: refused, and kept as it was.
	before, _ := os.ReadFile(lists[0])
	r := runWith(t, nil, "weak", "build", lists[0], lists[1])
	after, _ := os.ReadFile(lists[0])
	if r.code != exitTrouble || !strings.Contains(r.stderr, "give --force to replace it") || !strings.Contains(r.stderr, lists[0]) || string(after) != string(before) {
		t.Fatalf("weak build over a list: exit %d, %q; the list changed: %v", r.code, r.stderr, string(after) != string(before))
	}
	r = runWith(t, nil, "weak", "build", "--force", lists[0], lists[1])
	if d, err := weakkeys.OpenDebian(lists[0]); r.code != exitOK || err != nil {
		t.Fatalf("weak build --force over a list: exit %d, %q: %v", r.code, r.stderr, err)
	} else {
		d.Close()
	}
}

// weak info checks the whole file: a missing file, a directory, a file
// that is not one and one damaged in its last byte are errors naming it.
func TestWeakInfoErrors(t *testing.T) {
	dir := t.TempDir()
	lists, _, _ := weakSources(t, dir)
	good := filepath.Join(dir, "good.pkwk")
	if r := runWith(t, nil, "weak", "build", good, lists[0]); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	damaged := filepath.Join(dir, "damaged.pkwk")
	b, _ := os.ReadFile(good)
	b[len(b)-1] ^= 1
	os.WriteFile(damaged, b, 0o644)
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "missing.pkwk"), "missing.pkwk"},
		{"a directory", dir, dir},
		{"a list, not the file", lists[0], lists[0] + ": invalid Debian weak-key file"},
		{"damaged", damaged, damaged + ": invalid Debian weak-key file"},
	} {
		r := runWith(t, nil, "weak", "info", tc.path)
		if r.code != exitTrouble || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and an error naming %q", tc.name, r.code, r.stdout, r.stderr, tc.want)
		}
	}
	if r := runWith(t, nil, "weak"); r.code != exitTrouble || !strings.Contains(r.stderr, "want pkbf weak build or pkbf weak info") {
		t.Errorf("weak alone: exit %d, %q", r.code, r.stderr)
	}
}

// weakList is one list as weak info --json prints it.
type weakList struct {
	Name, Key, Scheme string
	Entries           int
}
