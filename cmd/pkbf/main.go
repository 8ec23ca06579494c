// Command pkbf inspects, queries, creates and extends pwnedkeys bloom
// filters (pkbfv1).
//
// Usage:
//
//	pkbf info [--json] [--scan] FILTER
//	pkbf check [--json] [--confirm] [flags] FILTER [FILE...]
//	pkbf create (--hashes K --length L | --entries N --fp-rate P) FILTER
//	pkbf add [flags] FILTER [FILE...]
//	pkbf serve [--listen ADDR] [flags] FILTER
//	pkbf version | --version
//	pkbf help [COMMAND]
//	pkbf completion bash|zsh|fish
//
// Run "pkbf help" for the details and exit codes.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
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
  pkbf info [--json] [--scan] FILTER
  pkbf check [--json] [--confirm] [flags] FILTER [FILE...]
  pkbf create (--hashes K --length L | --entries N --fp-rate P) FILTER
  pkbf add [flags] FILTER [FILE...]
  pkbf serve [--listen ADDR] [flags] FILTER
  pkbf version | --version | -v
  pkbf help [COMMAND]
  pkbf completion bash|zsh|fish

Commands:
  info      Show a filter's header, size and estimated false-positive rate.
  check     Check keys, certificates and requests against a filter.
  create    Create an empty filter file.
  add       Add keys to a filter file, in place.
  serve     Answer checks over HTTP, following the filter file as it is replaced.

Flags go anywhere among the arguments, with one dash or two (-json or
--json); -- ends them. FILTER may be - or /dev/stdin for standard input
where a command only reads it. Run 'pkbf help COMMAND' for a command's
flags.

Examples:
  pkbf check testdata/example.pkbf testdata/keys/p256.cert.pem
  cat *.pem | pkbf check --json filter.pkbf > verdicts.jsonl
  pkbf check --confirm pwnedkeys.pkbf /etc/ssh/ssh_host_*_key.pub
  pkbf create --entries 1000000 --fp-rate 0.001 mine.pkbf
  pkbf add mine.pkbf compromised/*.pem ~/.ssh/known_bad.pub
  pkbf info --json mine.pkbf

Exit codes: 0 success (check: nothing found); 1 check found a probably
compromised key (with --confirm: a verified one); 2 bad usage, no key in
the input, an input that could not be read, or a filter that could not
be read or changed while in use; 130 interrupted.
`

// commandSummaries is the text of 'pkbf help COMMAND', after the synopsis.
var commandSummaries = map[string]string{
	"info": `Show the header (revision, update time, entries, hash count and length),
the size in bits and bytes and the false-positive rate estimated from the
header. --scan also counts the bits set (it reads the whole filter, with
progress on a terminal).`,
	"check": `Check every key, certificate and request in the FILEs (standard input when
none, or for -): PEM or DER objects and bundles, PKCS#7 and PKCS#12 files,
authorized_keys and known_hosts files, OpenSSH, RFC 4716 and PuTTY keys.
Each key is looked up under every encoding a filter may hold it in.

Output: one line per key, fields separated by tabs: verdict (probably or
no; with --confirm compromised, false-positive or unconfirmed), the SHA-256
fingerprint of the key's canonical SPKI, where it was found, and for SSH
keys the SHA256: fingerprint ssh-keygen -l shows and the comment. With
--json, one object per line. Verdicts stream out as they are made. A
summary goes to standard error at the end.

Exit 1 if a key is probably compromised (--confirm: verified), else 2 if
no key was found (unless --allow-empty) or an input could not be read,
else 0. Keys that are valid but cannot be checked (an unsupported
algorithm, an encrypted key) are warnings, counted in the summary; with
--strict they exit 2 too. Ctrl-C prints the verdicts made, then exits 130.`,
	"create": `Create an empty filter file; refuses an existing file. Give the hash count
and length, or the expected number of entries and the false-positive rate
(sized as the reference implementation does). The file's disk space is
reserved at once.`,
	"add": `Add every key in the FILEs to FILTER, in place, under the reference's
flock protocol (EC keys under both point encodings). A first Ctrl-C stops
after the key in progress, a second quits at once; the filter stays valid.
Exit 2 if an input could not be read (the other keys are still added), or
if the filter was replaced or cut short while keys were being added.`,
	"serve": `Answer checks over HTTP (default on 127.0.0.1:8080), following FILTER as
new files are renamed over it (checked every --poll, and on SIGHUP; a file
that is not valid is logged and the old one kept). Endpoints:
  POST /v1/check   a body of keys in any form check reads; one JSON line
                   per key, as check --json prints them
  GET  /healthz    200 while a filter is loaded
  GET  /readyz     200 until shutdown begins, then 503
  GET  /v1/status  the filter's header, reloads and the last reload error
  GET  /metrics    counters in the Prometheus text format
SIGTERM or Ctrl-C stops accepting requests and lets those in flight finish.`,
	"completion": `Print a shell completion script: bash, zsh or fish. For example
  source <(pkbf completion bash)
  pkbf completion fish > ~/.config/fish/completions/pkbf.fish`,
}

// commands are the subcommands, for help, suggestions and completion.
var commands = []string{"info", "check", "create", "add", "serve", "version", "help", "completion"}

// run is the whole command: arguments in, output and exit code out.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitTrouble
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "info":
		return runInfo(rest, stdin, stdout, stderr)
	case "check":
		return runCheck(rest, stdin, stdout, stderr)
	case "create":
		return runCreate(rest, stdout, stderr)
	case "add":
		return runAdd(rest, stdin, stdout, stderr)
	case "serve":
		return runServe(rest, stdout, stderr)
	case "version", "-version", "--version", "-v":
		fmt.Fprintln(stdout, version())
		return exitOK
	case "help", "-h", "-help", "--help":
		return runHelp(rest, stdout, stderr)
	case "completion":
		return runCompletion(rest, stdout, stderr)
	}
	msg := fmt.Sprintf("unknown command %q", cmd)
	if s := suggest(cmd, commands); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	errorf(stderr, "%s\nRun 'pkbf help' for usage.", msg)
	return exitTrouble
}

// runHelp prints the general usage, or a command's.
func runHelp(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, usage)
		return exitOK
	case len(args) > 1:
		errorf(stderr, "help takes one command name")
		return exitTrouble
	}
	var c *command
	switch args[0] {
	case "info":
		c = infoCommand(stdout, stderr)
	case "check":
		c, _ = checkCommand(stdout, stderr)
	case "create":
		c, _ = createCommand(stdout, stderr)
	case "add":
		c, _ = addCommand(stdout, stderr)
	case "serve":
		c, _ = serveCommand(stdout, stderr)
	case "completion":
		c = newCommand("completion", "completion bash|zsh|fish", stdout, stderr)
	case "version", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		msg := fmt.Sprintf("no help for %q: no such command", args[0])
		if s := suggest(args[0], commands); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		errorf(stderr, "%s", msg)
		return exitTrouble
	}
	c.printUsage(stdout)
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
