package nixbloom

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Publish writes the filter and then names it in nix-cache-info, keeping
// both files' modes and nix-cache-info's other lines; a name outside the
// cache, or nix-cache-info itself, is refused before anything is written.
func TestPublish(t *testing.T) {
	path := randomPath()
	f, _ := FromPaths([]string{path}, 0.01)
	cache := t.TempDir()
	info := filepath.Join(cache, "nix-cache-info")
	os.WriteFile(info, []byte("StoreDir: /nix/store\nBloomFilter : old\nPriority: 40\n"), 0o640)
	os.Mkdir(filepath.Join(cache, "filters"), 0o755)
	os.WriteFile(filepath.Join(cache, "filters", "f.nixbloom"), []byte("old"), 0o600)
	if err := Publish(cache, "filters/f.nixbloom", f); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(info); string(b) != "StoreDir: /nix/store\nBloomFilter: filters/f.nixbloom\nPriority: 40\n" {
		t.Errorf("nix-cache-info:\n%s", b)
	}
	for name, mode := range map[string]os.FileMode{info: 0o640, filepath.Join(cache, "filters", "f.nixbloom"): 0o600} {
		if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, %v; want %v", name, fi.Mode(), err, mode)
		}
	}
	g, err := Fetch(t.Context(), nil, cache)
	if ok, _ := g.MayContain(path); err != nil || !ok {
		t.Errorf("the published filter: %v, %v", ok, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(cache, "filters")); len(entries) != 1 {
		t.Errorf("left behind in filters/: %v", entries)
	}
	before, _ := os.ReadFile(info)
	for _, tt := range []struct{ name, file, want string }{
		{"empty", "", "want a path inside the cache"},
		{"absolute", "/tmp/f.nixbloom", "want a path inside the cache"},
		{"up", "../f.nixbloom", "want a path inside the cache"},
		{"up from a folder", "filters/../../f.nixbloom", "want a path inside the cache"},
		{"backslash", `filters\f.nixbloom`, "want a path inside the cache"},
		{"nix-cache-info", "nix-cache-info", "the cache's own nix-cache-info"},
		{"nix-cache-info, roundabout", "filters/../nix-cache-info", "the cache's own nix-cache-info"},
		{"a folder that is not there", "none/f.nixbloom", "no such file"},
		{"a folder that is a file", "filters/f.nixbloom/x", "not a directory"},
		{"a directory", "filters", "is a directory, not a regular file"},
		{"a space around it", " f.nixbloom", "want no line end or surrounding space"},
	} {
		if err := Publish(cache, tt.file, f); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "nixbloom: ") {
			t.Errorf("%s: Publish(%q) = %v; want %q", tt.name, tt.file, err, tt.want)
		}
		if b, _ := os.ReadFile(info); string(b) != string(before) {
			t.Errorf("%s: nix-cache-info changed", tt.name)
		}
	}
	if err := Publish(t.TempDir(), "f.nixbloom", f); err == nil || !strings.Contains(err.Error(), "is not a Nix binary cache") {
		t.Errorf("a directory without nix-cache-info: %v", err)
	}
}

// Issue 41 follow-up F4: Publish writes only a name that reads back,
// through the BloomFilter field as Cache.Filter parses it, as the same
// file; any other is refused before anything is written.
func TestPublishNameReadsBack(t *testing.T) {
	path := randomPath()
	f, _ := FromPaths([]string{path}, 0.01)
	refused := map[string]bool{
		"a:b": true, "100%.bloom": true, "f#x": true, "f?x": true, "f?": true, "%41.bloom": true, "a%2Fb.bloom": true, "x:/y.bloom": true,
		"plain.nixbloom": false, "a b.nixbloom": false, "sub/f.nixbloom": false, "sub/./f.nixbloom": false, "f+x=1.nixbloom": false, "é.nixbloom": false,
	}
	for name, want := range refused {
		cache := t.TempDir()
		info := filepath.Join(cache, "nix-cache-info")
		os.WriteFile(info, []byte("StoreDir: /nix/store\n"), 0o644)
		os.Mkdir(filepath.Join(cache, "sub"), 0o755)
		err := Publish(cache, name, f)
		if (err != nil) != want {
			t.Errorf("Publish(%q) = %v; want refused: %v", name, err, want)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "would not read back as this file") || !strings.HasPrefix(err.Error(), "nixbloom: ") {
				t.Errorf("Publish(%q) = %v", name, err)
			}
			if b, _ := os.ReadFile(info); string(b) != "StoreDir: /nix/store\n" {
				t.Errorf("%q: refused, and nix-cache-info changed: %q", name, b)
			}
			continue
		}
		g, err := Fetch(t.Context(), nil, cache)
		if err != nil {
			t.Errorf("Publish(%q) wrote a field the reader refuses: %v", name, err)
			continue
		}
		written, _ := os.ReadFile(filepath.Join(cache, filepath.FromSlash(name)))
		var back bytes.Buffer
		g.WriteTo(&back)
		if ok, _ := g.MayContain(path); !ok || !bytes.Equal(written, back.Bytes()) {
			t.Errorf("Publish(%q): the reader reads another file", name)
		}
	}
}

