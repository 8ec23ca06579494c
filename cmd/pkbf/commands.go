package main

import (
	"io"
	"slices"
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
}

// subcommands is the table of pkbf's commands, in the order of the usage.
func subcommands() []subcommand {
	return []subcommand{
		{
			name: "info", synopsis: "info [--json] [--scan] FILTER",
			summary: "Show a filter's header, size and estimated false-positive rate.",
			help: `Show the header (revision, update time, entries, hash count and length),
the size in bits and bytes and the false-positive rate estimated from the
header. --scan also counts the bits set (it reads the whole filter, with
progress on a terminal).`,
			flags: new(infoFlags).command, run: runInfo,
		},
		{
			name: "check", synopsis: "check [--json] [--confirm] [flags] FILTER [FILE...]",
			summary: "Check keys, certificates and requests against a filter.",
			help: `Check every key, certificate and request in the FILEs (standard input when
none, or for -): PEM or DER objects and bundles, PKCS#7 and PKCS#12 files,
authorized_keys and known_hosts files, OpenSSH, RFC 4716 and PuTTY keys.
Each key is looked up under every encoding a filter may hold it in.

Output: one line per key, fields separated by single tabs (for awk -F'\t'
and cut; columns are padded only on a terminal): verdict (probably or no;
with --confirm compromised, false-positive or unconfirmed), the SHA-256
fingerprint of the key's canonical SPKI, where it was found, and for SSH
keys the SHA256: fingerprint ssh-keygen -l shows and the comment. With
--json, one object per line. Verdicts stream out as they are made. Every
object that could not be checked is an error on standard error, and a
summary goes there at the end. A directory is read file by file with -r.
Ctrl-C prints the verdicts made, then exits 130.

Exit status, the first row that applies:
` + checkExitTable,
			flags: new(checkFlags).command, run: runCheck,
		},
		{
			name: "create", synopsis: "create (--keys N --fp-rate P | --entries N --fp-rate P | --hashes K --length L) FILTER",
			summary: "Create an empty filter file.",
			help: `Create an empty filter file; refuses an existing file. Give the expected
number of keys and the false-positive rate, or of entries (add stores a key
under each of its encodings: an EC key is two entries, both point forms),
or the hash count and length. The size for N entries is the reference
implementation's; --keys N sizes for 2N entries. The file's disk space is
reserved at once.`,
			flags: new(createFlags).command, run: runCreate,
		},
		{
			name: "add", synopsis: "add [flags] FILTER [FILE...]",
			summary: "Add keys to a filter file, in place.",
			help: `Add every key in the FILEs to FILTER, in place, under the reference's
flock protocol (EC keys under both point encodings). A first Ctrl-C stops
after the key in progress, a second quits at once; the filter stays valid.
Exit 2 if an input could not be read (the other keys are still added), or
if the filter was replaced or cut short while keys were being added.`,
			flags: new(addFlags).command, run: runAdd,
		},
		{
			name: "merge", synopsis: "merge [--force] OUT FILTER...",
			summary: "Merge filters with the same parameters into one (their union).",
			help: `Write to OUT the union of the FILTERs, which must have the same hash count
and hash length: OUT answers as one filter holding every FILTER's keys.
The FILTERs are read a chunk at a time (a few MiB of memory whatever their
size), each under the shared lock writers wait for; OUT is written under a
temporary name and renamed into place, so readers never see half of it.
OUT gets the highest revision plus one, the time now, and the sum of the
entry counts (a key in several FILTERs is counted once for each; 'pkbf
info --scan' estimates the distinct keys from the bits). An existing OUT
is refused unless it is one of the FILTERs or --force is given. Ctrl-C
stops and leaves OUT as it was.`,
			flags: new(mergeFlags).command, run: runMerge,
		},
		{
			name: "update", synopsis: "update [--sha256 HEX|URL] [--signature URL --signer-key FILE] [--allow-http] [--force] [--header-file FILE] [flags] URL FILTER",
			summary: "Download a new filter from URL if there is one, safely.",
			help: `Make FILTER current with the filter at URL. The request is conditional
(the ETag and time of the installed file): "up to date" costs no transfer.
A new filter is streamed to .FILTER.download beside FILTER, checked (its
header, its size against the server's and the limit) and compared with the
installed one, then renamed over it, so programs reading FILTER see the old
file or the new one, never a part. Refused unless --force: an older
filter; one with fewer hashes, a shorter hash length or fewer entries than
the installed one; one that lacks bits it has set (keys do not stop being
compromised; a longer filter is folded onto the installed length to
compare); a time or revision far ahead; one that answers yes for most
keys. Refused always: one whose entry count does not fit the bits set in
it (an empty filter claiming thousands of keys), one older than --max-age,
and one that fails its pin: --sha256 (a digest, or a digest file's https
URL) or --signature with --signer-key (an SSH signature the publisher made
with ssh-keygen -Y sign -n pkbf FILTER). URLs must be https unless
--allow-http, which needs --sha256 HEX or --signature; credentials never
go over http. FILTER's directory must be writable by its owner only. A
download cut short is resumed (HTTP Range) by the retries and by the next
run. Request headers (credentials) come from --header-file or
$PKBF_UPDATE_HEADER, never the command line, and are never printed;
proxies from $HTTPS_PROXY and $NO_PROXY. Two updates of one FILTER wait
for each other. Exit 0 when FILTER is current (updated or already), 2 when
the update failed (FILTER untouched), 130 when interrupted. For example:

  pkbf update --signature https://example.com/f.pkbf.sig \
    --signer-key publisher.pub https://example.com/f.pkbf /var/lib/pkbf/f.pkbf`,
			flags: new(updateFlags).command, run: runUpdate,
		},
		{
			name: "serve", synopsis: "serve [--listen ADDR] [flags] FILTER",
			summary: "Answer checks over HTTP, following the filter file as it is replaced.",
			help: `Answer checks over HTTP (default on 127.0.0.1:8080), following FILTER as
new files are renamed over it (checked every --poll, and on SIGHUP; a file
that is not valid is logged and the old one kept). Endpoints:
  POST /v1/check   a body of keys in any form check reads; one JSON line
                   per key, as check --json prints them
  GET  /healthz    200 while a filter is loaded
  GET  /readyz     200 until shutdown begins, then 503
  GET  /v1/status  the filter's header, reloads and the last reload error
  GET  /metrics    counters in the Prometheus text format
  POST /v1/step-ca/authorize
                   step-ca's AUTHORIZING webhook: allows only keys FILTER
                   does not hold; needs --tls-cert, --tls-key,
                   --client-ca (step-ca's root) and --client-name (the
                   common name of step-ca's own certificate), see
                   docs/stepca.md
SIGTERM or Ctrl-C stops accepting requests and lets those in flight finish.`,
			flags: new(serveFlags).command, run: runServe,
		},
		{
			name: "authorized-keys", synopsis: "authorized-keys [flags] FILTER [--] USER [KEYTYPE KEY [FINGERPRINT]]",
			summary: "Print a user's authorized_keys without compromised keys, for sshd.",
			help: `sshd's AuthorizedKeysCommand: print USER's authorized_keys lines (from
~/.ssh/authorized_keys and ~/.ssh/authorized_keys2, or each --file) except
those whose key FILTER probably holds and those with no key pkbf reads as
sshd does, each left out with a warning on standard error and in syslog
(auth facility). With AuthorizedKeysFile none, sshd accepts only the keys
printed, so a compromised key cannot log in even while it stays in the
file. KEYTYPE and KEY (sshd's %t %k) name the key being offered: when
FILTER probably holds it, nothing is printed and its refusal is logged.
Files are read as sshd reads them: regular files the user could read,
checked as sshd's StrictModes does on the resolved path. When FILTER cannot
be read, --fail closed (the default) prints nothing and exits 1, so no key
logs in; --fail open prints the keys unchecked. Flags come before FILTER.
In sshd_config:
  AuthorizedKeysFile none
  AuthorizedKeysCommand /usr/local/bin/pkbf authorized-keys /var/lib/pkbf/pwnedkeys.pkbf -- %u %t %k
  AuthorizedKeysCommandUser root`,
			flagsFirst: true,
			flags:      new(authKeysFlags).command, run: runAuthKeys,
		},
		{
			name: "authorized-principals", synopsis: "authorized-principals [flags] FILTER [--] USER KEYTYPE KEY",
			summary: "Print a certificate's user unless its key or CA key is compromised, for sshd.",
			help: `sshd's AuthorizedPrincipalsCommand, for certificates signed by a CA of
TrustedUserCAKeys (sshd never runs the AuthorizedKeysCommand for those):
KEYTYPE and KEY are the certificate (sshd's %t %k). Print USER when the
certificate names USER among its principals and FILTER probably holds
neither the certified key nor the CA key that signed it; otherwise print
nothing, so sshd refuses the certificate, and log why on standard error and
in syslog (auth facility). When FILTER cannot be read, --fail closed (the
default) prints nothing and exits 1; --fail open prints USER unchecked.
Flags come before FILTER. In sshd_config:
  TrustedUserCAKeys /etc/ssh/user_ca.pub
  AuthorizedPrincipalsCommand /usr/local/bin/pkbf authorized-principals /var/lib/pkbf/pwnedkeys.pkbf -- %u %t %k
  AuthorizedPrincipalsCommandUser root`,
			flagsFirst: true,
			flags:      new(authPrincipalsFlags).command, run: runAuthPrincipals,
		},
		{
			name: "nix", synopsis: "nix (build [flags] SOURCE | check [flags] CACHE [PATH...])",
			summary: "Build or query a Nix binary cache's Bloom filter of store paths.",
			help:    nixHelp,
			flags:   new(nixFlags).command,
			run:     runNix,
		},
		{
			name: "version", aliases: []string{"-version", "--version", "-v"}, synopsis: "version | --version | -v",
			help: `Print pkbf's version, the revision it was built from (when known) and the
Go version that built it.`,
			run: runVersion,
		},
		{
			name: "help", aliases: []string{"-h", "-help", "--help"}, synopsis: "help [COMMAND]",
			help: "Print the usage of pkbf, or of COMMAND: its flags and exit status.",
			run:  runHelp,
		},
		{
			name: "completion", synopsis: "completion bash|zsh|fish",
			help: `Print a shell completion script: bash, zsh or fish. For example
  source <(pkbf completion bash)
  pkbf completion fish > ~/.config/fish/completions/pkbf.fish`,
			run: runCompletion,
		},
	}
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

// helpText is the help of the command named name, or "".
func helpText(name string) string {
	if s := lookupSubcommand(name); s != nil {
		return s.help
	}
	return ""
}
