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
// every command's name, the subcommands of those that have them (nix),
// the flags (both spellings) of the commands and subcommands that have
// flags, files for the rest, and the commands with help of their own.
func runCompletion(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		errorf(stderr, "completion: name one shell: bash, zsh or fish")
		return exitTrouble
	}
	type words struct {
		Name, Words string
		List        []string
	}
	var names, withHelp []string
	var withFlags, withSubs []words
	add := func(name string, c *command) {
		var list []string
		c.VisitAll(func(f *flag.Flag) {
			list = append(list, map[bool]string{true: "-", false: "--"}[len(f.Name) == 1]+f.Name)
		})
		withFlags = append(withFlags, words{name, strings.Join(list, " "), list})
	}
	for _, s := range subcommands() {
		names = append(names, s.name)
		if s.help != "" {
			withHelp = append(withHelp, s.name)
		}
		var subs []string
		for _, sub := range s.subs {
			subs = append(subs, sub.name)
			add(s.name+" "+sub.name, sub.flags(io.Discard, io.Discard))
		}
		if subs != nil {
			withSubs = append(withSubs, words{s.name, strings.Join(subs, " "), subs})
		}
		if s.flags != nil {
			add(s.name, s.flags(io.Discard, io.Discard))
		}
	}
	script := completionScripts.Lookup("completion." + args[0] + ".tmpl")
	if script == nil {
		errorf(stderr, "completion: unknown shell %q: bash, zsh or fish", args[0])
		return exitTrouble
	}
	script.Execute(stdout, map[string]any{"Commands": strings.Join(names, " "), "WithHelp": strings.Join(withHelp, " "), "WithFlags": withFlags, "WithSubs": withSubs})
	return exitOK
}
