package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os/user"
	"strings"
	"sync"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/pkbfssh"
)

// pkbf authorized-keys is sshd's AuthorizedKeysCommand: it prints the
// user's authorized_keys lines but those whose key the filter probably
// holds. With AuthorizedKeysFile none, sshd then accepts only what it
// prints, so a compromised key cannot log in even while it stays in the
// file. sshd runs it for every key a client offers (twice for an accepted
// one): it must cost a few milliseconds whatever the filter's size, so
// the filter is mapped, never read whole.

type authKeysFlags struct {
	fail, syslog choiceFlag
	files        listFlag
	strictModes  bool
	maxSize      sizeFlag
}

func (fl *authKeysFlags) command(stdout, stderr io.Writer) *command {
	c := newCommand("authorized-keys", "authorized-keys [flags] FILTER [--] USER [KEYTYPE KEY [FINGERPRINT]]", stdout, stderr)
	fl.fail, fl.syslog, fl.maxSize = failFlag(), syslogFlag(), 1<<20
	c.Var(&fl.fail, "fail", "when the filter cannot be read: `closed` prints no key (no one logs in by key), open prints the user's keys unchecked")
	c.Var(&fl.files, "file", "an authorized_keys `PATTERN` to read, as sshd's AuthorizedKeysFile: %h home, %u user, %U uid, %% a %; relative to the home directory; repeat for more (default .ssh/authorized_keys and .ssh/authorized_keys2)")
	c.BoolVar(&fl.strictModes, "strict-modes", true, "as sshd's StrictModes: skip a file that, or a directory above which up to the home directory, is writable by group or others or owned by someone other than the user or root, checked on the resolved path")
	c.Var(&fl.syslog, "syslog", "also log to syslog (auth facility), as sshd does: `auto` when a syslog socket exists, on, off")
	c.Var(&fl.maxSize, "max-size", "skip an authorized_keys file over `SIZE`")
	return c
}

// failFlag is --fail of the commands sshd runs; syslogFlag their --syslog.
func failFlag() choiceFlag { return choiceFlag{value: "closed", choices: []string{"closed", "open"}} }
func syslogFlag() choiceFlag {
	return choiceFlag{value: "auto", choices: []string{"auto", "on", "off"}}
}

// openSSHDFilter opens the filter of the commands sshd runs; tests
// replace it to cut the file short under them.
var openSSHDFilter = pkbf.Open

// The exit statuses sshd sees: anything but 0 makes it ignore the output
// and log the failure.
const (
	authKeysOK     = 0
	authKeysFailed = 1
)

// maxLoggedLines is how many lines left out of one file, their key
// probably compromised, are logged one by one; the rest are counted.
const maxLoggedLines = 10

func runAuthKeys(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var fl authKeysFlags
	c := fl.command(stdout, stderr)
	rest, code, ok := parseSSHDArgs(c, args, stdout)
	if !ok {
		return code
	}
	if len(rest) < 2 || len(rest) > 5 || len(rest) == 3 {
		_, code := c.fail("want FILTER USER, and optionally KEYTYPE KEY and FINGERPRINT (sshd's %u %t %k %f)")
		return code
	}
	a := &authKeys{filterPath: rest[0], user: rest[1], lg: newAuthLog(stderr, fl.syslog.value)}
	defer a.lg.close()
	open := fl.fail.value == "open"

	u, err := user.Lookup(a.user)
	if err != nil {
		a.lg.errorf("user %s: %v: no keys", a.user, err)
		return authKeysFailed
	}
	var offered *pkbfssh.Key
	if len(rest) >= 4 {
		if offered, err = pkbfssh.ParseKey(rest[2], rest[3]); err != nil {
			a.lg.errorf("user %s: no key accepted: the key offered (%s): %s", a.user, rest[2], message(err))
			return authKeysFailed
		}
	}
	// The files are read once, when first needed: checked, or passed on
	// unchecked (--fail open) when the filter fails.
	files := sync.OnceValue(func() []authFile { return a.read(u, &fl) })
	f, err := openSSHDFilter(a.filterPath)
	if err != nil {
		return a.noFilter(stdout, open, err, files)
	}
	defer f.Close()

	// The offered key decides first: when the filter probably holds it,
	// nothing is printed, whatever the files hold.
	if offered != nil {
		held, err := offered.CompromisedKey(f)
		if err != nil {
			return a.noFilter(stdout, open, err, files)
		}
		if held != nil {
			a.lg.errorf("refused login of user %s with %s key %s", a.user, offered.Type, a.why(offered, held, ""))
			return authKeysOK
		}
	}
	out, err := a.filter(f, files())
	if err == nil {
		err = f.FileChanged()
	}
	if err != nil {
		return a.noFilter(stdout, open, err, files)
	}
	return a.print(stdout, out)
}