// Issue 41 follow-up F5: Publish never puts the filter over a file of the
// cache: a .narinfo, a NAR, a listing, anything under Nix's directories.
func TestPublishNeverOverwritesCacheFiles(t *testing.T) {
	f, _ := FromPaths([]string{randomPath()}, 0.01)
	hash := strings.Repeat("0", hashPartLen)
	cache := t.TempDir()
	files := map[string]string{
		"nix-cache-info":       "StoreDir: /nix/store\n",
		hash + ".narinfo":      "StorePath: /nix/store/" + hash + "-x\n",
		hash + ".ls":           "{}",
		"nar/" + hash + ".nar": "nar",
		"log/" + hash + "-x":   "log",
		"realisations/x.doi":   "{}",
		"debuginfo/x":          "{}",
	}
	for _, d := range nixDirs {
		os.Mkdir(filepath.Join(cache, d), 0o755)
	}
	for name, text := range files {
		os.WriteFile(filepath.Join(cache, filepath.FromSlash(name)), []byte(text), 0o644)
	}
	for _, name := range []string{
		hash + ".narinfo", "new.narinfo", hash + ".ls", "nar/" + hash + ".nar", "nar/new.nixbloom",
		"log/" + hash + "-x", "realisations/x.doi", "debuginfo/x", "sub/../nar/x",
	} {
		if err := Publish(cache, name, f); err == nil || !strings.HasPrefix(err.Error(), "nixbloom: ") {
			t.Errorf("Publish(%q) = %v; want an error", name, err)
		}
	}
	for name, text := range files {
		if b, _ := os.ReadFile(filepath.Join(cache, filepath.FromSlash(name))); string(b) != text {
			t.Errorf("%s was overwritten: %q", name, b)
		}
	}
}

// Issue 41 follow-up F8: a directory on the way to the filter swapped for a
// link out of the cache while the filter is written makes Publish fail,
// and leaves no temporary file behind, in the cache or out of it.
func TestPublishLeavesNoTempFileWhenALinkIsSwappedIn(t *testing.T) {
	top := t.TempDir()
	cache, outside := filepath.Join(top, "cache"), filepath.Join(top, "outside")
	os.Mkdir(cache, 0o755)
	os.Mkdir(outside, 0o755)
	os.Mkdir(filepath.Join(cache, "sub"), 0o755)
	root, err := os.OpenRoot(cache)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	err = replaceIn(root, cache, "sub/f.nixbloom", func(w io.Writer) error {
		// Mid-write: sub moves aside, and a link out of the cache takes its name.
		if err := os.Rename(filepath.Join(cache, "sub"), filepath.Join(cache, "moved")); err != nil {
			return err
		}
		if err := os.Symlink(outside, filepath.Join(cache, "sub")); err != nil {
			return err
		}
		_, err := w.Write([]byte("filter"))
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("replaceIn = %v; want the link refused", err)
	}
	for _, d := range []string{filepath.Join(cache, "moved"), outside} {
		if entries, _ := os.ReadDir(d); len(entries) != 0 {
			t.Errorf("left behind in %s: %s", d, entries[0].Name())
		}
	}
}
