package main

import (
	"strings"

	"github.com/pkbf/pkbf/keycheck"
)

// appendTextVerdict appends check's text line for a verdict:
// "STATUS<TAB>FINGERPRINT<TAB>SOURCE", then for SSH keys a tab, the
// ssh-keygen fingerprint and the comment, and where the input's encoding
// is not the one fingerprinted, a tab, its label and the other
// fingerprint. Fields are separated by single tabs, for awk -F'\t' and
// cut; only on a terminal (align) is the status padded to the widest one
// in use, so that columns line up for the eye.
func appendTextVerdict(b []byte, v *keycheck.Verdict, confirm, align bool) []byte {
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
	k := &v.Key
	b = append(append(append(b, '\t'), k.Fingerprint...), '\t')
	b = v.Source.Append(b)
	if k.SSHFingerprint != "" {
		b = append(append(b, '\t'), k.SSHFingerprint...)
		if k.Comment != "" {
			b = append(append(b, ' '), strings.Map(noTabs, k.Comment)...)
		}
	}
	if k.OtherLabel != "" {
		b = append(append(append(b, '\t'), k.OtherLabel...), ": "...)
		b = append(b, k.OtherFingerprint...)
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
