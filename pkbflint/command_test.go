package pkbflint

import (
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var zlintBuild struct {
	once sync.Once
	bin  string
	err  error
	out  []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if zlintBuild.bin != "" {
		os.RemoveAll(filepath.Dir(zlintBuild.bin))
	}
	os.Exit(code)
}

// zlintCommand builds zlint's own command (github.com/zmap/zlint/v3/
// cmd/zlint, the version this module requires) with this lint compiled
// in, as a CA builds it: zlint's main.go beside one file importing the
// lint, in a module of their own that requires both. Built once a run.
func zlintCommand(t *testing.T) string {
	t.Helper()
	zlintBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "zlint-pkbf-")
		if err != nil {
			zlintBuild.err = err
			return
		}
		// Removed by TestMain: tests share the command.
		here, _ := filepath.Abs(".")
		zlintBuild.bin = filepath.Join(dir, "zlint")
		zlintBuild.out, zlintBuild.err = buildZlint(dir, here)
	})
	if zlintBuild.err != nil {
		t.Fatalf("building zlint with the lint: %v\n%s", zlintBuild.err, zlintBuild.out)
	}
	return zlintBuild.bin
}

func buildZlint(dir, here string) ([]byte, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/zmap/zlint/v3").Output()
	if err != nil {
		return out, err
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "cmd", "zlint", "main.go")
	main, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	mod := "module zlint-with-pkbf\n\ngo 1.26.0\n\nrequire github.com/pkbf/pkbf/pkbflint v0.0.0\n\n" +
		"replace (\n\tgithub.com/pkbf/pkbf => " + filepath.Dir(here) + "\n\tgithub.com/pkbf/pkbf/pkbflint => " + here + "\n)\n"
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		return nil, err
	}
	for name, b := range map[string][]byte{
		"main.go":     main,
		"pkbflint.go": []byte("package main\n\nimport _ \"github.com/pkbf/pkbf/pkbflint\"\n"),
		"go.mod":      []byte(mod),
		"go.sum":      sum,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	build := exec.Command("go", "build", "-mod=mod", "-o", "zlint", ".")
	build.Dir = dir
	return build.CombinedOutput()
}

// zlintRun runs the zlint command on one certificate with the lint alone
// and returns its result and details.
func zlintRun(t *testing.T, args ...string) (result, details string) {
	t.Helper()
	cmd := exec.Command(zlintCommand(t), append([]string{"-includeNames", Name}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("zlint %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var results map[string]struct {
		Result  string `json:"result"`
		Details string `json:"details"`
	}
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("zlint %s: %q: %v", strings.Join(args, " "), out, err)
	}
	r, ok := results[Name]
	if !ok {
		t.Fatalf("zlint %s ran no %s: %s", strings.Join(args, " "), Name, out)
	}
	return r.Result, r.Details
}

// zlint's own command, with the lint compiled in, configured by -config,
// reports each test certificate as the filter has it: PEM and DER files,
// certificates and precertificates; without a configuration it is fatal.
func TestZlintCommand(t *testing.T) {
	filter, certs := makeCerts(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zlint.toml")
	os.WriteFile(cfg, []byte(config(filter)), 0o644)
	for i, c := range certs {
		path := filepath.Join(dir, c.name+".der")
		if i%2 == 0 {
			path = filepath.Join(dir, c.name+".pem")
			os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.der}), 0o644)
		} else {
			os.WriteFile(path, c.der, 0o644)
		}
		result, details := zlintRun(t, "-config", cfg, path)
		want := map[bool]string{true: "error", false: "pass"}[c.inFilter]
		if result != want {
			t.Errorf("zlint %s: %s (%s), want %s", filepath.Base(path), result, details, want)
		}
		if i == 0 {
			if result, details := zlintRun(t, path); result != "fatal" || !strings.Contains(details, "no filter configured") {
				t.Errorf("zlint %s without -config: %s (%s), want fatal: no filter configured", filepath.Base(path), result, details)
			}
		}
	}
	out, err := exec.Command(zlintCommand(t), "-includeNames", Name, "-exampleConfig").Output()
	if err != nil || !strings.Contains(string(out), "["+Name+"]") || !strings.Contains(string(out), "Filter =") {
		t.Errorf("zlint -exampleConfig: %v\n%s", err, out)
	}
}
