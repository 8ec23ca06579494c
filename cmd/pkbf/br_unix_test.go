//go:build unix

package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckBRVectorsProcess runs pkbf check --br as a process over every
// weak-key vector, with the example filter: exit 1, a line for each key,
// "weak" for each one the README calls weak; over the clean controls
// whose notes give no other finding, exit 0 and every line "no".
func TestCheckBRVectorsProcess(t *testing.T) {
	rows := weakVectors(t)
	debian := weakDebianFile(t)
	all := []string{"check", "--br", "--debian", debian, exampleFilter}
	cleanOnly := append([]string(nil), all...)
	weak := 0
	for _, v := range rows {
		path := filepath.Join(weakVectorsDir, v.file)
		all = append(all, path)
		switch {
		case v.verdict != "clean":
			weak++
		case vectorOtherRules[v.file] == nil && v.file != "roca/key04.pgp" && !strings.HasSuffix(v.file, ".txt"):
			cleanOnly = append(cleanOnly, path)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
	}{{all, exitFound}, {cleanOnly, exitOK}} {
		cmd := pkbfProcess(tc.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if code := exitCode(t, cmd); code != tc.code {
			t.Errorf("%d files: exit %d, want %d\n%s", len(tc.args)-5, code, tc.code, stderr.String())
		}
		lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
		weakLines := 0
		for _, l := range lines {
			fields := strings.Split(l, "\t")
			if fields[0] == "weak" {
				weakLines++
			}
			if tc.code == exitOK && fields[0] != "no" {
				t.Errorf("a clean control: %q", l)
			}
		}
		if tc.code == exitOK && len(lines) != len(tc.args)-5 {
			t.Errorf("%d lines for %d clean controls:\n%s", len(lines), len(tc.args)-5, stdout.String())
		}
		if tc.code == exitFound && weakLines < weak {
			t.Errorf("%d weak lines, want at least the %d weak vectors:\n%s", weakLines, weak, stdout.String())
		}
	}
}
