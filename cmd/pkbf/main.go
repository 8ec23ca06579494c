// Command pkbf inspects, queries, creates and extends pwnedkeys bloom
// filters (pkbfv1).
//
// Usage:
//
//	pkbf info [-json] FILTER
//	pkbf check [-json] [-confirm [-api URL]] FILTER [FILE...]
//	pkbf create [-hashes K -length L | -entries N -fp-rate P] FILTER
//	pkbf add FILTER [FILE...]
//	pkbf version
//	pkbf help
//
// Run "pkbf help" for the details and exit codes.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
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

const usage = `pkbf: pwnedkeys bloom filters (pkbfv1)

Usage:
  pkbf info [-json] FILTER
      Show the header, size, estimated false-positive rate and fill ratio.
  pkbf check [-json] [-confirm [-api URL]] FILTER [FILE...]
      Check every key, certificate and request in the FILEs (standard input
      when none, or for -): PEM or DER objects, PEM bundles, authorized_keys
      and known_hosts files, OpenSSH keys. One line per key: verdict, SPKI
      SHA-256 fingerprint, source. Exit 1 if any key is probably
      compromised, else 2 if anything could not be read, else 0.
      -confirm asks the pwnedkeys API about every probably and verifies its
      signed proof: verdicts compromised, false-positive or unconfirmed
      (with the error); then exit 1 only for verified compromised keys.
  pkbf create [-hashes K -length L | -entries N -fp-rate P] FILTER
      Create an empty filter file; refuses an existing file.
  pkbf add FILTER [FILE...]
      Add every key in the FILEs to FILTER, in place (EC keys under both
      point encodings). Safe to interrupt: a first Ctrl-C stops after the
      key in progress, a second quits at once; the filter stays valid.
      Exit 2 if any input could not be read; the other keys are still added.
  pkbf version
  pkbf help

Examples:
  pkbf check testdata/example.pkbf testdata/keys/p256.cert.pem
  cat *.pem | pkbf check -json filter.pkbf > verdicts.jsonl
  pkbf check -confirm pwnedkeys.pkbf /etc/ssh/ssh_host_*_key.pub
  pkbf create -entries 1000000 -fp-rate 0.001 mine.pkbf
  pkbf add mine.pkbf compromised/*.pem ~/.ssh/known_bad.pub
  pkbf info -json mine.pkbf

Exit codes: 0 success (check: nothing found), 1 check found a probably
compromised key, 2 bad usage or unreadable input or filter, 130 interrupted.
`

// run is the whole command: arguments in, output and exit code out.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitTrouble
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "info":
		return runInfo(rest, stdout, stderr)
	case "check":
		return runCheck(rest, stdin, stdout, stderr)
	case "create":
		return runCreate(rest, stdout, stderr)
	case "add":
		return runAdd(rest, stdin, stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, version())
		return exitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "pkbf: error: unknown command %q\n\n%s", cmd, usage)
	return exitTrouble
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

// command is one subcommand's flags, with its usage line.
type command struct {
	*flag.FlagSet
	usage  string
	stdout io.Writer
	stderr io.Writer
}

func newCommand(name, synopsis string, stdout, stderr io.Writer) *command {
	c := &command{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), usage: synopsis, stdout: stdout, stderr: stderr}
	c.SetOutput(io.Discard) // errors are reported by parse
	return c
}

// parse parses args and checks the number of positional arguments; on
// failure it returns the exit code to use (-h is a success).
func (c *command) parse(args []string, minArgs, maxArgs int) (ok bool, code int) {
	err := c.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.printUsage(c.stdout)
		return false, exitOK
	case err != nil:
		return c.fail(err.Error())
	case c.NArg() < minArgs:
		return c.fail("missing arguments")
	case maxArgs >= 0 && c.NArg() > maxArgs:
		return c.fail(fmt.Sprintf("unexpected arguments: %s", strings.Join(c.Args()[maxArgs:], " ")))
	}
	return true, exitOK
}

func (c *command) fail(msg string) (bool, int) {
	fmt.Fprintf(c.stderr, "pkbf: error: %s\n", msg)
	c.printUsage(c.stderr)
	return false, exitTrouble
}

func (c *command) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: pkbf %s\n", c.usage)
	c.SetOutput(w)
	c.PrintDefaults()
	c.SetOutput(io.Discard)
}

// errorf reports an error on stderr in the command's format.
func errorf(stderr io.Writer, format string, args ...any) {
	fmt.Fprintf(stderr, "pkbf: error: "+format+"\n", args...)
}
