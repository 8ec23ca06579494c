package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

// BenchmarkPublicAPIProgram runs examples/check, a program of 28 lines
// that uses only pkbf's public API (Open, Files, Check, AppendJSON),
// and pkbf check --json on the same 200 000 PEM certificates and half-full
// 256 MiB filter, both built with go build and run alternately as
// processes with GOMAXPROCS 1 and with every CPU. It reports each one's
// time a run and their ratio (x-pkbf: the program's over pkbf check's),
// and fails unless both print the same verdicts.
//
//	go test -run '^$' -bench BenchmarkPublicAPIProgram -benchtime 5x ./cmd/pkbf
func BenchmarkPublicAPIProgram(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("no go command to build the programs with")
	}
	const n = 200_000
	dir := b.TempDir()
	bins := map[string]string{"api": "../../examples/check", "pkbf": "."}
	for name, pkg := range bins {
		out := filepath.Join(dir, name)
		if msg, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", pkg, err, msg)
		}
		bins[name] = out
	}
	input := writeInput(b, pemCertificates(b, n))
	filter := benchFilterFile(b, 31)
	run := func(procs int, bin string, args ...string) []byte {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), fmt.Sprint("GOMAXPROCS=", procs))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		var ee *exec.ExitError
		if err := cmd.Run(); err != nil && !(errors.As(err, &ee) && ee.ExitCode() == exitFound) {
			b.Fatalf("%s: %v: %s", bin, err, stderr.String())
		}
		return stdout.Bytes()
	}
	for _, procs := range slices.Compact([]int{1, runtime.NumCPU()}) {
		b.Run(fmt.Sprint("GOMAXPROCS=", procs), func(b *testing.B) {
			var api, cmd time.Duration
			checked := false
			for b.Loop() {
				t := time.Now()
				a := run(procs, bins["api"], filter, input)
				api += time.Since(t)
				t = time.Now()
				c := run(procs, bins["pkbf"], "check", "--json", "--quiet", filter, input)
				cmd += time.Since(t)
				if !checked {
					if !bytes.Equal(a, c) || bytes.Count(a, []byte("\n")) != n {
						b.Fatalf("the program and pkbf check differ (%d and %d lines)", bytes.Count(a, []byte("\n")), bytes.Count(c, []byte("\n")))
					}
					checked = true
				}
			}
			b.ReportMetric(float64(api.Milliseconds())/float64(b.N), "api-ms")
			b.ReportMetric(float64(cmd.Milliseconds())/float64(b.N), "pkbf-ms")
			b.ReportMetric(float64(api)/float64(cmd), "x-pkbf")
		})
	}
}
