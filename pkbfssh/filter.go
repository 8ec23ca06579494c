package pkbfssh

import (
	"bufio"
	"io"
)

// Report is what [FilterLines] did with the lines of one file.
type Report struct {
	// Kept is the number of lines written.
	Kept int
	// Compromised are the lines left out because the filter probably
	// holds their key, or a certificate's CA key.
	Compromised []Line
	// Unreadable is the number of lines left out because they hold no
	// key sshd would read, and FirstUnreadable the first of them.
	Unreadable      int
	FirstUnreadable Line
}

// FilterLines writes to w, each ending in a line feed, the lines of data
// (an authorized_keys file) that may stay: blank and comment lines, and
// lines whose key f lacks. Lines are written byte for byte, so that sshd
// reads in them what FilterLines read. A nil f checks no key: every line
// with a key is kept (for a filter that could not be opened, when the
// operator chose to let logins go on). The error is w's, or one wrapping
// pkbf.ErrFileChanged when the filter's file was cut short under it (then
// the lines written must not be used).
func FilterLines(w io.Writer, f Filter, data []byte) (Report, error) {
	var r Report
	out := bufio.NewWriter(w)
	for l := range lines(data) {
		switch {
		case l.Err != nil:
			if r.Unreadable == 0 {
				r.FirstUnreadable = l
			}
			r.Unreadable++
			continue
		case l.Key != nil && f != nil:
			held, err := l.Key.CompromisedKey(f)
			if err != nil {
				return r, err
			}
			if held != nil {
				l.Held = held
				r.Compromised = append(r.Compromised, l)
				continue
			}
		}
		r.Kept++
		out.Write(l.Text)
		out.WriteByte('\n')
	}
	return r, out.Flush()
}
