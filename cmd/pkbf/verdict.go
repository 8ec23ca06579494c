package main

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/pkbf/pkbf/keys"
)

// check's output: the verdict of each key, as text or JSON.

// verdict is the word for an item in check's output.
func (it *item) verdict(confirm bool) string {
	switch {
	case !it.probably:
		return verdictNo
	case !confirm:
		return verdictProbably
	case it.confirmErr != nil:
		return verdictUnconfirmed
	case it.pwned:
		return verdictCompromised
	}
	return verdictFalsePositive
}

func fingerprint(spki []byte) [2 * sha256.Size]byte {
	var out [2 * sha256.Size]byte
	sum := sha256.Sum256(spki)
	hex.Encode(out[:], sum[:])
	return out
}

// appendTextVerdict appends "VERDICT<TAB>FINGERPRINT<TAB>SOURCE", then for
// SSH keys a tab, the ssh-keygen fingerprint and the comment, and where
// the input's encoding is not the canonical one, a tab and the other
// fingerprint (see fingerprints). Fields are separated by single tabs,
// for awk -F'\t' and cut; only on a terminal (align) is the verdict
// padded to the widest one in use, so that columns line up for the eye.
func appendTextVerdict(b []byte, it *item, confirm, align bool) []byte {
	v := it.verdict(confirm)
	fp, other, label := it.fingerprints()
	b = append(b, v...)
	if align {
		width := len(verdictProbably)
		if confirm {
			width = len(verdictFalsePositive)
		}
		for range width - len(v) {
			b = append(b, ' ')
		}
	}
	b = append(b, '\t')
	b = append(b, fp[:]...)
	b = append(b, '\t')
	b = it.appendSource(b)
	if it.sshFP != "" {
		b = append(append(b, '\t'), it.sshFP...)
		if it.comment != "" {
			b = append(append(b, ' '), strings.Map(noTabs, it.comment)...)
		}
	}
	if label != "" {
		b = append(append(append(b, '\t'), label...), ": "...)
		b = append(b, other[:]...)
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

func appendJSONSource(b []byte, it *item) []byte {
	b = append(b, `{"source":`...)
	b = appendJSONString(b, it.source())
	b = append(b, `,"file":`...)
	b = appendJSONString(b, it.input)
	if it.key.Line > 0 {
		b = append(b, `,"line":`...)
		b = strconv.AppendInt(b, int64(it.key.Line), 10)
	}
	if it.key.Index > 0 {
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(it.key.Index), 10)
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, it.key.Offset, 10)
	}
	if it.key.Block > 0 {
		b = append(b, `,"block":`...)
		b = strconv.AppendInt(b, int64(it.key.Block), 10)
	}
	if it.key.Part != "" {
		b = append(b, `,"part":`...)
		b = appendJSONString(b, it.key.Part)
	}
	if it.sshFP != "" {
		b = append(b, `,"ssh_fingerprint":`...)
		b = appendJSONString(b, it.sshFP)
		b = append(b, `,"comment":`...)
		b = appendJSONString(b, it.comment)
	}
	return b
}

func appendJSONVerdict(b []byte, it *item, confirm bool) []byte {
	fp, other, label := it.fingerprints()
	b = appendJSONSource(b, it)
	b = append(b, `,"fingerprint":"`...)
	b = append(b, fp[:]...)
	if label != "" {
		b = append(b, `","fingerprint_`...)
		b = append(b, strings.ReplaceAll(label, " ", "_")...)
		b = append(b, `":"`...)
		b = append(b, other[:]...)
	}
	b = append(b, `","probably":`...)
	b = strconv.AppendBool(b, it.probably)
	if confirm {
		b = append(b, `,"verdict":"`...)
		b = append(b, it.verdict(true)...)
		b = append(b, '"')
		if it.confirmErr != nil {
			b = append(b, `,"error":`...)
			b = appendJSONString(b, message(it.confirmErr))
		}
	}
	return append(b, "}\n"...)
}

func appendJSONError(b []byte, it *item, hint string) []byte {
	b = appendJSONSource(b, it)
	b = append(b, `,"error":`...)
	b = appendJSONString(b, message(it.err)+hint)
	return append(b, "}\n"...)
}

// fingerprints returns the fingerprint check reports for the item's key,
// and where the input's encoding differs from the canonical one, the other
// fingerprint and its label. The reported one is the canonical form's
// (what the reference implementation stores for a key, and pwnedkeys
// fingerprints), and the other "as given"; except for a key with explicit
// EC parameters (a certificate's SPKI, which the reference hashes as it
// stands), where openssl (x509 -pubkey, pkey -pubin) keeps the parameters
// and computes the fingerprint of the bytes given: that is reported, and
// the canonical one is "named curve".
//
// The workers compute them (see lookupItems), so that the hashing is
// spread over the cores instead of done where the output is written.
func (it *item) fingerprints() (fp, other [2 * sha256.Size]byte, label string) {
	if it.fp.set {
		return it.fp.fp, it.fp.other, it.fp.label
	}
	if sameBytes(it.spki, it.canonical) {
		return fingerprint(it.canonical), other, ""
	}
	if keys.ExplicitCurve(it.spki) {
		return fingerprint(it.spki), fingerprint(it.canonical), "named curve"
	}
	return fingerprint(it.canonical), fingerprint(it.spki), "as given"
}
