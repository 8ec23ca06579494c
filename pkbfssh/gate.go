package pkbfssh

import (
	"bytes"
	"fmt"
	"io"
	"os/user"
	"slices"
	"strings"
	"sync"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keycheck"
)

// A Gate decides what sshd's AuthorizedKeysCommand and
// AuthorizedPrincipalsCommand print for one login, and logs why, as pkbf
// authorized-keys and authorized-principals do. With AuthorizedKeysFile
// none, sshd accepts only the keys printed, so a compromised key cannot
// log in even while it stays in the user's files. A Gate is not changed
// by its methods; it is safe for concurrent use if Log is.
type Gate struct {
	// Filter is the path of the filter file, opened for each decision
	// (mapped, never read whole: sshd runs the command for every key a
	// client offers).
	Filter string
	// FailOpen passes the keys (or the user's name) on unchecked when the
	// filter cannot be read or fails while read. Otherwise nothing is
	// printed and the decision returns an error, so that no key logs in.
	FailOpen bool
	// Files are the AuthorizedKeysFile patterns the keys are read from
	// ([DefaultFiles] when empty), each read by [ReadFile] under Options.
	Files   []string
	Options Options
	// Log, if not nil, is told what was refused, left out or passed on
	// unchecked, and why: as a warning for a line left out, as an error
	// for everything else (sshd logs both).
	Log func(warning bool, msg string)
}

// maxLoggedLines is how many lines left out of one file, their key
// probably compromised, are logged one by one; the rest are counted.
const maxLoggedLines = 10

// openFilter opens a Gate's filter; tests replace it to cut the file
// short under the Gate.
var openFilter = pkbf.Open

func (g *Gate) logf(warning bool, format string, args ...any) {
	if g.Log != nil {
		g.Log(warning, fmt.Sprintf(format, args...))
	}
}

// AuthorizedKeys writes to w what sshd's AuthorizedKeysCommand prints for
// a login of the user named name, offering the key offered (nil when sshd
// gives none): nothing when the filter probably holds the offered key (or,
// for a certificate, its CA key: see [Key.CompromisedKey]), else the lines
// of the user's files that [FilterLines] keeps. The files are read once,
// and only when needed. An error (the user is unknown, the filter fails
// and FailOpen is not set, w fails) means sshd must be told the command
// failed; nothing was written then but, for w's, part of the answer.
func (g *Gate) AuthorizedKeys(w io.Writer, name string, offered *Key) error {
	u, err := user.Lookup(name)
	if err != nil {
		return perr.Errorf("user %s: %v: no keys", name, err)
	}
	files := sync.OnceValue(func() []File { return g.read(u) })
	f, err := openFilter(g.Filter)
	if err == nil {
		defer f.Close()
		kc := keycheck.New(f, keycheck.Options{})
		// The offered key decides first: when the filter probably holds
		// it, nothing is printed, whatever the files hold.
		var held *Key
		var why string
		if offered != nil {
			held, why, err = offered.refused(kc)
		}
		if held != nil && err == nil {
			g.logf(false, "refused login of user %s with %s key %s", name, offered.Type, g.why(offered, held, "", why))
			return nil
		}
		var out []byte
		if err == nil {
			out, err = g.filter(name, kc, files(), offered)
		}
		if err == nil {
			err = f.FileChanged()
		}
		if err == nil {
			return g.write(w, name, out)
		}
	}
	if !g.FailOpen {
		return perr.Errorf("user %s: no key accepted (fail closed): %s", name, perr.Text(err))
	}
	g.logf(false, "user %s: keys passed on unchecked (fail open): %s", name, perr.Text(err))
	out, _ := g.filter(name, nil, files(), offered)
	return g.write(w, name, out)
}

