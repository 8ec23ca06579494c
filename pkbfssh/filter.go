package pkbfssh

import (
	"bufio"
	"io"

	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keycheck"
)

// Report is what [FilterLines] did with the lines of one file.
type Report struct {
	// Kept is the number of lines written.
	Kept int
	// Compromised are the lines left out because the filter probably
	// holds their key, or a certificate's CA key.
	Compromised []Line
	// CertAuthority are the cert-authority lines left out because no key
	// was offered: which certificate sshd accepts by them is not known.
	CertAuthority []Line
	// Unreadable is the number of lines left out because they hold no
	// key sshd would read, and FirstUnreadable the first of them.
	Unreadable      int
	FirstUnreadable Line
}

// FilterLines writes to w, each ending in a line feed, the lines of data
// (an authorized_keys file) that may stay when sshd offers the key offered
// (its %t %k; nil when sshd gives none): blank and comment lines, and
// lines whose key f finds clean. Lines are written byte for byte, so that sshd
// reads in them what FilterLines read.
//
// A cert-authority line lets in every certificate its key signed, so a
// clean CA key says nothing of the key certified: without offered it is
// left out (Report.CertAuthority). With offered, FilterLines checks it
// first and writes nothing when f finds it or, for a certificate, its CA
// key probably compromised (the error wraps [ErrCompromised]).
//
// A nil f checks no key: every line with a key is kept (for a filter that
// could not be opened, when the operator chose to let logins go on). The
// error is w's, one wrapping ErrCompromised, or one wrapping
// pkbf.ErrFileChanged when the filter's file was cut short under it (then
// the lines written must not be used).
func FilterLines(w io.Writer, f keycheck.KeyChecker, data []byte, offered *Key) (Report, error) {
	var r Report
	if offered != nil && f != nil {
		switch held, why, err := offered.refused(f); {
		case err != nil:
			return r, err
		case held != nil:
			return r, perr.Kind(ErrCompromised, perr.Errorf("the key offered, %s %s: %s (SPKI SHA-256 %s)", offered.Type, offered.Fingerprint, why, held.PwnedkeysFingerprint()))
		}
	}
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
			held, why, err := l.Key.refused(f)
			if err != nil {
				return r, err
			}
			if held != nil {
				l.Held, l.why = held, why
				r.Compromised = append(r.Compromised, l)
				continue
			}
			if l.CertAuthority && offered == nil {
				r.CertAuthority = append(r.CertAuthority, l)
				continue
			}
		}
		r.Kept++
		out.Write(l.Text)
		out.WriteByte('\n')
	}
	return r, out.Flush()
}