// parseSSHDArgs parses the flags of a command sshd runs, which come only
// before FILTER: the arguments after it come from sshd's tokens, which a
// user name could make look like flags. It returns FILTER and the
// arguments after it (a "--" after FILTER dropped), or ok false and the
// exit code.
func parseSSHDArgs(c *command, args []string, stdout io.Writer) (rest []string, code int, ok bool) {
	if err := c.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.printUsage(stdout)
			return nil, exitOK, false
		}
		_, code := c.fail(c.flagError(err))
		return nil, code, false
	}
	rest = c.Args()
	if len(rest) > 1 && rest[1] == "--" {
		rest = append(rest[:1:1], rest[2:]...)
	}
	return rest, 0, true
}

// noFilter handles a filter that cannot be read, or was cut short while
// read: with --fail closed nothing is printed and the exit status tells
// sshd the command failed; with --fail open the keys are printed
// unchecked.
func (a *authKeys) noFilter(stdout io.Writer, open bool, err error, files func() []authFile) int {
	if !open {
		a.lg.errorf("user %s: no key accepted (--fail closed): %s", a.user, message(err))
		return authKeysFailed
	}
	a.lg.errorf("user %s: keys passed on unchecked (--fail open): %s", a.user, message(err))
	out, _ := a.filter(nil, files())
	return a.print(stdout, out)
}

// authKeys is one run of authorized-keys.
type authKeys struct {
	filterPath, user string
	lg               *authLog
}

type authFile struct {
	path string
	data []byte
}

// read reads the user's authorized_keys files as sshd does; a missing one
// is skipped silently, as sshd skips it.
func (a *authKeys) read(u *user.User, fl *authKeysFlags) []authFile {
	patterns := fl.files.values
	if len(patterns) == 0 {
		patterns = pkbfssh.DefaultFiles
	}
	opts := pkbfssh.Options{IgnoreModes: !fl.strictModes, MaxSize: int64(fl.maxSize)}
	var files []authFile
	for _, p := range patterns {
		path := pkbfssh.ExpandPath(p, u)
		b, err := pkbfssh.ReadFile(path, u, opts)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			a.lg.errorf("user %s: skipping %s: %s", a.user, path, message(err))
			continue
		}
		files = append(files, authFile{path, b})
	}
	return files
}

// filter returns the lines of the files that may stay (with f nil, every
// line with a key), and logs those left out.
func (a *authKeys) filter(f *pkbf.Filter, files []authFile) ([]byte, error) {
	var out bytes.Buffer
	var filter pkbfssh.Filter
	if f != nil {
		filter = f
	}
	for _, af := range files {
		r, err := pkbfssh.FilterLines(&out, filter, af.data)
		if err != nil {
			return nil, err
		}
		for i, l := range r.Compromised {
			if i == maxLoggedLines {
				a.lg.warnf("user %s: left out %s more of %s whose key is probably compromised", a.user, plural(len(r.Compromised)-i, "line", "lines"), af.path)
				break
			}
			a.lg.warnf("user %s: left out %s line %d: %s", a.user, af.path, l.Num, a.why(l.Key, l.Held, l.Comment))
		}
		if r.Unreadable > 0 {
			a.lg.warnf("user %s: left out %s of %s with no key pkbf reads as sshd does (the first, line %d: %s)",
				a.user, plural(r.Unreadable, "line", "lines"), af.path, r.FirstUnreadable.Num, message(r.FirstUnreadable.Err))
		}
	}
	return out.Bytes(), nil
}

// why words which key of k (with its comment) the filter probably holds:
// held, k itself or a certificate's CA key (pkbfssh.Key.CompromisedKey).
func (a *authKeys) why(k, held *pkbfssh.Key, comment string) string {
	name := k.Fingerprint
	if comment != "" {
		name += " " + shortComment(comment)
	}
	if held != k {
		name += ": its CA key " + held.Fingerprint
	}
	return fmt.Sprintf("%s: probably compromised (filter %s; SPKI SHA-256 %s)", name, a.filterPath, held.PwnedkeysFingerprint())
}

// shortComment keeps a key's comment, which may be of any length, short
// in a log line, and on one line.
func shortComment(c string) string {
	if len(c) > 80 {
		c = c[:80] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, c)
}

func (a *authKeys) print(stdout io.Writer, out []byte) int {
	if _, err := stdout.Write(out); err != nil {
		a.lg.errorf("user %s: writing the keys: %v", a.user, err)
		return authKeysFailed
	}
	return authKeysOK
}

// choiceFlag is a flag taking one of a few words.
type choiceFlag struct {
	value   string
	choices []string
}

func (f *choiceFlag) String() string { return f.value }
func (f *choiceFlag) Set(s string) error {
	for _, c := range f.choices {
		if s == c {
			f.value = s
			return nil
		}
	}
	return fmt.Errorf("want one of %s", strings.Join(f.choices, ", "))
}

// listFlag is a flag that may be repeated.
type listFlag struct{ values []string }

func (f *listFlag) String() string     { return strings.Join(f.values, " ") }
func (f *listFlag) Set(s string) error { f.values = append(f.values, s); return nil }
