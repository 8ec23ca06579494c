package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/pkbf/pkbf"
)

// pkbf authorized-keys is sshd's AuthorizedKeysCommand: it prints the
// user's authorized_keys lines but those whose key the filter probably
// holds. With AuthorizedKeysFile none, sshd then accepts only what it
// prints, so a compromised key cannot log in even while it stays in the
// file. sshd runs it for every key a client offers (twice for an accepted
// one): it must cost a few milliseconds whatever the filter's size, so
// the filter is mapped, never read whole.

type authKeysFlags struct {
	fail        *choiceFlag
	files       *listFlag
	strictModes *bool
	syslog      *choiceFlag
	maxSize     *sizeFlag
}

func authKeysCommand(stdout, stderr io.Writer) (*command, *authKeysFlags) {
	c := newCommand("authorized-keys", "authorized-keys [flags] FILTER [--] USER [KEYTYPE KEY [FINGERPRINT]]", stdout, stderr)
	fl := &authKeysFlags{
		fail:    newChoiceFlag("closed", "closed", "open"),
		files:   &listFlag{},
		syslog:  newChoiceFlag("auto", "auto", "on", "off"),
		maxSize: newSizeFlag(1 << 20),
	}
	c.Var(fl.fail, "fail", "when the filter cannot be read: `closed` prints no key (no one logs in by key), open prints the user's keys unchecked")
	c.Var(fl.files, "file", "an authorized_keys `PATTERN` to read, as sshd's AuthorizedKeysFile: %h home, %u user, %U uid, %% a %; relative to the home directory; repeat for more (default .ssh/authorized_keys and .ssh/authorized_keys2)")
	fl.strictModes = c.Bool("strict-modes", true, "as sshd's StrictModes: skip a file that, or a directory above which up to the home directory, is writable by group or others or owned by someone other than the user or root")
	c.Var(fl.syslog, "syslog", "also log to syslog (auth facility), as sshd does: `auto` when a syslog socket exists, on, off")
	c.Var(fl.maxSize, "max-size", "skip an authorized_keys file over `SIZE`")
	return c, fl
}

// The exit statuses sshd sees: anything but 0 makes it ignore the output
// and log the failure.
const (
	authKeysOK     = 0
	authKeysFailed = 1
)

