package main

import (
	"embed"
	"io"
	"slices"
	"strings"
)

// subcommand is one entry of the table that drives dispatch, help and
// completion.
type subcommand struct {
	name     string
	aliases  []string // other spellings that run it
	synopsis string   // after "pkbf ", in the usage
	summary  string   // one line in the usage's list of commands, or none
	help     string   // 'pkbf help NAME' after the synopsis
	// flagsFirst: the command reads flags only before its first argument
	// (authorized-keys: sshd's tokens after FILTER are never flags).
	flagsFirst bool
	// flags declares the command's flags, for help and completion: the
	// command method of the command's flags struct, which binds each
	// field to its flag (run calls it too, on its own struct); nil for
	// commands without flags (version, help, completion).
	flags func(stdout, stderr io.Writer) *command
	run   func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
	// subs are the command's own commands (nix build, nix check), run as
	// "pkbf NAME SUB": with their flags in NAME's help and completion.
	subs []subcommand
}

// command is the command's flags, for parsing, help and completion: none
// for a command without (version, help, completion, nix).
func (s *subcommand) command(stdout, stderr io.Writer) *command {
	if s.flags == nil {
		return newCommand(s.name, s.synopsis, stdout, stderr)
	}
	return s.flags(stdout, stderr)
}

// subcommands is the table of pkbf's commands, in the order of the usage.
func subcommands() []subcommand {
	return []subcommand{
		{
			name: "info", synopsis: "info [--json] [--scan] FILTER",
			summary: "Show a filter's header, size and estimated false-positive rate.",
			help:    helpFile("info"),
			flags:   new(infoFlags).command, run: runInfo,
		},
		{
			name: "check", synopsis: "check [--json] [--confirm] [flags] FILTER [FILE...]",
			summary: "Check keys, certificates and requests against a filter.",
			help:    helpFile("check") + checkExitTable,
			flags:   new(checkFlags).command, run: runCheck,
		},
		{
			name: "create", synopsis: "create (--keys N --fp-rate P | --entries N --fp-rate P | --hashes K --length L) FILTER",
			summary: "Create an empty filter file.",
			help:    helpFile("create"),
			flags:   new(createFlags).command, run: runCreate,
		},
		{
			name: "add", synopsis: "add [flags] FILTER [FILE...]",
			summary: "Add keys to a filter file, in place.",
			help:    helpFile("add"),
			flags:   new(addFlags).command, run: runAdd,
		},
		{
			name: "merge", synopsis: "merge [--force] OUT FILTER...",
			summary: "Merge filters with the same parameters into one (their union).",
			help:    helpFile("merge"),
			flags:   new(mergeFlags).command, run: runMerge,
		},
		{
			name: "update", synopsis: "update [--sha256 HEX|URL] [--signature URL --signer-key FILE] [--allow-http] [--force] [--header-file FILE] [flags] URL FILTER",
			summary: "Download a new filter from URL if there is one, safely.",
			help:    helpFile("update"),
			flags:   new(updateFlags).command, run: runUpdate,
		},
		{
			name: "serve", synopsis: "serve [--listen ADDR] [flags] FILTER",
			summary: "Answer checks over HTTP, following the filter file as it is replaced.",
			help:    helpFile("serve"),
			flags:   new(serveFlags).command, run: runServe,
		},
		{
			name: "authorized-keys", synopsis: "authorized-keys [flags] FILTER [--] USER [KEYTYPE KEY [FINGERPRINT]]",
			summary:    "Print a user's authorized_keys without compromised keys, for sshd.",
			help:       helpFile("authorized-keys"),
			flagsFirst: true,
			flags:      new(authKeysFlags).command, run: runAuthKeys,
		},
		{
			name: "authorized-principals", synopsis: "authorized-principals [flags] FILTER [--] USER KEYTYPE KEY",
			summary:    "Print a certificate's user unless its key or CA key is compromised, for sshd.",
			help:       helpFile("authorized-principals"),
			flagsFirst: true,
			flags:      new(authPrincipalsFlags).command, run: runAuthPrincipals,
		},
		{
			name: "nix", synopsis: "nix (build [flags] SOURCE | check [flags] CACHE [PATH...])",
			summary: "Build or query a Nix binary cache's Bloom filter of store paths.",
			help:    helpFile("nix"), run: runNix,
			subs: []subcommand{
				{name: "build", flags: new(nixBuildFlags).command, run: runNixBuild},
				{name: "check", flags: new(nixCheckFlags).command, run: runNixCheck},
			},
		},
		{
			name: "weak", synopsis: "weak (build [flags] OUT SOURCE... | info [--json] FILE)",
			summary: "Build or inspect the Debian weak-key file of the BR weak-key checks.",
			help:    helpFile("weak"), run: runWeak,
			subs: []subcommand{
				{name: "build", flags: new(weakBuildFlags).command, run: runWeakBuild},
				{name: "info", flags: new(weakInfoFlags).command, run: runWeakInfo},
			},
		},
		{
			name: "version", aliases: []string{"-version", "--version", "-v"}, synopsis: "version | --version | -v",
			help: helpFile("version"),
			run:  runVersion,
		},
		{
			name: "help", aliases: []string{"-h", "-help", "--help"}, synopsis: "help [COMMAND]",
			help: "Print the usage of pkbf, or of COMMAND: its flags and exit status.",
			run:  runHelp,
		},
		{
			name: "completion", synopsis: "completion bash|zsh|fish",
			help: helpFile("completion"),
			run:  runCompletion,
		},
	}
}

// runGroup is the run of a command of subcommands (nix, weak) named
// without one: its help for -h, else an error naming them.
func runGroup(name string, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
		return runHelp([]string{name}, nil, stdout, stderr)
	}
	var subs []string
	for _, sub := range lookupSubcommand(name).subs {
		subs = append(subs, "pkbf "+name+" "+sub.name)
	}
	errorf(stderr, "want %s\nRun 'pkbf help %s' for usage.", strings.Join(subs, " or "), name)
	return exitTrouble
}

// lookupSubcommand returns the command named name (or one of its
// aliases), or nil.
func lookupSubcommand(name string) *subcommand {
	for _, s := range subcommands() {
		if s.name == name || slices.Contains(s.aliases, name) {
			return &s
		}
	}
	return nil
}

//go:embed help
var helpFiles embed.FS

// helpFile is the text of help/NAME.txt, without its last line feed: a
// command's help after its synopsis, or a part of the usage.
func helpFile(name string) string {
	b, _ := helpFiles.ReadFile("help/" + name + ".txt") // every name is tested
	return strings.TrimSuffix(string(b), "\n")
}

// helpText is the help of the command named name, or "".
func helpText(name string) string {
	if s := lookupSubcommand(name); s != nil {
		return s.help
	}
	return ""
}
