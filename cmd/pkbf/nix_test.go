package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/nixbloom"
)

// A binary cache written by Nix (nix copy --to file://...): pkbf nix build
// makes its filter and names it in nix-cache-info, which Nix still reads;
// pkbf nix check, through file:// and HTTP, answers as nixbloom's
// MayContain on every path, says possibly-present for every path in the
// cache, and absent for every other path one of whose bits is clear
// (decoded by nix-hash, the positions computed here, independently of
// pkbf); --confirm tells the filter's false positives from the paths
// present; exit statuses as check's.
func TestNixCache(t *testing.T) {
	env := testkit.NixEnv(t)
	dir := t.TempDir()
	var files []string
	r := rand.New(rand.NewPCG(1, uint64(os.Getpid())))
	for i := range 400 {
		name := filepath.Join(dir, fmt.Sprintf("f%03d.txt", i))
		os.WriteFile(name, fmt.Appendf(nil, "pkbf nix test %d %x\n", i, r.Uint64()), 0o644)
		files = append(files, name)
	}
	paths := strings.Fields(testkit.Nix(t, env, "nix-store", append([]string{"--add"}, files...)...))
	if len(paths) != len(files) {
		t.Fatalf("nix-store --add gave %d paths for %d files", len(paths), len(files))
	}
	cached, others := paths[:100], paths[100:]
	cache := filepath.Join(dir, "cache")
	testkit.Nix(t, env, "nix", append([]string{"copy", "--to", "file://" + cache + "?compression=none"}, cached...)...)

	if r := runWith(t, nil, "nix", "check", cache, cached[0]); r.code != exitTrouble || !strings.Contains(r.stderr, "advertises no Bloom filter") || !strings.Contains(r.stderr, "pkbf nix build") {
		t.Errorf("a cache without a filter: exit %d, %q", r.code, r.stderr)
	}
	if r := runWith(t, nil, "nix", "build", cache); r.code != 0 || !strings.Contains(r.stdout, "100 store paths") {
		t.Fatalf("nix build: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	info, _ := os.ReadFile(filepath.Join(cache, "nix-cache-info"))
	if !strings.Contains(string(info), "StoreDir: /nix/store\n") || !strings.Contains(string(info), "BloomFilter: "+nixbloom.DefaultFilterName+"\n") {
		t.Errorf("nix-cache-info:\n%s", info)
	}
	if listed := strings.Fields(testkit.Nix(t, env, "nix", "path-info", "--store", "file://"+cache, "--all")); len(listed) != len(cached) {
		t.Errorf("Nix lists %d paths in the cache after pkbf nix build, want %d", len(listed), len(cached))
	}
	raw, _ := os.ReadFile(filepath.Join(cache, nixbloom.DefaultFilterName))
	reference, err := nixbloom.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}

	// Every path's bits, independently: nix-hash decodes the hash parts,
	// h1 and h2 are the little-endian words at bytes 0 and 8, position i
	// is (h1 + i*h2) mod m, bit p is byte p/8 >> (p%8).
	hashParts := make([]string, len(paths))
	for i, p := range paths {
		hashParts[i] = filepath.Base(p)[:32]
	}
	hexes := strings.Fields(testkit.Nix(t, env, "nix-hash", append([]string{"--type", "sha1", "--to-base16"}, hashParts...)...))
	k, m := binary.LittleEndian.Uint64(raw[16:]), binary.LittleEndian.Uint64(raw[24:])
	bitsSet := map[string]bool{}
	for i, h := range hexes {
		b, _ := hex.DecodeString(h)
		h1, h2 := binary.LittleEndian.Uint64(b[0:]), binary.LittleEndian.Uint64(b[8:])
		all := true
		for j := range k {
			p := (h1 + j*h2) % m
			all = all && raw[32+p/8]>>(p%8)&1 == 1
		}
		bitsSet[paths[i]] = all
	}

	srv := httptest.NewServer(http.FileServer(http.Dir(cache)))
	defer srv.Close()
	for _, url := range []string{"file://" + cache + "?compression=none", cache, srv.URL} {
		r := runWith(t, strings.NewReader(strings.Join(paths, "\n")+"\n"), "nix", "check", "--json", url)
		if r.code != exitFound {
			t.Fatalf("%s: exit %d, %s", url, r.code, r.stderr)
		}
		if !strings.HasPrefix(r.stdout, `{"source":"<stdin>: line 1",`) {
			t.Errorf("%s: JSON does not start as pkbf check's does: %.60q", url, r.stdout)
		}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != len(paths) {
			t.Fatalf("%s: %d verdicts for %d paths", url, len(lines), len(paths))
		}
		falsePositives := 0
		for i, line := range lines {
			var v nixVerdict
			if err := json.Unmarshal([]byte(line), &v); err != nil || v.PossiblyPresent == nil || v.Path != paths[i] || v.Source != fmt.Sprintf("<stdin>: line %d", i+1) {
				t.Fatalf("%s: line %d: %q: %v", url, i+1, line, err)
			}
			want, _ := reference.MayContain(paths[i])
			if *v.PossiblyPresent != want || want != bitsSet[paths[i]] {
				t.Errorf("%s: %s: possibly present %v; nixbloom %v; bits all set %v", url, paths[i], *v.PossiblyPresent, want, bitsSet[paths[i]])
			}
			if i < len(cached) && !*v.PossiblyPresent {
				t.Errorf("%s: %s is in the cache, and check says absent", url, paths[i])
			}
			if i >= len(cached) && *v.PossiblyPresent {
				falsePositives++
			}
		}
		t.Logf("%s: %d of %d paths absent from the cache are false positives", url, falsePositives, len(others))
	}

	// --confirm asks the cache about each possibly-present path.
	var fp string
	for _, p := range others {
		if bitsSet[p] {
			fp = p
		}
	}
	args := []string{"nix", "check", "--confirm", srv.URL, cached[3], others[0]}
	if fp != "" {
		args = append(args, fp)
	}
	res := runWith(t, nil, args...)
	want := "present\t" + cached[3] + "\nabsent\t" + others[0] + "\n"
	if fp != "" {
		want += "absent\t" + fp + "\n"
	}
	if res.code != exitFound || res.stdout != want {
		t.Errorf("--confirm: exit %d, printed\n%s\nwant\n%s\n%s", res.code, res.stdout, want, res.stderr)
	}

	// Exit statuses: all absent 0; a path not a store path 2, naming it.
	var absent []string
	for _, p := range others {
		if !bitsSet[p] && len(absent) < 3 {
			absent = append(absent, p)
		}
	}
	if r := runWith(t, nil, append([]string{"nix", "check", cache}, absent...)...); r.code != exitOK || strings.Count(r.stdout, "absent\t") != len(absent) {
		t.Errorf("absent paths: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runWith(t, nil, "nix", "check", cache, absent[0], "not-a-store-path"); r.code != exitTrouble || !strings.Contains(r.stderr, "argument 3: ") || !strings.Contains(r.stderr, `"not-a-store-path"`) {
		t.Errorf("a bad path: exit %d, %q", r.code, r.stderr)
	}
	if r := runWith(t, strings.NewReader("# nothing\n"), "nix", "check", cache); r.code != exitTrouble || !strings.Contains(r.stderr, "no store path to check") {
		t.Errorf("no path at all: exit %d, %q", r.code, r.stderr)
	}
	if r := runWith(t, nil, "nix", "check", cache, cached[0], "not-a-store-path"); r.code != exitFound {
		t.Errorf("a bad path beside one present: exit %d, want %d", r.code, exitFound)
	}

	// nix build from a list of paths writes the same filter as from the
	// cache's .narinfo files.
	list := filepath.Join(dir, "paths.txt")
	os.WriteFile(list, []byte("# the cache's paths\n"+strings.Join(cached, "\n")+"\n"), 0o644)
	out := filepath.Join(dir, "from-list.nixbloom")
	if r := runWith(t, nil, "nix", "build", "--output", out, list); r.code != 0 {
		t.Fatalf("nix build from a list: %d %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != string(raw) {
		t.Errorf("the filter built from the list differs from the cache's")
	}
}

// nix build refuses what it cannot build from, and writes nothing then.
func TestNixBuildRefuses(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "paths.txt")
	os.WriteFile(list, []byte("/nix/store/00qrx0rfv2knlsshwjsq16198fklyy0y-f12.txt\n/nix/store/not-a-hash\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nix", "build", "--output", filepath.Join(dir, "out"), list}, list + ": line 2: nixbloom: invalid store path"},
		{[]string{"nix", "build", list}, "needs --output FILE"},
		{[]string{"nix", "build", dir}, dir + " is not a Nix binary cache"},
		{[]string{"nix", "build", "--fp-rate", "2", "--output", filepath.Join(dir, "out"), list}, "--fp-rate 2"},
		{[]string{"nix", "frobnicate"}, "want pkbf nix build or pkbf nix check"},
		{[]string{"nix", "check", "gopher://x", "p"}, "not gopher://"},
	} {
		r := runWith(t, nil, tc.args...)
		if r.code != exitTrouble || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	os.WriteFile(filepath.Join(dir, "nix-cache-info"), []byte("StoreDir: /nix/store\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "0000000000000000000000000000000a.narinfo"), []byte("URL: nar/x.nar\n"), 0o644)
	if r := runWith(t, nil, "nix", "build", dir); r.code != exitTrouble || !strings.Contains(r.stderr, "no StorePath field; nothing written") {
		t.Errorf("a narinfo without StorePath: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, nixbloom.DefaultFilterName)); err == nil {
		t.Errorf("a filter was written")
	}
}

// nixTestHash is a valid hash part; nixTestPath a store path with it.
const (
	nixTestHash = "00qrx0rfv2knlsshwjsq16198fklyy0y"
	nixTestPath = "/nix/store/" + nixTestHash + "-f12.txt"
)

// nixTestCache makes a binary cache directory holding nixTestPath, with
// info as its nix-cache-info, in a directory of its own inside a temporary
// one (so that ../outside is outside it); it returns both.
func nixTestCache(t *testing.T, info string) (top, cache string) {
	t.Helper()
	top = t.TempDir()
	cache = filepath.Join(top, "cache")
	os.Mkdir(cache, 0o755)
	os.WriteFile(filepath.Join(cache, "nix-cache-info"), []byte(info), 0o644)
	narinfo := "StorePath: " + nixTestPath + "\nURL: nar/x.nar\nCompression: none\nNarHash: sha256:1xmr8jicvzszfzpz46g37mlpvbzjl2wpwvl2b05psipssyp1sm8h\nNarSize: 120\nReferences: \n"
	os.WriteFile(filepath.Join(cache, nixTestHash+".narinfo"), []byte(narinfo), 0o644)
	return top, cache
}

// nixTestFilter returns a filter file holding paths.
func nixTestFilter(t *testing.T, paths ...string) []byte {
	t.Helper()
	f, err := nixbloom.New(uint64(len(paths)), 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		f.Add(p)
	}
	var b strings.Builder
	f.WriteTo(&b)
	return []byte(b.String())
}

// Issue 41, item 12: a cache reached over HTTP never makes pkbf nix check
// read a local file, neither through its BloomFilter field (a file://
// URL, an absolute path, a path that leads out of the cache) nor through
// a redirect to file://. The local files here are a filter that holds the
// path asked about (read, it would answer possibly-present) and a text
// whose first bytes an error would quote.
func TestNixCheckHTTPCacheNeverReadsLocalFiles(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "local.nixbloom")
	os.WriteFile(local, nixTestFilter(t, nixTestPath), 0o644)
	secret := filepath.Join(dir, "secret.txt")
	os.WriteFile(secret, []byte("SECRET-MARKER: a local file no cache may read, long enough for a header\n"), 0o600)
	for _, tc := range []struct {
		name, field, redirect string
	}{
		{"file URL of a filter", "file://" + local, ""},
		{"file URL of a text", "file://" + secret, ""},
		{"file URL with localhost", "file://localhost" + local, ""},
		{"absolute path", local, ""},
		{"network-path reference", "//localhost" + local, ""},
		{"relative path out of the cache", "../../../../../../../../.." + local, ""},
		{"escaped dots out of the cache", "%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e" + local, ""},
		{"redirect to a file URL of a filter", "store-paths.nixbloom", "file://" + local},
		{"redirect to a file URL of a text", "store-paths.nixbloom", "file://" + secret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/nix-cache-info":
					fmt.Fprintf(w, "StoreDir: /nix/store\nBloomFilter: %s\n", tc.field)
				case tc.redirect != "":
					http.Redirect(w, r, tc.redirect, http.StatusFound)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			r := runWith(t, nil, "nix", "check", srv.URL, nixTestPath)
			if r.code != exitTrouble || strings.Contains(r.stdout+r.stderr, "SECRET") || strings.Contains(r.stdout, "possibly-present") {
				t.Errorf("exit %d, %q %q; want 2, no answer and nothing of the local file", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "refused") && !strings.Contains(r.stderr, "404") {
				t.Errorf("stderr %q does not say what was refused", r.stderr)
			}
		})
	}
}

// Issue 41, item 13: pkbf nix build never writes through a symbolic link
// under the cache: not at the filter's name, not at a directory on the way
// to --output (even one that leads to another directory of the cache), not
// at nix-cache-info. Each is refused before anything is written; the file
// outside keeps its bytes and the link stays a link.
func TestNixBuildNeverWritesThroughSymlinks(t *testing.T) {
	const info = "StoreDir: /nix/store\n"
	for _, tc := range []struct {
		name  string
		setup func(top, cache string) // makes the link
		args  []string
		want  string
	}{
		{"filter name a link out of the cache", func(top, cache string) {
			os.Symlink("../outside.txt", filepath.Join(cache, "store-paths.nixbloom"))
		}, nil, "store-paths.nixbloom is a symbolic link"},
		{"filter name a link to an absent file", func(top, cache string) {
			os.Remove(filepath.Join(top, "outside.txt"))
			os.Symlink("../outside.txt", filepath.Join(cache, "store-paths.nixbloom"))
		}, nil, "store-paths.nixbloom is a symbolic link"},
		{"--output through a directory link out of the cache", func(top, cache string) {
			os.Mkdir(filepath.Join(cache, "sub"), 0o755)
			os.Symlink(filepath.Join(top, "outdir"), filepath.Join(cache, "sub", "lnk"))
		}, []string{"--output", "sub/lnk/x.nixbloom"}, "lnk is a symbolic link, not a directory"},
		{"--output through a directory link inside the cache", func(top, cache string) {
			os.Mkdir(filepath.Join(cache, "real"), 0o755)
			os.Symlink("real", filepath.Join(cache, "lnk"))
		}, []string{"--output", "lnk/x.nixbloom"}, "lnk is a symbolic link, not a directory"},
		{"nix-cache-info a link out of the cache", func(top, cache string) {
			os.WriteFile(filepath.Join(top, "outside.txt"), []byte(info), 0o644)
			os.Remove(filepath.Join(cache, "nix-cache-info"))
			os.Symlink("../outside.txt", filepath.Join(cache, "nix-cache-info"))
		}, nil, "nix-cache-info is a symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top, cache := nixTestCache(t, info)
			outside := filepath.Join(top, "outside.txt")
			os.WriteFile(outside, []byte("StoreDir: /nix/store\n"), 0o644)
			os.Mkdir(filepath.Join(top, "outdir"), 0o755)
			tc.setup(top, cache)
			before, _ := os.ReadFile(outside)
			infoBefore, _ := os.ReadFile(filepath.Join(cache, "nix-cache-info"))
			r := runWith(t, nil, append(append([]string{"nix", "build"}, tc.args...), cache)...)
			if r.code != exitTrouble || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, %q; want 2 and %q", r.code, r.stderr, tc.want)
			}
			if after, _ := os.ReadFile(outside); string(after) != string(before) {
				t.Errorf("outside.txt was written: %q", after)
			}
			if entries, _ := os.ReadDir(filepath.Join(top, "outdir")); len(entries) != 0 {
				t.Errorf("a file was written outside the cache: %v", entries[0].Name())
			}
			if infoAfter, _ := os.ReadFile(filepath.Join(cache, "nix-cache-info")); string(infoAfter) != string(infoBefore) {
				t.Errorf("nix-cache-info changed: %q", infoAfter)
			}
			if fi, err := os.Lstat(filepath.Join(cache, "store-paths.nixbloom")); err == nil && fi.Mode().IsRegular() {
				t.Errorf("a filter was written")
			}
		})
	}
}

// Issue 41, item 14: "BloomFilter : old.nixbloom" (a space before the
// colon) is, as Nix reads nix-cache-info, no BloomFilter field: nix check
// says the cache advertises none, and nix build writes one BloomFilter line
// and drops the look-alike, after which nix check reads the new filter.
func TestNixBloomFilterLookalikeKey(t *testing.T) {
	_, cache := nixTestCache(t, "StoreDir: /nix/store\nBloomFilter : old.nixbloom\nWantMassQuery: 1\n")
	os.WriteFile(filepath.Join(cache, "old.nixbloom"), nixTestFilter(t), 0o644) // holds nothing
	if r := runWith(t, nil, "nix", "check", cache, nixTestPath); r.code != exitTrouble || !strings.Contains(r.stderr, "advertises no Bloom filter") {
		t.Errorf("check before build: exit %d, %q %q; want 2, no filter", r.code, r.stdout, r.stderr)
	}
	if r := runWith(t, nil, "nix", "build", cache); r.code != exitOK {
		t.Fatalf("build: exit %d, %q", r.code, r.stderr)
	}
	info, _ := os.ReadFile(filepath.Join(cache, "nix-cache-info"))
	if want := "StoreDir: /nix/store\nBloomFilter: store-paths.nixbloom\nWantMassQuery: 1\n"; string(info) != want {
		t.Errorf("nix-cache-info after build:\n%s\nwant\n%s", info, want)
	}
	if r := runWith(t, nil, "nix", "check", cache, nixTestPath); r.code != exitFound || r.stdout != "possibly-present\t"+nixTestPath+"\n" {
		t.Errorf("check after build: exit %d, %q %q; want the new filter's answer", r.code, r.stdout, r.stderr)
	}
}

// Issue 41 follow-up F6: a PATH with a line end or tab in it cannot forge
// a line of nix check's output: a store path's characters are a fixed set
// (its directory absolute, clean and without control characters), so such
// a PATH is refused, quoted, on standard error, and prints no verdict.
func TestNixCheckPathCannotForgeLines(t *testing.T) {
	_, cache := nixTestCache(t, "StoreDir: /nix/store\nBloomFilter: f.nixbloom\n")
	os.WriteFile(filepath.Join(cache, "f.nixbloom"), nixTestFilter(t, nixTestPath), 0o644)
	for _, forged := range []string{
		"/x\npresent\t/nix/store/whatever/" + nixTestHash + "-f12.txt",
		"/nix/store/" + nixTestHash + "-f12.txt\npresent\t/nix/store/" + nixTestHash + "-f12.txt",
		"/nix/store\t/" + nixTestHash + "-f12.txt",
		"/nix/store/\x1b[2K" + nixTestHash + "-f12.txt",
	} {
		for _, confirm := range [][]string{nil, {"--confirm"}} {
			args := append(append([]string{"nix", "check"}, confirm...), cache, forged)
			r := runWith(t, nil, args...)
			if r.code != exitTrouble || r.stdout != "" || !strings.Contains(r.stderr, "argument ") || strings.ContainsAny(strings.TrimSuffix(r.stderr, "\n"), "\n\t") {
				t.Errorf("%q %v: exit %d, stdout %q, stderr %q; want 2, nothing printed, the path quoted", forged, confirm, r.code, r.stdout, r.stderr)
			}
		}
	}
}

// Issue 41 follow-up F4, F5: nix build --output names a file the cache's
// BloomFilter field reads back as that file, and never one of the cache's
// own: each of these is refused, and the cache is left as it was.
func TestNixBuildOutputNeverACacheFile(t *testing.T) {
	for _, out := range []string{nixTestHash + ".narinfo", "nar/x.nar", "a:b", "100%.bloom", "f#x", "f?x", "%41.bloom"} {
		_, cache := nixTestCache(t, "StoreDir: /nix/store\n")
		os.Mkdir(filepath.Join(cache, "nar"), 0o755)
		os.WriteFile(filepath.Join(cache, "nar", "x.nar"), []byte("nar"), 0o644)
		before := map[string]string{}
		for _, name := range []string{"nix-cache-info", nixTestHash + ".narinfo", "nar/x.nar"} {
			b, _ := os.ReadFile(filepath.Join(cache, name))
			before[name] = string(b)
		}
		r := runWith(t, nil, "nix", "build", "--output", out, cache)
		if r.code != exitTrouble || !strings.Contains(r.stderr, "pkbf: error: nixbloom: filter path ") {
			t.Errorf("--output %s: exit %d, %q; want 2 and the name refused", out, r.code, r.stderr)
		}
		for name, text := range before {
			if b, _ := os.ReadFile(filepath.Join(cache, name)); string(b) != text {
				t.Errorf("--output %s: %s changed", out, name)
			}
		}
	}
}
