package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/cli"
	"github.com/pkbf/pkbf/internal/perr"
)

// The command line, as people expect it from git, openssl or ssh-keygen:
// flags anywhere among the arguments ("--" ends them), one- and two-dash
// spellings alike (-json and --json: the standard flag package reads both,
// which keeps every spelling scripts already use), short aliases (-j),
// help for each command, and suggestions for typos.

// command is one subcommand's flags, with its usage line.
type command struct {
	*flag.FlagSet
	usage   string
	short   map[string]string // alias -> long name
	stdout  io.Writer
	stderr  io.Writer
	summary string
	// flagsFirst: flags come before the first argument only (the table's
	// flagsFirst), which the usage says.
	flagsFirst bool
}

func newCommand(name, synopsis string, stdout, stderr io.Writer) *command {
	c := &command{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), usage: synopsis, short: map[string]string{}, stdout: stdout, stderr: stderr}
	c.SetOutput(io.Discard) // errors are reported by parse
	c.summary = helpText(name)
	if s := lookupSubcommand(name); s != nil {
		c.flagsFirst = s.flagsFirst
	}
	return c
}

// alias makes -short another name of the flag --long.
func (c *command) alias(short, long string) {
	c.Var(c.Lookup(long).Value, short, "")
	c.short[short] = long
}

// parse parses args, flags anywhere (with flagsFirst, before the first
// argument only, and a "--" after it dropped: sshd's tokens that follow
// are never flags), and checks the number of positional arguments; on
// failure it returns the exit code to use (-h is a success).
func (c *command) parse(args []string, minArgs, maxArgs int) (ok bool, code int) {
	var positional []string
	for {
		err := c.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			c.printUsage(c.stdout)
			return false, exitOK
		case err != nil:
			return false, c.fail(c.flagError(err))
		}
		rest := c.Args()
		used := len(args) - len(rest)
		if c.flagsFirst && len(rest) > 1 && rest[1] == "--" {
			rest = append(rest[:1:1], rest[2:]...)
		}
		if used > 0 && args[used-1] == "--" || c.flagsFirst { // the terminator: the rest are arguments
			positional = append(positional, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
	c.Parse(append([]string{"--"}, positional...)) // so that Arg and Args see them
	switch {
	case len(positional) < minArgs:
		return false, c.fail("missing arguments")
	case maxArgs >= 0 && len(positional) > maxArgs:
		return false, c.fail(fmt.Sprintf("unexpected arguments: %s", strings.Join(positional[maxArgs:], " ")))
	}
	return true, exitOK
}

// flagError words a flag error, with a suggestion for an unknown flag.
func (c *command) flagError(err error) string {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "flag provided but not defined: -")
	if !ok {
		return msg
	}
	name = strings.TrimLeft(name, "-")
	var names []string
	c.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	msg = fmt.Sprintf("unknown flag -%s", name)
	if s := cli.Nearest(name, names); s != "" {
		msg += fmt.Sprintf("; did you mean -%s?", s)
	}
	return msg
}

// fail reports a usage error, with the usage, and returns its exit code.
func (c *command) fail(msg string) int {
	fmt.Fprintf(c.stderr, "pkbf: error: %s: %s\n", c.Name(), msg)
	fmt.Fprintf(c.stderr, "Usage: pkbf %s\nRun 'pkbf help %s' for more.\n", c.usage, c.Name())
	return exitTrouble
}

// printUsage prints the command's usage: synopsis, summary and flags.
func (c *command) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: pkbf %s\n", c.usage)
	if c.summary != "" {
		fmt.Fprintf(w, "\n%s\n", c.summary)
	}
	c.printFlags(w, "")
}

// printFlags prints the command's flags, each with its aliases, under
// "Flags" and of (" of pkbf nix build"), if it has any.
func (c *command) printFlags(w io.Writer, of string) {
	aliases := map[string][]string{}
	for s, l := range c.short {
		aliases[l] = append(aliases[l], s)
	}
	var flags []*flag.Flag
	c.VisitAll(func(f *flag.Flag) {
		if _, isAlias := c.short[f.Name]; !isAlias {
			flags = append(flags, f)
		}
	})
	if len(flags) == 0 {
		return
	}
	if c.flagsFirst {
		fmt.Fprintf(w, "\nFlags%s (one or two dashes; before the first argument):\n", of)
	} else {
		fmt.Fprintf(w, "\nFlags%s (one or two dashes; anywhere among the arguments; -- ends them):\n", of)
	}
	for _, f := range flags {
		arg, usage := flag.UnquoteUsage(f)
		names := "--" + f.Name
		sort.Strings(aliases[f.Name])
		for _, a := range aliases[f.Name] {
			names = "-" + a + ", " + names
		}
		if arg != "" {
			names += " " + arg
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "  %s\n      %s\n", names, usage)
	}
}

// message is how the command shows an error after its own prefix ("pkbf:
// error: ", "pkbf: warning: "): a library error's text, without the
// "pkbf: " the library gives it (perr.Text).
func message(err error) string { return perr.Text(err) }

// errorf reports an error on stderr in the command's format.
func errorf(stderr io.Writer, format string, args ...any) {
	fmt.Fprintf(stderr, "pkbf: error: "+format+"\n", args...)
}

// trouble reports err on stderr and returns exitTrouble.
func trouble(stderr io.Writer, err error) int {
	errorf(stderr, "%s", message(err))
	return exitTrouble
}

// plural gives "1 key", "2 keys".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// longName is the long name of a flag given by an alias, or name.
func (c *command) longName(name string) string {
	if long, ok := c.short[name]; ok {
		return long
	}
	return name
}

// openFilter opens the filter a command only reads: "-" is standard input
// (read as a stream), anything else is pkbf.Open's, which reads pipes and
// FIFOs as streams too.
func openFilter(name string, stdin io.Reader) (*pkbf.Filter, error) {
	if name != "-" {
		return pkbf.Open(name)
	}
	if stdin == nil {
		return nil, errors.New("no standard input to read the filter from")
	}
	f, err := pkbf.ReadFilter(stdin)
	if err != nil {
		return nil, fmt.Errorf("<stdin>: %w", err)
	}
	return f, nil
}

// sizeFlag is a flag holding a number of bytes, as cli.ParseSize reads
// them: 1024, 64KiB, 1M, 64 GiB.
type sizeFlag int64

func (f *sizeFlag) String() string { return cli.FormatSize(int64(*f)) }
func (f *sizeFlag) Set(s string) error {
	n, err := cli.ParseSize(s)
	if err == nil {
		*f = sizeFlag(n)
	}
	return err
}
