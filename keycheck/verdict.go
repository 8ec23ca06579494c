package keycheck

import (
	"strconv"
	"strings"

	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/internal/text"
	"github.com/pkbf/pkbf/weakkeys"
)

// A Verdict is what a [Checker] found of one key, or of an input it could
// not read: where the key was, which key it is, the answers of the filter
// and of the weak-key checks, and what Options.Confirm said of it.
type Verdict struct {
	// Source is where the key's object starts in its input; zero from
	// [Checker.CheckKey], which has no input.
	Source Source
	// Key names the key. [Checker.CheckKey] names only the keys to
	// refuse ([Verdict.Refuse]), and [Options].FingerprintHitsOnly leaves
	// the fingerprints of the others empty; a bare RSA modulus has none.
	Key Key

	// Probably is true when the filter probably holds the key, under any
	// encoding it may hold it in (as [Checker.Contains] answers).
	Probably bool
	// Err is why the key, or its input, could not be checked (or, from
	// AddKeys, added). It wraps [keys.ErrInvalidKey] (and
	// [keys.ErrUnsupportedKey], [keys.ErrEncryptedKey] or
	// [keys.ErrNoPassphrase], which say why), the input's open or read
	// error, or [pkbf.ErrFileChanged]: the filter's file failed, and
	// nothing after this verdict could be answered. Probably is then
	// false, and Findings empty, but where one check answered and the
	// other could not: the weak-key checks' error ([weakkeys.ErrInvalidFile]
	// for their Debian file) beside the filter's answer, or a bare
	// modulus's findings beside the filter's "not looked up".
	Err error
	// Findings are the weak-key checks' reasons to refuse the key
	// (Options.Weak), in weakkeys' order; none when they found nothing
	// or did not run.
	Findings []weakkeys.Finding

	// Confirmation is what Options.Confirm said of a key the filter
	// probably holds.
	Confirmation Confirmation

	confirming  bool  // Options.Confirm was set
	weakChecked bool  // the weak-key checks ran
	lookedUp    bool  // the filter answered for the key
	checks      uint8 // the Checker's: checksNoFilter, checksWeak
}

// Bits of Verdict.checks: what the Checker that made it checks, for a
// Tally.
const (
	checksNoFilter = 1 << iota
	checksWeak
)

// checks are c's bits of Verdict.checks.
func (c *Checker) checks() uint8 {
	var b uint8
	if c.q == nil {
		b |= checksNoFilter
	}
	if c.opts.Weak != nil {
		b |= checksWeak
	}
	return b
}

// Source is where a key's object starts in its input, as [keys.Key] has
// it.
type Source struct {
	// Input is the name of the input ([Input].Name).
	Input string
	// Index is the object's 1-based position among the input's objects,
	// Line the line it starts on (0 in DER input), Block its PEM block
	// (or 0), Offset its byte offset, and Part the part of a container it
	// is ("certificate 2"). All are zero for an input that could not be
	// read.
	Index, Line, Block int
	Offset             int64
	Part               string
}

// Key names a key the way pkbf check and the pwnedkeys API do.
type Key struct {
	// Fingerprint is the lowercase hex SHA-256 of the SPKI pwnedkeys and
	// openssl name the key by: its canonical encoding ([keys.Canonical]),
	// or for an EC key with explicit curve parameters, which openssl
	// keeps, the SPKI as given. OtherFingerprint is that of the other of
	// the two where they differ, and OtherLabel says which it is ("as
	// given" or "named curve"); both are "" when there is no other.
	Fingerprint, OtherFingerprint, OtherLabel string
	// For SSH keys: the SHA256: fingerprint ssh-keygen -l shows, and the
	// key's comment.
	SSHFingerprint, Comment string
}

// Confirmation is Options.Confirm's answer about a key the filter
// probably holds: Pwned when it verified that the key is compromised, Err
// when it gave no usable answer.
type Confirmation struct {
	Pwned bool
	Err   error
}

