package pkbfssh

import (
	"bytes"
	"iter"
	"strings"
)

// Line is one line of an authorized_keys file and the key sshd finds on
// it.
type Line struct {
	// Num is the line's number, from 1, as sshd counts lines: each ends
	// at a line feed, and nowhere else.
	Num int
	// Text is the line as it is in the file, without its line feed.
	Text []byte
	// Key is the key sshd finds on the line, or nil.
	Key *Key
	// Comment is the text after the key, if any.
	Comment string
	// CertAuthority is set on a line with a key whose options hold
	// cert-authority: sshd accepts by it every certificate its key (a CA
	// key) signed, and never the key itself.
	CertAuthority bool
	// Held is, on a line [FilterLines] left out as compromised, the key
	// the filter probably holds (see [Key.CompromisedKey]): Key, or a
	// certificate's CA key Key.CA. Otherwise nil.
	Held *Key
	why  string // why Held is refused: "probably compromised", or more
	// Err is nil for a blank or comment line and for a line with a key;
	// otherwise it says why sshd would find no key on it (and wraps
	// ErrNoKey).
	Err error
}

// lines returns the lines of an authorized_keys file, each read as
// ParseLine reads it. A last line without a line feed is a line.
func lines(data []byte) iter.Seq[Line] {
	return func(yield func(Line) bool) {
		for n := 1; len(data) > 0; n++ {
			text, rest, _ := bytes.Cut(data, []byte("\n"))
			data = rest
			l := Line{Num: n, Text: text}
			var opts []byte
			l.Key, l.Comment, opts, l.Err = parseLine(text)
			l.CertAuthority = l.Key != nil && certAuthority(opts)
			if !yield(l) {
				return
			}
		}
	}
}

// ParseLine reads one authorized_keys line, without its line feed, as
// sshd's auth_check_authkeys_file and sshkey_read do: the line ends at a
// NUL byte; a line of blanks or a comment (#) holds no key and gives nil
// and no error; otherwise the key is the line's first field and what
// follows, or, failing that, follows the options field (quoted strings may
// hold blanks, and \" does not end one). Errors wrap ErrNoKey and say why
// the line holds no key sshd could read.
func ParseLine(line []byte) (k *Key, comment string, err error) {
	k, comment, _, err = parseLine(line)
	return k, comment, err
}

// parseLine is ParseLine, and returns the options field the key follows
// (nil when the key starts the line).
func parseLine(line []byte) (k *Key, comment string, opts []byte, err error) {
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	cp := bytes.TrimLeft(line, " \t")
	if len(cp) == 0 || cp[0] == '#' || allSpace(cp) {
		return nil, "", nil, nil
	}
	k, comment, err = readKey(cp)
	if err == nil {
		return k, comment, nil, nil
	}
	rest, ok := advancePastOptions(cp)
	if !ok {
		return nil, "", nil, noKeyf("options have an unterminated quote")
	}
	k, comment, err2 := readKey(bytes.TrimLeft(rest, " \t"))
	if err2 != nil {
		if lineType(string(firstField(cp))) != nil {
			return nil, "", nil, err // the line starts with a key type: say what is wrong after it
		}
		return nil, "", nil, err2
	}
	return k, comment, cp[:len(cp)-len(rest)], nil
}

// certAuthority reports whether sshd's sshauthopt_parse (OpenSSH 9.2's
// auth-options.c) could read cert-authority in an options field: options
// are separated by commas outside double quotes (\" opens or closes none),
// and a name is matched as a prefix, whatever its case. A name with more
// after it, which sshd refuses with the whole line, counts too: in doubt,
// a line is a cert-authority line.
func certAuthority(opts []byte) bool {
	const name = "cert-authority"
	quoted, start := false, 0
	for i := 0; i <= len(opts); i++ {
		switch {
		case i == len(opts) || !quoted && opts[i] == ',':
			if o := opts[start:i]; len(o) >= len(name) && strings.EqualFold(string(o[:len(name)]), name) {
				return true
			}
			start = i + 1
		case opts[i] == '\\' && i+1 < len(opts) && opts[i+1] == '"':
			i++
		case opts[i] == '"':
			quoted = !quoted
		}
	}
	return false
}

// readKey reads a key at the start of s as sshkey_read does: a type name,
// blanks, the base64 blob up to the next blank (other white space in it
// is skipped), and returns the comment after it.
func readKey(s []byte) (*Key, string, error) {
	sp := bytes.IndexAny(s, " \t")
	if sp < 0 {
		return nil, "", noKeyf("no blank after the first field, so no key type")
	}
	t := lineType(string(s[:sp]))
	if t == nil {
		return nil, "", noKeyf("no OpenSSH key type (such as ssh-ed25519) starts the line or follows its options")
	}
	cp := bytes.TrimLeft(s[sp:], " \t")
	if len(cp) == 0 {
		return nil, "", noKeyf("no key after the type %s", t.name)
	}
	end := bytes.IndexAny(cp, " \t")
	if end < 0 {
		end = len(cp)
	}
	blob, err := decodeBase64(cp[:end])
	if err != nil {
		return nil, "", err
	}
	k, kt, err := parseBlob(blob, true, true)
	if err != nil {
		return nil, "", err
	}
	if !t.same(kt) {
		return nil, "", noKeyf("line says %s but its key is %s", t.name, kt.name)
	}
	return k, string(bytes.TrimSpace(cp[end:])), nil
}

// advancePastOptions skips an options field as sshd does: up to the first
// blank outside double quotes, where \" never opens or closes a quote. It
// reports false for an unterminated quote.
func advancePastOptions(s []byte) ([]byte, bool) {
	quoted := false
	i := 0
	for ; i < len(s) && (quoted || s[i] != ' ' && s[i] != '\t'); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '"':
			i++
		case s[i] == '"':
			quoted = !quoted
		}
	}
	return s[i:], !(i == len(s) && quoted)
}

func allSpace(b []byte) bool {
	for _, c := range b {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

// firstField returns s up to its first blank.
func firstField(s []byte) []byte {
	if i := bytes.IndexAny(s, " \t"); i >= 0 {
		return s[:i]
	}
	return s
}
