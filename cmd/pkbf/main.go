// Command pkbf inspects, queries, creates, extends and serves pwnedkeys
// bloom filters (pkbfv1), and gates sshd, step-ca and Nix caches with
// them: "pkbf help" lists its commands (the table in commands.go), "pkbf
// help COMMAND" gives a command's flags and exit status.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/pkbf/pkbf/internal/cli"
)

func main() {
	// The pipeline keeps little memory alive (a few batches of keys), so
	// the collector can run less often than by default unless the user says.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK       = 0
	exitFound    = 1 // check: a key is probably compromised
	exitTrouble  = 2 // bad usage, or an input or the filter could not be read
	exitSignaled = 130
)

// usageTail is the general usage after its list of commands.
var usageTail = helpFile("usage")

// usage is the general usage, made from the table of subcommands.
func usage() string {
	var b strings.Builder
	b.WriteString("pkbf: pwnedkeys bloom filters (pkbfv1)\n\nUsage:\n")
	for _, s := range subcommands() {
		fmt.Fprintf(&b, "  pkbf %s\n", s.synopsis)
	}
	b.WriteString("\nCommands:\n")
	width := 0
	for _, s := range subcommands() {
		width = max(width, len(s.name))
	}
	for _, s := range subcommands() {
		if s.summary != "" {
			fmt.Fprintf(&b, "  %-*s %s\n", width, s.name, s.summary)
		}
	}
	b.WriteString(usageTail)
	return b.String()
}

// run is the whole command: arguments in, output and exit code out.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return exitTrouble
	}
	if s := lookupSubcommand(args[0]); s != nil {
		for _, sub := range s.subs {
			if len(args) > 1 && args[1] == sub.name {
				return sub.run(args[2:], stdin, stdout, stderr)
			}
		}
		return s.run(args[1:], stdin, stdout, stderr)
	}
	errorf(stderr, "%s\nRun 'pkbf help' for usage.", unknown("unknown command", args[0], ""))
	return exitTrouble
}

// unknown words an unknown command's name, with a suggestion.
func unknown(what, name, why string) string {
	var names []string
	for _, s := range subcommands() {
		names = append(names, s.name)
	}
	msg := fmt.Sprintf("%s %q%s", what, name, why)
	if s := cli.Nearest(name, names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return msg
}

// runHelp prints the general usage, or a command's.
func runHelp(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, usage())
		return exitOK
	case len(args) > 1:
		errorf(stderr, "help takes one command name")
		return exitTrouble
	}
	s := lookupSubcommand(args[0])
	if s == nil {
		errorf(stderr, "%s", unknown("no help for", args[0], ": no such command"))
		return exitTrouble
	}
	s.command(stdout, stderr).printUsage(stdout)
	for _, sub := range s.subs {
		c := sub.flags(stdout, stderr)
		c.printFlags(stdout, " of pkbf "+c.Name())
	}
	return exitOK
}

func runVersion(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if ok, code := lookupSubcommand("version").command(stdout, stderr).parse(args, 0, 0); !ok {
		return code
	}
	fmt.Fprintln(stdout, version())
	return exitOK
}

// version describes this build from its build information.
func version() string {
	v, goVersion, revision := "(devel)", "", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = " " + s.Value
			}
		}
	}
	return fmt.Sprintf("pkbf %s%s %s", v, revision, goVersion)
}
