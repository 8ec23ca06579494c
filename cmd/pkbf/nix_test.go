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
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/nixbloom"
)

// nixEnv runs Nix offline and without a daemon (Debian's nix-bin); the
// test skips where Nix is missing, unless PKBF_REQUIRE_NIX is set (as
// .ci/run sets it, having installed nix-bin).
func nixEnv(t *testing.T) []string {
	t.Helper()
	for _, tool := range []string{"nix", "nix-store", "nix-hash"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("PKBF_REQUIRE_NIX") != "" {
				t.Fatalf("%s is missing (apt-get install nix-bin)", tool)
			}
			t.Skipf("%s is missing (apt-get install nix-bin): the Nix cache test needs Nix itself", tool)
		}
	}
	return append(os.Environ(), "NIX_CONFIG=build-users-group =\nsubstituters =\nsandbox = false\nexperimental-features = nix-command")
}

func nixRun(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, msg)
	}
	return string(out)
}

// A binary cache written by Nix (nix copy --to file://...): pkbf nix build
// makes its filter and names it in nix-cache-info, which Nix still reads;
// pkbf nix check, through file:// and HTTP, answers as nixbloom's
// MayContain on every path, says possibly-present for every path in the
// cache, and absent for every other path one of whose bits is clear
// (decoded by nix-hash, the positions computed here, independently of
// pkbf); --confirm tells the filter's false positives from the paths
// present; exit statuses as check's.
func TestNixCache(t *testing.T) {
	env := nixEnv(t)
	dir := t.TempDir()
	var files []string
	r := rand.New(rand.NewPCG(1, uint64(os.Getpid())))
	for i := range 400 {
		name := filepath.Join(dir, fmt.Sprintf("f%03d.txt", i))
		os.WriteFile(name, fmt.Appendf(nil, "pkbf nix test %d %x\n", i, r.Uint64()), 0o644)
		files = append(files, name)
	}
	paths := strings.Fields(nixRun(t, env, "nix-store", append([]string{"--add"}, files...)...))
	if len(paths) != len(files) {
		t.Fatalf("nix-store --add gave %d paths for %d files", len(paths), len(files))
	}
	cached, others := paths[:100], paths[100:]
	cache := filepath.Join(dir, "cache")
	nixRun(t, env, "nix", append([]string{"copy", "--to", "file://" + cache + "?compression=none"}, cached...)...)

	if r := runWith(t, nil, "nix", "check", cache, cached[0]); r.code != exitTrouble || !strings.Contains(r.stderr, "advertises no Bloom filter") || !strings.Contains(r.stderr, "pkbf nix build") {
		t.Errorf("a cache without a filter: exit %d, %q", r.code, r.stderr)
	}
	if r := runWith(t, nil, "nix", "build", cache); r.code != 0 || !strings.Contains(r.stdout, "100 store paths") {
		t.Fatalf("nix build: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	info, _ := os.ReadFile(filepath.Join(cache, "nix-cache-info"))
	if !strings.Contains(string(info), "StoreDir: /nix/store\n") || !strings.Contains(string(info), "BloomFilter: "+defaultNixFilterName+"\n") {
		t.Errorf("nix-cache-info:\n%s", info)
	}
	if listed := strings.Fields(nixRun(t, env, "nix", "path-info", "--store", "file://"+cache, "--all")); len(listed) != len(cached) {
		t.Errorf("Nix lists %d paths in the cache after pkbf nix build, want %d", len(listed), len(cached))
	}
	raw, _ := os.ReadFile(filepath.Join(cache, defaultNixFilterName))
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
	hexes := strings.Fields(nixRun(t, env, "nix-hash", append([]string{"--type", "sha1", "--to-base16"}, hashParts...)...))
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
	if _, err := os.Stat(filepath.Join(dir, defaultNixFilterName)); err == nil {
		t.Errorf("a filter was written")
	}
}
