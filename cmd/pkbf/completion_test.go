package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// completionScript is pkbf completion SHELL's script, written to a file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	r := runWith(t, nil, "completion", shell)
	if r.code != exitOK {
		t.Fatalf("completion %s: exit %d, %s", shell, r.code, r.stderr)
	}
	p := filepath.Join(t.TempDir(), "pkbf."+shell)
	if err := os.WriteFile(p, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// shellCompletions returns what shell's completion of pkbf offers for
// the command line words, the last the word being completed: bash calls
// _pkbf with COMP_WORDS set, as readline does; fish completes the line
// itself (complete -C); zsh runs _pkbf with words, CURRENT and PREFIX
// set and compadd, _files and compdef replaced by functions that print
// what they are given (they exist only inside zsh's completion widgets),
// so what zsh offers is not filtered by the prefix there.
func shellCompletions(t *testing.T, shell, script string, words ...string) []string {
	t.Helper()
	var cmd *exec.Cmd
	switch shell {
	case "bash":
		cmd = exec.Command("bash", "--norc", "--noprofile", "-c", `source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _pkbf; printf '%s\n' "${COMPREPLY[@]}"`, script)
		cmd.Args = append(cmd.Args, words...)
	case "zsh":
		cmd = exec.Command("zsh", "-f", "-c", `compdef() { :; }; compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@"; }; _files() { print -r -- _files; }
			source "$0"; words=("$@"); CURRENT=$#; PREFIX=$words[-1]; _pkbf`, script)
		cmd.Args = append(cmd.Args, words...)
	case "fish":
		cmd = exec.Command("fish", "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, script, strings.Join(words, " "))
	}
	cmd.Dir = t.TempDir() // files offered are this empty directory's
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s completing %q: %v", shell, words, err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		got = append(got, strings.SplitN(line, "\t", 2)[0]) // fish: word, tab, description
	}
	return got
}

// TestCompletionInShells runs each shell's completion script in the
// shell (bash, zsh, fish; each is skipped when missing, unless
// PKBF_REQUIRE_SHELLS is set, as .ci/run sets it): nix completes its
// subcommands, and nix build and nix check their own flags (the scripts
// listed none for them), beside the commands and flags of the others.
func TestCompletionInShells(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			if _, err := exec.LookPath(shell); err != nil {
				if os.Getenv("PKBF_REQUIRE_SHELLS") != "" {
					t.Fatal(err)
				}
				t.Skipf("no %s (apt-get install %s): %v", shell, shell, err)
			}
			script := completionScript(t, shell)
			for _, tc := range []struct {
				name      string
				words     []string
				want, not []string
			}{
				{"commands", []string{"pkbf", "ni"}, []string{"nix"}, nil},
				{"nix's subcommands", []string{"pkbf", "nix", ""}, []string{"build", "check"}, []string{"--timeout"}},
				{"nix build's flags", []string{"pkbf", "nix", "build", "--"}, []string{"--fp-rate", "--output"}, []string{"--timeout", "--json"}},
				{"nix check's flags", []string{"pkbf", "nix", "check", "--"}, []string{"--json", "--confirm", "--timeout"}, []string{"--fp-rate", "--output", "--api"}},
				{"nix check's flags after an argument", []string{"pkbf", "nix", "check", "https://cache.example", "--t"}, []string{"--timeout"}, []string{"--fp-rate"}},
				{"info's flags", []string{"pkbf", "info", "--"}, []string{"--json", "--scan"}, []string{"--timeout"}},
				{"check's flags, not nix check's", []string{"pkbf", "check", "--"}, []string{"--api", "--timeout"}, []string{"--fp-rate"}},
				{"help's commands", []string{"pkbf", "help", "ni"}, []string{"nix"}, nil},
				{"completion's shells", []string{"pkbf", "completion", "f"}, []string{"fish"}, nil},
			} {
				got := shellCompletions(t, shell, script, tc.words...)
				for _, w := range tc.want {
					if !slices.Contains(got, w) {
						t.Errorf("%s: %q offers %q, lacking %s", tc.name, strings.Join(tc.words, " "), got, w)
					}
				}
				for _, w := range tc.not {
					if slices.Contains(got, w) {
						t.Errorf("%s: %q offers %q, with %s", tc.name, strings.Join(tc.words, " "), got, w)
					}
				}
			}
		})
	}
}

// TestHelpNixFlags: pkbf help nix (and pkbf nix -h) list the flags of
// nix build and nix check, each under its own heading (the help had no
// flags at all: only pkbf nix check -h showed --timeout).
func TestHelpNixFlags(t *testing.T) {
	help := runWith(t, nil, "help", "nix")
	if help.code != exitOK || help.stderr != "" {
		t.Fatalf("help nix: exit %d, stderr %q", help.code, help.stderr)
	}
	if r := runWith(t, nil, "nix", "-h"); r.code != exitOK || r.stdout != help.stdout {
		t.Errorf("nix -h: exit %d, not help nix's text:\n%s", r.code, r.stdout)
	}
	for sub, flags := range map[string][]string{
		"build": {"-p, --fp-rate P", "-o, --output PATH"},
		"check": {"-j, --json", "-c, --confirm", "--timeout DURATION"},
	} {
		heading := "\nFlags of pkbf nix " + sub + " (one or two dashes; anywhere among the arguments; -- ends them):\n"
		_, section, ok := strings.Cut(help.stdout, heading)
		if !ok {
			t.Errorf("help nix has no %q:\n%s", heading, help.stdout)
			continue
		}
		section, _, _ = strings.Cut(section, "\nFlags of")
		for _, f := range flags {
			if !strings.Contains(section, "\n  "+f+"\n") && !strings.HasPrefix(section, "  "+f+"\n") {
				t.Errorf("help nix lists no %q for nix %s:\n%s", f, sub, section)
			}
		}
	}
}
