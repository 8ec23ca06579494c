package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// One table drives dispatch, help and completion: every command in it is
// in the usage, answers its help, runs under its name and aliases, and is
// completed with all its flags in every shell.
func TestCommandTable(t *testing.T) {
	var out strings.Builder
	u := usage()
	scripts := map[string]string{}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		out.Reset()
		if code := runCompletion([]string{sh}, nil, &out, io.Discard); code != exitOK {
			t.Fatalf("completion %s: exit %d", sh, code)
		}
		scripts[sh] = out.String()
	}
	for _, s := range subcommands() {
		if !strings.Contains(u, "  pkbf "+s.synopsis+"\n") {
			t.Errorf("%s: the usage does not show its synopsis %q", s.name, s.synopsis)
		}
		if s.summary != "" && !strings.Contains(u, "  "+s.name+" ") {
			t.Errorf("%s: the usage does not list it", s.name)
		}
		for _, name := range append([]string{s.name}, s.aliases...) {
			if lookupSubcommand(name) == nil || lookupSubcommand(name).name != s.name {
				t.Errorf("%s does not dispatch to %s", name, s.name)
			}
		}
		out.Reset()
		if code := run([]string{"help", s.name}, nil, &out, io.Discard); code != exitOK || out.Len() == 0 {
			t.Errorf("help %s: exit %d, %d bytes", s.name, code, out.Len())
		}
		if s.help != "" && !strings.Contains(out.String(), s.help) {
			t.Errorf("help %s does not print its text", s.name)
		}
		for sh, script := range scripts {
			if !strings.Contains(script, s.name) {
				t.Errorf("%s completion does not know %s", sh, s.name)
			}
		}
		for _, sub := range s.subs {
			out.Reset()
			name := s.name + " " + sub.name
			if code := run([]string{s.name, sub.name, "-h"}, nil, &out, io.Discard); code != exitOK || !strings.HasPrefix(out.String(), "Usage: pkbf "+name+" ") {
				t.Errorf("%s -h: exit %d, %q", name, code, out.String())
			}
			for sh, script := range scripts {
				if !strings.Contains(script, name) {
					t.Errorf("%s completion does not know %s", sh, name)
				}
			}
		}
		if s.flags == nil {
			continue
		}
		s.flags(io.Discard, io.Discard).VisitAll(func(f *flag.Flag) {
			if !strings.Contains(scripts["bash"], f.Name) || !strings.Contains(scripts["fish"], f.Name) || !strings.Contains(scripts["zsh"], f.Name) {
				t.Errorf("%s: flag %s is missing from a completion script", s.name, f.Name)
			}
		})
	}
}
