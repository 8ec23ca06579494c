package pkbf

import (
	"strconv"
	"strings"

	"github.com/pkbf/pkbf/internal/jsontext"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/internal/source"
)

// A Verdict is what [Filter.Check] found of one key, or of an input it
// could not read, with where in its input the key was found.
type Verdict struct {
	// Input is the name of the input the key came from ([Input].Name).
	Input string
	// Where the key's object starts in the input, as [keys.Key] has it:
	// its 1-based Index among the input's objects, its Line (0 in DER
	// input), its PEM Block (or 0), its byte Offset, and the Part of a
	// container it is ("certificate 2"). All are zero for an input that
	// could not be read.
	Index, Line, Block int
	Offset             int64
	Part               string

	// Err is why the key, or the input, could not be checked; the fields
	// below are then zero. It wraps [keys.ErrInvalidKey] (and
	// [keys.ErrUnsupportedKey], [keys.ErrEncryptedKey] or
	// [keys.ErrNoPassphrase], which say why), the input's open or read
	// error, or [ErrFileChanged]: the filter's file failed, and nothing
	// after this verdict could be answered.
	Err error

	// Probably is true when the filter probably holds the key, under any
	// encoding it may hold it in (as [Filter.Contains] answers).
	Probably bool
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

	// With CheckOptions.Confirm, for a key the filter probably holds:
	// Pwned when the confirmation verified it, ConfirmErr when it gave no
	// usable answer.
	Pwned      bool
	ConfirmErr error

	// Added is, for a verdict of [Writable.AddKeys], how many of the key's
	// encodings were new to the filter (0: it held the key already).
	Added int

	confirmed bool // CheckOptions.Confirm was set
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
// CheckOptions.Confirm, "compromised", "false-positive" or "unconfirmed"
// for a key the filter probably holds; "error" when Err is set.
func (v *Verdict) Status() string {
	switch {
	case v.Err != nil:
		return statusError
	case !v.Probably:
		return statusNo
	case !v.confirmed:
		return statusProbably
	case v.ConfirmErr != nil:
		return statusUnconfirmed
	case v.Pwned:
		return statusCompromised
	}
	return statusFalsePositive
}

// Source says where the key came from: "INPUT: block 2 (line 31)",
// "INPUT: line 7", "INPUT: object 3 (byte 2048), certificate 2", or the
// input's name alone for an input that could not be read.
func (v *Verdict) Source() string { return string(v.AppendSource(nil)) }

// AppendSource appends Source to b, without making a string.
func (v *Verdict) AppendSource(b []byte) []byte {
	b = append(b, v.Input...)
	if v.Index == 0 {
		return b
	}
	return source.Append(append(b, ": "...), v.Block, v.Line, v.Index, v.Offset, v.Part)
}

// AppendJSON appends the verdict as one JSON object and a newline: the
// form pkbf check --json, pkbf serve and the Beam pipelines write. Its
// fields: source, file, line, index, offset, block, part, ssh_fingerprint
// and comment where they apply; then fingerprint, fingerprint_as_given or
// fingerprint_named_curve, and probably; with CheckOptions.Confirm,
// verdict (Status) and, for an unconfirmed key, error; or, for a key or
// input that could not be checked, error alone. Error messages lack the
// "pkbf: " of the error's text.
func (v *Verdict) AppendJSON(b []byte) []byte {
	b = append(b, `{"source":`...)
	b = jsontext.AppendString(b, v.Source())
	b = append(b, `,"file":`...)
	b = jsontext.AppendString(b, v.Input)
	if v.Line > 0 {
		b = strconv.AppendInt(append(b, `,"line":`...), int64(v.Line), 10)
	}
	if v.Index > 0 {
		b = strconv.AppendInt(append(b, `,"index":`...), int64(v.Index), 10)
		b = strconv.AppendInt(append(b, `,"offset":`...), v.Offset, 10)
	}
	if v.Block > 0 {
		b = strconv.AppendInt(append(b, `,"block":`...), int64(v.Block), 10)
	}
	if v.Part != "" {
		b = jsontext.AppendString(append(b, `,"part":`...), v.Part)
	}
	if v.SSHFingerprint != "" {
		b = jsontext.AppendString(append(b, `,"ssh_fingerprint":`...), v.SSHFingerprint)
		b = jsontext.AppendString(append(b, `,"comment":`...), v.Comment)
	}
	if v.Err != nil {
		b = jsontext.AppendString(append(b, `,"error":`...), perr.Text(v.Err))
		return append(b, "}\n"...)
	}
	b = append(append(append(b, `,"fingerprint":"`...), v.Fingerprint...), '"')
	if v.OtherLabel != "" {
		b = append(append(b, `,"fingerprint_`...), strings.ReplaceAll(v.OtherLabel, " ", "_")...)
		b = append(append(append(b, `":"`...), v.OtherFingerprint...), '"')
	}
	b = strconv.AppendBool(append(b, `,"probably":`...), v.Probably)
	if v.confirmed {
		b = append(append(append(b, `,"verdict":"`...), v.Status()...), '"')
		if v.ConfirmErr != nil {
			b = jsontext.AppendString(append(b, `,"error":`...), perr.Text(v.ConfirmErr))
		}
	}
	return append(b, "}\n"...)
}
