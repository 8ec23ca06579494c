package ct

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Module ct imports of the main module's internal packages only mapfile,
// for its one way of replacing a file (issue 49, item 3); the rest of
// what it uses is public. Go lets a nested module import its parent's
// internal packages by import path, without a replace directive, at the
// version its go.mod requires; anything more would tie ct to internals
// that change freely (issue 43, item 5).
func TestNoInternalPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, p := range strings.Fields(imports) {
			if strings.HasPrefix(p, "github.com/pkbf/pkbf/internal/") && p != "github.com/pkbf/pkbf/internal/mapfile" {
				t.Errorf("%s imports %s", pkg, p)
			}
		}
	}
}

// The state file is replaced whole; a link to it stays a link, and what
// is not a regular file is refused, untouched.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	if err := writeAtomic(state, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink("state.json", link); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(link, []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(state); string(b) != "two\n" {
		t.Errorf("through the link: the state holds %q", b)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode().Type() != os.ModeSymlink {
		t.Errorf("the link: %v, %v", fi, err)
	}
	if fi, _ := os.Stat(state); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the file's 0600", fi.Mode().Perm())
	}
	for name, make := range map[string]func(string) error{
		"a directory": func(p string) error { return os.Mkdir(p, 0o755) },
		"a FIFO":      func(p string) error { return syscall.Mkfifo(p, 0o644) },
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		if err := writeAtomic(p, []byte("x")); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want an error naming it", name, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 4 {
		t.Errorf("left behind: %v", entries)
	}
}
