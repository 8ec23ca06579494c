package pkbf

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The root package is the pkbfv1 format: it reads no keys (issue 49,
// item 1). What it imports must not bring in the key parsers, x509 or the
// curve libraries, which a program that calls Probably would carry.
func TestRootDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, p := range deps {
		switch {
		case p == "github.com/pkbf/pkbf/keys", p == "github.com/pkbf/pkbf/keycheck", strings.HasPrefix(p, "github.com/pkbf/pkbf/keys/"),
			p == "crypto/x509", strings.HasPrefix(p, "golang.org/x/crypto/"), strings.HasPrefix(p, "github.com/cloudflare/circl"):
			t.Errorf("the root package depends on %s", p)
		}
	}
	if len(deps) < 20 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
}

// queryProgram is a program that opens a filter and calls Probably, and
// floorProgram one that does what it cannot do without: XXH64 and
// x/sys/unix's mmap and flock.
const (
	queryProgram = `package main

import (
	"fmt"
	"os"

	"github.com/pkbf/pkbf"
)

func main() {
	f, err := pkbf.Open(os.Args[1])
	if err != nil {
		panic(err)
	}
	fmt.Println(f.Probably([]byte(os.Args[2])))
}
`
	floorProgram = `package main

import (
	"fmt"
	"os"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"
)

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		panic(err)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		panic(err)
	}
	unix.Flock(int(f.Fd()), unix.LOCK_SH)
	fmt.Println(xxhash.Sum64(b) != 0)
}
`
)

// TestQueryProgramSize builds, each in a module of its own, a program that
// opens a filter and calls Probably (the root module by a replace
// directive) and the floor program, and bounds what the first carries
// over the second: at most 30 more packages (go list -deps), and a
// stripped binary at most 1.25 times as large. docs/performance.md shows
// the figures it logs (go test -run TestQueryProgramSize -v .).
func TestQueryProgramSize(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the programs are not built")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the floor program maps with x/sys/unix")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	type size struct{ packages, bytes int }
	measure := func(name, program string, require ...string) size {
		dir := filepath.Join(t.TempDir(), name)
		mod := "module example.com/" + name + "\n\ngo 1.26.0\n\nrequire (\n\t" + strings.Join(require, "\n\t") + "\n)\n"
		if name == "query" {
			mod += "\nreplace github.com/pkbf/pkbf => " + root + "\n"
		}
		for file, text := range map[string]string{"go.mod": mod, "go.sum": string(sum), "main.go": program} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gocmd := func(args ...string) string {
			cmd := exec.Command("go", args...)
			cmd.Dir = dir
			// The modules are in the cache: this module's own requirements.
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: go %s: %v\n%s", name, strings.Join(args, " "), err, out)
			}
			return string(out)
		}
		gocmd("mod", "tidy")
		packages := len(strings.Fields(gocmd("list", "-deps", ".")))
		gocmd("build", "-trimpath", "-ldflags=-s -w", "-o", "bin", ".")
		fi, err := os.Stat(filepath.Join(dir, "bin"))
		if err != nil {
			t.Fatal(err)
		}
		return size{packages, int(fi.Size())}
	}
	version := func(module string) string {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module).Output()
		if err != nil {
			t.Fatalf("go list -m %s: %v", module, err)
		}
		return module + " " + strings.TrimSpace(string(out))
	}
	query := measure("query", queryProgram, "github.com/pkbf/pkbf v0.0.0")
	floor := measure("floor", floorProgram, version("github.com/cespare/xxhash/v2"), version("golang.org/x/sys"))
	report := fmt.Sprintf("Open and Probably: %d packages, %d bytes stripped; XXH64 and x/sys/unix: %d packages, %d bytes (%+d packages, %.2f times)",
		query.packages, query.bytes, floor.packages, floor.bytes, query.packages-floor.packages, float64(query.bytes)/float64(floor.bytes))
	t.Log(report)
	if query.packages > floor.packages+30 || float64(query.bytes) > 1.25*float64(floor.bytes) {
		t.Errorf("%s: more than 30 packages or 1.25 times the floor", report)
	}
}
