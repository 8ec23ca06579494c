package keycheck

import (
	"strconv"
	"strings"

	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/internal/text"
)

// A Verdict is what a [Checker] found of one key, or of an input it could
// not read: where the key was, which key it is, the answer, and what
// Options.Confirm said of it.
type Verdict struct {
	// Source is where the key's object starts in its input; zero from
	// [Checker.CheckKey], which has no input.
	Source Source
	// Key names the key. [Checker.CheckKey] names only the keys the filter
	// probably holds, and [Options].FingerprintHitsOnly leaves the
	// fingerprints of the others empty.
	Key Key

	// Probably is true when the filter probably holds the key, under any
	// encoding it may hold it in (as [Checker.Contains] answers).
	Probably bool
	// Err is why the key, or its input, could not be checked (or, from
	// AddKeys, added); Probably is then false. It wraps [keys.ErrInvalidKey] (and
	// [keys.ErrUnsupportedKey], [keys.ErrEncryptedKey] or
	// [keys.ErrNoPassphrase], which say why), the input's open or read
	// error, or [pkbf.ErrFileChanged]: the filter's file failed, and
	// nothing after this verdict could be answered.
	Err error
	// (Checks run beside the filter, such as the weak-key checks, belong
	// here: their findings are answers too.)

	// Confirmation is what Options.Confirm said of a key the filter
	// probably holds.
	Confirmation Confirmation

	confirming bool // Options.Confirm was set
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
	statusError         = "error"
)

// Status is the verdict in a word: "no" or "probably"; with
// Options.Confirm, "compromised", "false-positive" or "unconfirmed" for a
// key the filter probably holds; "error" when Err is set.
func (v *Verdict) Status() string {
	switch {
	case v.Err != nil:
		return statusError
	case !v.Probably:
		return statusNo
	case !v.confirming:
		return statusProbably
	case v.Confirmation.Err != nil:
		return statusUnconfirmed
	case v.Confirmation.Pwned:
		return statusCompromised
	}
	return statusFalsePositive
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
// fingerprint_named_curve, and probably; with Options.Confirm, verdict
// (Status) and, for an unconfirmed key, error; or, for a key or input
// that could not be checked, error alone. Error messages lack the
// "pkbf: " of the error's text.
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
	if v.Err != nil {
		b = text.AppendJSONString(append(b, `,"error":`...), perr.Text(v.Err))
		return append(b, "}\n"...)
	}
	b = append(append(append(b, `,"fingerprint":"`...), k.Fingerprint...), '"')
	if k.OtherLabel != "" {
		b = append(append(b, `,"fingerprint_`...), strings.ReplaceAll(k.OtherLabel, " ", "_")...)
		b = append(append(append(b, `":"`...), k.OtherFingerprint...), '"')
	}
	b = strconv.AppendBool(append(b, `,"probably":`...), v.Probably)
	if v.confirming {
		b = append(append(append(b, `,"verdict":"`...), v.Status()...), '"')
		if v.Confirmation.Err != nil {
			b = text.AppendJSONString(append(b, `,"error":`...), perr.Text(v.Confirmation.Err))
		}
	}
	return append(b, "}\n"...)
}
