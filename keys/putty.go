package keys

import (
	"bytes"
	"encoding/base64"
	"strconv"
)

// puttySPKI reads the public half of a PuTTY private key file (.ppk,
// versions 2 and 3), which is stored in clear even when the private half is
// encrypted: "Public-Lines: N" and N lines of base64 of the key blob.
func puttySPKI(block []byte) ([]byte, error) {
	blob, _, err := puttyBlob(block)
	if err != nil {
		return nil, err
	}
	return sshBlobSPKI(blob)
}

// puttyBlob returns the public key blob of a PuTTY key file and its
// Comment.
func puttyBlob(block []byte) (blob []byte, comment string, err error) {
	lines := bytes.Split(block, []byte("\n"))
	typ, _, _ := bytes.Cut(bytes.TrimPrefix(lines[0], []byte(puttyMagic)), []byte(":"))
	if v := string(typ); v != "2" && v != "3" {
		return nil, "", unsupportedErrorf("PuTTY key file version %q is not supported (2 and 3 are)", shorten(v))
	}
	for i, line := range lines {
		if c, ok := bytes.CutPrefix(line, []byte("Comment:")); ok {
			comment = string(bytes.TrimSpace(c))
		}
		count, ok := bytes.CutPrefix(line, []byte("Public-Lines:"))
		if !ok {
			continue
		}
		n, err := strconv.Atoi(string(bytes.TrimSpace(count)))
		if err != nil || n < 1 || i+1+n > len(lines) {
			return nil, "", keyErrorf("PuTTY key file has a bad Public-Lines count %q", shorten(string(count)))
		}
		blob, err := base64.StdEncoding.DecodeString(string(bytes.Join(lines[i+1:i+1+n], nil)))
		if err != nil {
			return nil, "", keyErrorf("PuTTY key file's public key is not valid base64")
		}
		return blob, comment, nil
	}
	return nil, "", keyErrorf("PuTTY key file has no Public-Lines")
}
