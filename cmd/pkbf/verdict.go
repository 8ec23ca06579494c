package main

import (
	"strings"

	"github.com/pkbf/pkbf"
)

// appendTextVerdict appends check's text line for a verdict:
// "STATUS<TAB>FINGERPRINT<TAB>SOURCE", then for SSH keys a tab, the
// ssh-keygen fingerprint and the comment, and where the input's encoding
// is not the one fingerprinted, a tab, its label and the other
// fingerprint. Fields are separated by single tabs, for awk -F'\t' and
// cut; only on a terminal (align) is the status padded to the widest one
// in use, so that columns line up for the eye.
func appendTextVerdict(b []byte, v *pkbf.Verdict, confirm, align bool) []byte {
	status := v.Status()
	b = append(b, status...)
	if align {
		width := len("probably")
		if confirm {
			width = len("false-positive")
		}
		for range width - len(status) {
			b = append(b, ' ')
		}
	}
	b = append(append(append(b, '\t'), v.Fingerprint...), '\t')
	b = v.AppendSource(b)
	if v.SSHFingerprint != "" {
		b = append(append(b, '\t'), v.SSHFingerprint...)
		if v.Comment != "" {
			b = append(append(b, ' '), strings.Map(noTabs, v.Comment)...)
		}
	}
	if v.OtherLabel != "" {
		b = append(append(append(b, '\t'), v.OtherLabel...), ": "...)
		b = append(b, v.OtherFingerprint...)
	}
	return append(b, '\n')
}

// noTabs keeps a comment on one field of one line.
func noTabs(r rune) rune {
	if r == '\t' || r == '\n' || r == '\r' {
		return ' '
	}
	return r
}