// AuthorizedPrincipals writes to w what sshd's AuthorizedPrincipalsCommand
// prints for a login of the user named name with cert, a certificate
// signed by a CA sshd trusts (TrustedUserCAKeys: sshd runs no
// AuthorizedKeysCommand for those): name, when cert names it among its
// principals and the filter probably holds neither its certified key nor
// its CA key; otherwise nothing, which refuses the certificate. An error
// (a name sshd would not read as one principal, the filter fails and
// FailOpen is not set, w fails) means sshd must be told the command failed.
func (g *Gate) AuthorizedPrincipals(w io.Writer, name string, cert *Key) error {
	// sshd reads each line of the output as "[options] principal", the
	// principal after the last blank; a name it would read otherwise is
	// never printed.
	if name == "" || strings.ContainsAny(name, " \t\r\n") || name[0] == '#' {
		return perr.Errorf("user %q: no certificate accepted: sshd would not read the name as one principal", name)
	}
	if cert.CA == nil {
		return perr.Errorf("user %s: no certificate accepted: the key offered (%s %s) is not a certificate", name, cert.Type, cert.Fingerprint)
	}
	if !slices.Contains(cert.Principals, name) {
		g.logf(false, "refused login of user %s with certificate %s: %s is not among its principals", name, cert.Fingerprint, name)
		return nil
	}
	f, err := openFilter(g.Filter)
	if err == nil {
		defer f.Close()
		var held *Key
		var why string
		if held, why, err = cert.refused(keycheck.New(f, keycheck.Options{})); err == nil {
			err = f.FileChanged()
		}
		if err == nil && held != nil {
			g.logf(false, "refused login of user %s with %s certificate %s", name, cert.Type, g.why(cert, held, "", why))
			return nil
		}
	}
	if err != nil {
		if !g.FailOpen {
			return perr.Errorf("user %s: no certificate accepted (fail closed): %s", name, perr.Text(err))
		}
		g.logf(false, "user %s: certificate passed on unchecked (fail open): %s", name, perr.Text(err))
	}
	return g.write(w, name, []byte(name+"\n"))
}

// read reads u's files, logging those skipped.
func (g *Gate) read(u *user.User) []File {
	files := ReadFiles(g.Files, u, g.Options)
	for _, af := range files {
		if af.Err != nil {
			g.logf(false, "user %s: skipping %s: %s", u.Username, af.Path, perr.Text(af.Err))
		}
	}
	return files
}

// filter returns the lines of the files that may stay for the key
// offered (with kc nil, every line with a key), and logs those left out.
func (g *Gate) filter(name string, kc keycheck.KeyChecker, files []File, offered *Key) ([]byte, error) {
	var out bytes.Buffer
	for _, af := range files {
		if af.Err != nil {
			continue
		}
		r, err := FilterLines(&out, kc, af.Data, offered)
		if err != nil {
			return nil, err
		}
		g.logLines(name, af.Path, r.Compromised, "whose key is probably compromised", func(l Line) string {
			return g.why(l.Key, l.Held, l.Comment, l.why)
		})
		g.logLines(name, af.Path, r.CertAuthority, "of cert-authority", func(l Line) string {
			return "cert-authority " + l.Key.Fingerprint + ": sshd gave no key, so pkbf cannot check the certificates it lets in (give the AuthorizedKeysCommand sshd's %t %k)"
		})
		if r.Unreadable > 0 {
			g.logf(true, "user %s: left out %s of %s with no key pkbf reads as sshd does (the first, line %d: %s)",
				name, countLines(r.Unreadable), af.Path, r.FirstUnreadable.Num, perr.Text(r.FirstUnreadable.Err))
		}
	}
	return out.Bytes(), nil
}

// logLines logs lines left out of the file at path, each with why it
// was (the first maxLoggedLines one by one, then their number, with what
// they are).
func (g *Gate) logLines(name, path string, lines []Line, what string, why func(Line) string) {
	for i, l := range lines {
		if i == maxLoggedLines {
			g.logf(true, "user %s: left out %s more of %s %s", name, countLines(len(lines)-i), path, what)
			return
		}
		g.logf(true, "user %s: left out %s line %d: %s", name, path, l.Num, why(l))
	}
}

// why words which key of k (with its comment) the filter probably holds
// (or the weak-key checks refuse, as reason says): held, k itself or a
// certificate's CA key ([Key.CompromisedKey]).
func (g *Gate) why(k, held *Key, comment, reason string) string {
	name := k.Fingerprint
	if comment != "" {
		name += " " + ShortComment(comment)
	}
	if held != k {
		name += ": its CA key " + held.Fingerprint
	}
	return fmt.Sprintf("%s: %s (filter %s; SPKI SHA-256 %s)", name, reason, g.Filter, held.PwnedkeysFingerprint())
}

// countLines gives "1 line", "2 lines".
func countLines(n int) string {
	if n == 1 {
		return "1 line"
	}
	return fmt.Sprintf("%d lines", n)
}

func (g *Gate) write(w io.Writer, name string, out []byte) error {
	if _, err := w.Write(out); err != nil {
		return perr.Errorf("user %s: writing the keys: %v", name, err)
	}
	return nil
}

// ShortComment keeps a key's comment, or any text from sshd's tokens,
// which may be of any length, short in a log line, and on one line.
func ShortComment(c string) string {
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
