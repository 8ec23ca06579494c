package keys

import (
	"bytes"
	"encoding/base64"
	"strings"
)

// rfc4716SPKI reads an RFC 4716 public key block: the BEGIN line, headers
// ("Tag: value", continued by a final backslash), base64 of the key blob,
// the END line.
func rfc4716SPKI(block []byte) ([]byte, error) {
	blob, _, err := rfc4716Blob(block)
	if err != nil {
		return nil, err
	}
	return sshBlobSPKI(blob)
}

// rfc4716Blob returns the key blob of an RFC 4716 block and its Comment
// header, unquoted.
func rfc4716Blob(block []byte) (blob []byte, comment string, err error) {
	var encoded []byte
	continued, inComment := false, false
	for line := range bytes.Lines(block) {
		line = bytes.TrimSpace(line)
		switch {
		case bytes.HasPrefix(line, []byte("---- ")):
		case continued || bytes.IndexByte(line, ':') >= 0:
			if value, ok := bytes.CutPrefix(line, []byte("Comment:")); ok || continued && inComment {
				inComment = true
				comment += string(bytes.TrimSuffix(bytes.TrimSpace(value), []byte(`\`)))
				if !ok {
					comment += string(bytes.TrimSuffix(line, []byte(`\`)))
				}
			} else {
				inComment = false
			}
			continued = bytes.HasSuffix(line, []byte(`\`))
		default:
			encoded = append(encoded, line...)
		}
	}
	blob, err = base64.StdEncoding.DecodeString(string(encoded))
	if err != nil || len(blob) == 0 {
		return nil, "", keyErrorf("RFC 4716 public key is not valid base64")
	}
	return blob, strings.Trim(comment, `"`), nil
}
