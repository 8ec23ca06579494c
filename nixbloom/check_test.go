package nixbloom

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check answers from the filter, and with confirm asks the cache about a
// path the filter may hold: present, absent (a false positive) or
// unconfirmed; what is no store path gets no verdict.
func TestCacheCheck(t *testing.T) {
	const held, falsePositive = "00qrx0rfv2knlsshwjsq16198fklyy0y", "11qrx0rfv2knlsshwjsq16198fklyy0y"
	cache := t.TempDir()
	os.WriteFile(filepath.Join(cache, "nix-cache-info"), []byte("StoreDir: /nix/store\n"), 0o644)
	os.WriteFile(filepath.Join(cache, held+".narinfo"), []byte("StorePath: /nix/store/"+held+"-hello\nURL: nar/x.nar\nNarHash: sha256:1xmr8jicvzszfzpz46g37mlpvbzjl2wpwvl2b05psipssyp1sm8h\nNarSize: 120\n"), 0o644)
	f, err := FromPaths([]string{held, falsePositive}, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenCache(cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	absent := randomPath()
	for _, tc := range []struct {
		name    string
		path    string
		confirm bool
		verdict string
		maybe   bool
		err     string
	}{
		{"absent", absent, false, Absent, false, ""},
		{"absent, confirm", absent, true, Absent, false, ""},
		{"held", held, false, PossiblyPresent, true, ""},
		{"held, confirm: present", held, true, Present, true, ""},
		{"false positive, confirm: absent", falsePositive, true, Absent, true, ""},
		{"no store path", "hello world", true, "", false, "nixbloom: "},
	} {
		verdict, maybe, err := c.Check(context.Background(), f, tc.path, tc.confirm)
		if verdict != tc.verdict || maybe != tc.maybe || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %q, %v, %v; want %q, %v, %q", tc.name, verdict, maybe, err, tc.verdict, tc.maybe, tc.err)
		}
	}
	os.WriteFile(filepath.Join(cache, held+".narinfo"), []byte("<html>"), 0o644)
	if verdict, maybe, err := c.Check(context.Background(), f, held, true); verdict != Unconfirmed || !maybe || err == nil {
		t.Errorf("a corrupt .narinfo: %q, %v, %v; want unconfirmed with the error", verdict, maybe, err)
	}
}

// WriteFile replaces a file with the filter, as WriteTo writes it; a
// directory there is refused, naming it.
func TestFilterWriteFile(t *testing.T) {
	f, err := FromPaths([]string{randomPath()}, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "f.nixbloom")
	os.WriteFile(path, []byte("old"), 0o640)
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	f.WriteTo(&want)
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("the file holds %d bytes, not the filter's %d", len(got), want.Len())
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the replaced file's 0640", fi.Mode().Perm())
	}
	dir := t.TempDir()
	if err := f.WriteFile(dir); err == nil || !strings.Contains(err.Error(), dir) || !strings.HasPrefix(err.Error(), "nixbloom: ") {
		t.Errorf("a directory: %v", err)
	}
}
