package nixbloom

import (
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