// Words of Status.
const (
	statusNo            = "no"
	statusProbably      = "probably"
	statusCompromised   = "compromised"    // Confirm: verified
	statusFalsePositive = "false-positive" // Confirm: the filter's false positive
	statusUnconfirmed   = "unconfirmed"    // Confirm: no usable answer
	statusWeak          = "weak"           // weak-key findings
	statusError         = "error"
)

// Status is the verdict in a word: "probably" when the filter probably
// holds the key (with Options.Confirm, "compromised", "false-positive" or
// "unconfirmed"), else "weak" when the weak-key checks found something
// (also for a false positive or an unconfirmed key), else "error" when
// Err is set, else "no".
func (v *Verdict) Status() string {
	switch {
	case v.Probably && !v.confirming:
		return statusProbably
	case v.Probably && v.Confirmation.Pwned && v.Confirmation.Err == nil:
		return statusCompromised
	case len(v.Findings) > 0:
		return statusWeak
	case v.Probably && v.Confirmation.Err != nil:
		return statusUnconfirmed
	case v.Probably:
		return statusFalsePositive
	case v.Err != nil:
		return statusError
	}
	return statusNo
}

// Refuse reports whether the key is one to refuse: the filter probably
// holds it (with Options.Confirm, the API verified it is compromised), or
// the weak-key checks found something. It is the one test the gates
// make; they refuse a verdict with Err as well, as a key not checked.
func (v *Verdict) Refuse() bool {
	if len(v.Findings) > 0 {
		return true
	}
	if v.confirming {
		return v.Probably && v.Confirmation.Pwned && v.Confirmation.Err == nil
	}
	return v.Probably
}

// Reason says why the key is to be refused, for people: "probably
// compromised: a filter of compromised keys holds it" (with
// Options.Confirm, "compromised: the pwnedkeys API verified it"), then
// each finding's rule and reason, joined by "; ". It is "" when Refuse is
// false.
func (v *Verdict) Reason() string {
	if !v.Refuse() {
		return ""
	}
	var b []byte
	switch {
	case v.Probably && v.confirming:
		b = append(b, "compromised: the pwnedkeys API verified it"...)
	case v.Probably:
		b = append(b, "probably compromised: a filter of compromised keys holds it"...)
	}
	if len(b) > 0 && len(v.Findings) > 0 {
		b = append(b, "; "...)
	}
	return string(v.appendFindings(b))
}

// appendFindings appends each finding's rule and reason, joined by "; ".
func (v *Verdict) appendFindings(b []byte) []byte {
	for i, f := range v.Findings {
		if i > 0 {
			b = append(b, "; "...)
		}
		b = append(append(append(b, f.Rule...), ": "...), f.Reason...)
	}
	return b
}

// String says where the key came from: "INPUT: block 2 (line 31)",
// "INPUT: line 7", "INPUT: object 3 (byte 2048), certificate 2", or the
// input's name alone for an input that could not be read.
func (s Source) String() string { return string(s.Append(nil)) }

// Append appends String to b, without making a string.
func (s Source) Append(b []byte) []byte {
	b = append(b, s.Input...)
	if s.Index == 0 {
		return b
	}
	return text.AppendSource(append(b, ": "...), s.Block, s.Line, s.Index, s.Offset, s.Part)
}

