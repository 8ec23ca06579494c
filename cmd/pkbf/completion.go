package main

import (
	"flag"
	"io"
	"strings"
	"text/template"
)

// completionScripts are the shell completion scripts, help/completion.*.tmpl.
var completionScripts = template.Must(template.ParseFS(helpFiles, "help/completion.*.tmpl"))

// runCompletion prints a shell completion script, made from the table:
// every command's name, the flags (both spellings) of the commands that
// have flags, files for the rest, and the commands with help of their own.
func runCompletion(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		errorf(stderr, "completion: name one shell: bash, zsh or fish")
		return exitTrouble
	}
	type flags struct {
		Name, Flags string
		List        []string
	}
	var names, withHelp []string
	var withFlags []flags
	for _, s := range subcommands() {
		names = append(names, s.name)
		if s.help != "" {
			withHelp = append(withHelp, s.name)
		}
		if s.flags == nil {
			continue
		}
		var list []string
		s.flags(io.Discard, io.Discard).VisitAll(func(f *flag.Flag) {
			list = append(list, map[bool]string{true: "-", false: "--"}[len(f.Name) == 1]+f.Name)
		})
		withFlags = append(withFlags, flags{s.name, strings.Join(list, " "), list})
	}
	script := completionScripts.Lookup("completion." + args[0] + ".tmpl")
	if script == nil {
		errorf(stderr, "completion: unknown shell %q: bash, zsh or fish", args[0])
		return exitTrouble
	}
	script.Execute(stdout, map[string]any{"Commands": strings.Join(names, " "), "WithHelp": strings.Join(withHelp, " "), "WithFlags": withFlags})
	return exitOK
}