func runAuthKeys(args []string, stdout, stderr io.Writer) int {
	c, fl := authKeysCommand(stdout, stderr)
	// Flags only before FILTER: the arguments after it come from sshd's
	// tokens, which a user name could make look like flags.
	if err := c.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.printUsage(stdout)
			return exitOK
		}
		_, code := c.fail(c.flagError(err))
		return code
	}
	rest := c.Args()
	if len(rest) > 1 && rest[1] == "--" {
		rest = append(rest[:1:1], rest[2:]...)
	}
	if len(rest) < 2 || len(rest) > 5 || len(rest) == 3 {
		_, code := c.fail("want FILTER USER, and optionally KEYTYPE KEY and FINGERPRINT (sshd's %u %t %k %f)")
		return code
	}
	filterPath, userName := rest[0], rest[1]
	var offered []byte // the key the client offers, as an authorized_keys line
	if len(rest) >= 4 {
		offered = []byte(rest[2] + " " + rest[3])
	}
	lg := newAuthLog(stderr, fl.syslog.value)
	defer lg.close()

	u, err := user.Lookup(userName)
	if err != nil {
		lg.errorf("user %s: %v: no keys", userName, err)
		return authKeysFailed
	}
	patterns := fl.files.values
	if len(patterns) == 0 {
		patterns = []string{".ssh/authorized_keys", ".ssh/authorized_keys2"}
	}
	var files []authFile
	for _, p := range patterns {
		path := expandAuthPattern(p, u)
		b, err := readAuthFile(path, u, *fl.strictModes, int64(*fl.maxSize))
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue // as sshd: most users have only one of the files
		case err != nil:
			lg.errorf("user %s: skipping %s: %s", userName, path, message(err))
			continue
		}
		files = append(files, authFile{path, b})
	}

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	f, err := pkbf.Open(filterPath)
	if err != nil {
		return lg.failed(out, fl.fail.value == "open", userName, files, err)
	}
	defer f.Close()

	left := map[string]map[int]pkbf.Verdict{} // path -> line -> why
	for _, af := range files {
		for v := range f.Check(context.Background(), pkbf.Bytes(af.path, af.data), pkbf.CheckOptions{Workers: 1}) {
			switch {
			case errors.Is(v.Err, pkbf.ErrFileChanged):
				return lg.failed(out, fl.fail.value == "open", userName, files, v.Err)
			case v.Err != nil:
				lg.warnf("user %s: %s: not checked, passed on as it is: %s", userName, v.Source(), message(v.Err))
			case v.Probably:
				if left[af.path] == nil {
					left[af.path] = map[int]pkbf.Verdict{}
				}
				left[af.path][v.Line] = v
			}
		}
	}
	if offered != nil {
		for v := range f.Check(context.Background(), pkbf.Bytes("offered key", offered), pkbf.CheckOptions{Workers: 1}) {
			if v.Probably {
				lg.errorf("refused login of user %s with %s key %s: probably compromised (filter %s; SPKI SHA-256 %s)", userName, rest[2], v.SSHFingerprint, filterPath, v.Fingerprint)
			}
		}
	}
	if err := f.FileChanged(); err != nil {
		return lg.failed(out, fl.fail.value == "open", userName, files, err)
	}
	for _, af := range files {
		for i, line := range authLines(af.data) {
			if v, ok := left[af.path][i+1]; ok {
				lg.warnf("user %s: left out %s line %d: %s: probably compromised (filter %s; SPKI SHA-256 %s)", userName, af.path, i+1, strings.TrimSpace(v.SSHFingerprint+" "+v.Comment), filterPath, v.Fingerprint)
				continue
			}
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	if err := out.Flush(); err != nil {
		lg.errorf("user %s: writing the keys: %v", userName, err)
		return authKeysFailed
	}
	return authKeysOK
}

// failed handles a filter that cannot be read: with --fail open, the
// user's keys are printed unchecked; with --fail closed none are, and the
// exit status tells sshd the command failed.
func (lg *authLog) failed(out *bufio.Writer, open bool, userName string, files []authFile, err error) int {
	if !open {
		lg.errorf("user %s: no key accepted (--fail closed): %s", userName, message(err))
		return authKeysFailed
	}
	lg.errorf("user %s: keys passed on unchecked (--fail open): %s", userName, message(err))
	for _, af := range files {
		for _, line := range authLines(af.data) {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	if err := out.Flush(); err != nil {
		return authKeysFailed
	}
	return authKeysOK
}

type authFile struct {
	path string
	data []byte // lone carriage returns made line feeds, as the scanner reads them
}

// authLines splits an authorized_keys file into its lines, without their
// line ends, numbered as the key scanner numbers them.
func authLines(data []byte) [][]byte {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = bytes.TrimSuffix(l, []byte("\r"))
	}
	return lines
}

// expandAuthPattern expands sshd's AuthorizedKeysFile tokens, and makes
// a relative path relative to the user's home directory.
func expandAuthPattern(p string, u *user.User) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+1 == len(p) {
			b.WriteByte(p[i])
			continue
		}
		i++
		switch p[i] {
		case 'h':
			b.WriteString(u.HomeDir)
		case 'u':
			b.WriteString(u.Username)
		case 'U':
			b.WriteString(u.Uid)
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(p[i])
		}
	}
	path := b.String()
	if !filepath.IsAbs(path) {
		path = filepath.Join(u.HomeDir, path)
	}
	return path
}

// readAuthFile reads an authorized_keys file, with sshd's StrictModes
// checks when strict, and no more than max bytes. Lone carriage returns
// become line feeds, as the key scanner reads them, so that line numbers
// agree.
func readAuthFile(path string, u *user.User, strict bool, max int64) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if strict {
		if err := securePath(path, fi, u); err != nil {
			return nil, err
		}
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, over --max-size %d", path, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(file, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s grew over --max-size %d", path, max)
	}
	for i, c := range b {
		if c == '\r' && (i+1 == len(b) || b[i+1] != '\n') {
			b[i] = '\n'
		}
	}
	return b, nil
}

// choiceFlag is a flag taking one of a few words.
type choiceFlag struct {
	value   string
	choices []string
}

func newChoiceFlag(def string, choices ...string) *choiceFlag {
	return &choiceFlag{value: def, choices: choices}
}

func (f *choiceFlag) String() string { return f.value }
func (f *choiceFlag) Get() any       { return f.value }
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
func (f *listFlag) Get() any           { return f.values }
func (f *listFlag) Set(s string) error { f.values = append(f.values, s); return nil }
