package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/pkbfssh"
)

// pkbf authorized-keys is sshd's AuthorizedKeysCommand, and pkbf
// authorized-principals its AuthorizedPrincipalsCommand: pkbfssh.Gate
// decides what they print and why; the commands read sshd's tokens and
// log to standard error and syslog, as sshd does.

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

// The exit statuses sshd sees: anything but 0 makes it ignore the output
// and log the failure.
const (
	authKeysOK     = 0
	authKeysFailed = 1
)

func runAuthKeys(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var fl authKeysFlags
	c := fl.command(stdout, stderr)
	if ok, code := c.parse(args, 0, -1); !ok {
		return code
	}
	if fl.maxSize < 1 {
		return c.fail(fmt.Sprintf("--max-size %v: must be positive", &fl.maxSize))
	}
	rest := c.Args()
	if len(rest) < 2 || len(rest) > 5 || len(rest) == 3 {
		return c.fail("want FILTER USER, and optionally KEYTYPE KEY and FINGERPRINT (sshd's %u %t %k %f)")
	}
	lg := pkbfssh.NewLog(stderr, "pkbf", fl.syslog.value)
	defer lg.Close()
	var offered *pkbfssh.Key
	if len(rest) >= 4 {
		var err error
		if offered, err = pkbfssh.ParseKey(rest[2], rest[3]); err != nil {
			return sshdExit(lg, perr.Errorf("user %s: no key accepted: the key offered (%s): %w", rest[1], rest[2], err))
		}
	}
	g := &pkbfssh.Gate{Filter: rest[0], FailOpen: fl.fail.value == "open", Files: fl.files.values,
		Options: pkbfssh.Options{IgnoreModes: !fl.strictModes, MaxSize: int64(fl.maxSize)}, Log: lg.Log}
	return sshdExit(lg, g.AuthorizedKeys(stdout, rest[1], offered))
}

// sshdExit logs a Gate's error, which tells sshd the command failed, and
// returns the exit status.
func sshdExit(lg *pkbfssh.Log, err error) int {
	if err != nil {
		lg.Log(false, message(err))
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