// AppendJSON appends the verdict as one JSON object and a newline: the
// form pkbf check --json, pkbf serve and the Beam pipelines write. Its
// fields: source, file, line, index, offset, block, part, ssh_fingerprint
// and comment where they apply; then fingerprint, fingerprint_as_given or
// fingerprint_named_curve, and probably (where the filter answered); with
// Options.Weak, findings (each finding's rule, detail and reason, [] for
// none); with Options.Confirm or Weak, verdict (Status); and error, for a
// key or input that could not be checked (then alone, unless a check
// answered), or an unconfirmed key. Error messages lack the "pkbf: " of
// the error's text.
func (v *Verdict) AppendJSON(b []byte) []byte {
	s := &v.Source
	b = append(b, `{"source":`...)
	b = text.AppendJSONString(b, s.String())
	b = append(b, `,"file":`...)
	b = text.AppendJSONString(b, s.Input)
	if s.Line > 0 {
		b = strconv.AppendInt(append(b, `,"line":`...), int64(s.Line), 10)
	}
	if s.Index > 0 {
		b = strconv.AppendInt(append(b, `,"index":`...), int64(s.Index), 10)
		b = strconv.AppendInt(append(b, `,"offset":`...), s.Offset, 10)
	}
	if s.Block > 0 {
		b = strconv.AppendInt(append(b, `,"block":`...), int64(s.Block), 10)
	}
	if s.Part != "" {
		b = text.AppendJSONString(append(b, `,"part":`...), s.Part)
	}
	k := &v.Key
	if k.SSHFingerprint != "" {
		b = text.AppendJSONString(append(b, `,"ssh_fingerprint":`...), k.SSHFingerprint)
		b = text.AppendJSONString(append(b, `,"comment":`...), k.Comment)
	}
	if v.Err != nil && !v.Probably && len(v.Findings) == 0 {
		b = text.AppendJSONString(append(b, `,"error":`...), perr.Text(v.Err))
		return append(b, "}\n"...)
	}
	if k.Fingerprint != "" || v.Err == nil && !v.weakChecked {
		b = append(append(append(b, `,"fingerprint":"`...), k.Fingerprint...), '"')
	}
	if k.OtherLabel != "" {
		b = append(append(b, `,"fingerprint_`...), strings.ReplaceAll(k.OtherLabel, " ", "_")...)
		b = append(append(append(b, `":"`...), k.OtherFingerprint...), '"')
	}
	if v.lookedUp || !v.weakChecked {
		b = strconv.AppendBool(append(b, `,"probably":`...), v.Probably)
	}
	if v.weakChecked {
		b = append(b, `,"findings":[`...)
		for i, f := range v.Findings {
			if i > 0 {
				b = append(b, ',')
			}
			b = text.AppendJSONString(append(b, `{"rule":`...), string(f.Rule))
			b = text.AppendJSONString(append(b, `,"detail":`...), f.Detail)
			b = text.AppendJSONString(append(b, `,"reason":`...), f.Reason)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if v.confirming || v.weakChecked {
		b = append(append(append(b, `,"verdict":"`...), v.Status()...), '"')
	}
	switch {
	case v.Err != nil:
		b = text.AppendJSONString(append(b, `,"error":`...), perr.Text(v.Err))
	case v.Confirmation.Err != nil:
		b = text.AppendJSONString(append(b, `,"error":`...), perr.Text(v.Confirmation.Err))
	}
	return append(b, "}\n"...)
}

// AppendText appends the verdict as pkbf check's line:
// "STATUS<TAB>FINGERPRINT<TAB>SOURCE", then for SSH keys a tab, the
// ssh-keygen fingerprint and the comment; where the input's encoding is
// not the one fingerprinted, a tab, its label and the other fingerprint;
// with findings, a tab and their rules and reasons, joined by "; ". Fields
// are separated by single tabs, for awk -F'\t' and cut; a key with no
// fingerprint (a bare modulus) has "-". With align (a terminal), the
// status is padded to the widest one in use, so that columns line up for
// the eye. A verdict with Err alone has no line: it appends nothing.
func (v *Verdict) AppendText(b []byte, align bool) []byte {
	if v.Err != nil && !v.Probably && len(v.Findings) == 0 {
		return b
	}
	status := v.Status()
	b = append(b, status...)
	if align {
		width := len(statusProbably)
		if v.confirming {
			width = len(statusFalsePositive)
		}
		for range width - len(status) {
			b = append(b, ' ')
		}
	}
	k := &v.Key
	b = append(b, '\t')
	if k.Fingerprint == "" {
		b = append(b, '-')
	}
	b = append(append(b, k.Fingerprint...), '\t')
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
	if len(v.Findings) > 0 {
		b = v.appendFindings(append(b, '\t'))
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
