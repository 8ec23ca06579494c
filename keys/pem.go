package keys

import (
	"bytes"
	"encoding/base64"
	"strings"
)

// pemBlock is one decoded PEM block.
type pemBlock struct {
	typ      string
	procType string // the RFC 1421 Proc-Type header ("4,ENCRYPTED"), or ""
	der      []byte
}

// decodePEMBlock decodes one PEM block (RFC 7468, with RFC 1421's headers):
// a BEGIN line, optional "Name: value" header lines and a blank line,
// lines of base64 and an END line of the same type. Lines may be indented
// and of any length, with spaces inside; padding may come only at the
// end. It is pkbf's one PEM decoder: the scanner frames blocks and SPKI
// finds them with nextPEMBlock, and both decode here. It reports false
// for anything else.
func decodePEMBlock(raw []byte) (block pemBlock, ok bool) {
	return decodePEMBlockInto(nil, raw)
}

// decodePEMBlockInto is decodePEMBlock decoding into dst when it has room
// (its length does not matter), else into a new buffer.
func decodePEMBlockInto(dst, raw []byte) (block pemBlock, ok bool) {
	first, rest, _ := bytes.Cut(raw, []byte("\n"))
	body, last, ok := cutLastLine(rest)
	typ, ok1 := bytes.CutPrefix(bytes.TrimSpace(first), []byte("-----BEGIN "))
	typ, ok2 := bytes.CutSuffix(typ, []byte("-----"))
	endTyp, ok3 := bytes.CutPrefix(bytes.TrimSpace(last), []byte("-----END "))
	endTyp, ok4 := bytes.CutSuffix(endTyp, []byte("-----"))
	if !ok || !ok1 || !ok2 || !ok3 || !ok4 || !bytes.Equal(typ, endTyp) {
		return pemBlock{}, false
	}
	block.typ = typeName(typ)
	if bytes.IndexByte(body, ':') >= 0 {
		if body = block.readHeaders(body); len(body) == 0 {
			return pemBlock{}, false // headers, then the END line: no blank line, no data
		}
	}
	// Most blocks have whole 4-character groups of base64 on every line,
	// which decode where they are; the rest are gathered first.
	if need := base64.StdEncoding.DecodedLen(len(body)); cap(dst) >= need {
		block.der = dst[:need]
	} else {
		block.der = make([]byte, need)
	}
	n, ok := decodeLines(block.der, body)
	if !ok {
		gathered := make([]byte, 0, len(body))
		for _, c := range body {
			if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
				gathered = append(gathered, c)
			}
		}
		var err error
		if n, err = base64.StdEncoding.Decode(block.der, gathered); err != nil {
			return pemBlock{}, false
		}
	}
	block.der = block.der[:n]
	return block, true
}

// decodeLines decodes base64 line by line into dst, when every line but
// the last holds whole 4-character groups without padding, and reports
// false if one does not.
func decodeLines(dst, body []byte) (n int, ok bool) {
	for len(body) > 0 {
		var line []byte
		line, body, _ = bytes.Cut(body, []byte("\n"))
		line = bytes.TrimSpace(line)
		if len(body) > 0 && (len(line)%4 != 0 || bytes.IndexByte(line, '=') >= 0) {
			return 0, false
		}
		m, err := base64.StdEncoding.Decode(dst[n:], line)
		if err != nil {
			return 0, false
		}
		n += m
	}
	return n, true
}

// readHeaders reads the RFC 1421 header lines at the start of body
// ("Proc-Type: 4,ENCRYPTED", "DEK-Info: ..."): the lines that hold a colon,
// as encoding/pem takes them, keeping Proc-Type. It returns the body after
// them; the blank line that should follow is white space to the base64.
func (b *pemBlock) readHeaders(body []byte) []byte {
	for {
		line, rest, _ := bytes.Cut(body, []byte("\n"))
		name, value, ok := bytes.Cut(bytes.TrimSpace(line), []byte(":"))
		if !ok {
			return body
		}
		if string(bytes.TrimSpace(name)) == "Proc-Type" {
			b.procType = string(bytes.TrimSpace(value))
		}
		body = rest
	}
}

// cutLastLine splits "a\nb\nEND\n" into "a\nb\n" and "END".
func cutLastLine(b []byte) (before, last []byte, ok bool) {
	b = bytes.TrimRight(b, "\r\n")
	i := bytes.LastIndexByte(b, '\n')
	if i < 0 {
		return nil, b, len(b) > 0
	}
	return b[:i+1], b[i+1:], true
}

// nextPEMBlock finds the first PEM block in text, from a line that starts
// (after white space) with "-----BEGIN " to the next line that starts with
// "-----END ", and returns it and the text after it. found is false when
// there is no BEGIN line; ok is false when a BEGIN line has no END line.
func nextPEMBlock(text []byte) (raw, rest []byte, found, ok bool) {
	start := -1
	for i := 0; i < len(text); {
		line, _, _ := bytes.Cut(text[i:], []byte("\n"))
		next := i + len(line) + 1
		trimmed := bytes.TrimSpace(line)
		switch {
		case start < 0 && bytes.HasPrefix(trimmed, []byte("-----BEGIN ")):
			start = i
		case start >= 0 && bytes.HasPrefix(trimmed, []byte("-----END ")):
			end := min(next, len(text))
			return text[start:end], text[end:], true, true
		}
		i = next
	}
	return nil, nil, start >= 0, false
}

// pemSPKI reads one key from PEM text: an optional "EC PARAMETERS" block, one
// key block, and nothing but text outside blocks.
func pemSPKI(text []byte) ([]byte, error) {
	var (
		found   []byte
		blocks  int
		ecCurve []byte // the DER OID of a preceding "EC PARAMETERS" block
		rest    = text
	)
	for {
		raw, after, present, complete := nextPEMBlock(rest)
		if !present {
			break
		}
		if complete && pemType(raw) == pgpArmorType {
			// Armor, not PEM: its checksum line is no base64.
			if found != nil {
				return nil, keyErrorf("more than one key in PEM input (block %d is %q); read bundles with Scanner", blocks+1, pgpArmorType)
			}
			spki, err := singleSPKI(openpgpParts(raw))
			if err != nil {
				return nil, err
			}
			rest, found = after, spki
			blocks++
			continue
		}
		block, ok := decodePEMBlock(raw)
		if !complete || !ok {
			if blocks == 0 {
				return nil, keyErrorf("PEM block %q is incomplete or malformed: no matching END line or bad base64", pemType(rest))
			}
			return nil, keyErrorf("PEM block %q after block %d is incomplete or malformed", pemType(rest), blocks)
		}
		rest = after
		blocks++
		if block.typ == "EC PARAMETERS" {
			ecCurve = block.der
			continue
		}
		if found != nil {
			return nil, keyErrorf("more than one key in PEM input (block %d is %q); read bundles with Scanner", blocks, block.typ)
		}
		spki, err := pemBlockSPKI(block, ecCurve)
		if err != nil {
			return nil, err
		}
		found = spki
	}
	switch {
	case blocks == 0:
		return nil, keyErrorf("PEM block %q is incomplete or malformed: no matching END line or bad base64", pemType(rest))
	case found == nil:
		return nil, keyErrorf("PEM input has only EC PARAMETERS, no key")
	}
	return found, nil
}

// pemType returns the type named on the first BEGIN line of text, for errors.
func pemType(text []byte) string {
	_, after, ok := bytes.Cut(text, []byte("-----BEGIN "))
	if !ok {
		return ""
	}
	name, _, _ := bytes.Cut(after, []byte("-----"))
	name, _, _ = bytes.Cut(name, []byte("\n")) // a BEGIN line without its closing dashes
	name = bytes.TrimSpace(name)
	if len(name) > 40 {
		name = append(name[:40:40], "..."...)
	}
	return typeName(name)
}

// typeName returns name as a string, without allocating for the types of
// PEM blocks that hold keys: it runs twice for every block.
func typeName(name []byte) string {
	if t, ok := pemTypes[string(name)]; ok {
		return t
	}
	return string(name)
}

var pemTypes = func() map[string]string {
	m := map[string]string{}
	for _, t := range []string{"CERTIFICATE", "PUBLIC KEY", "PRIVATE KEY", "RSA PUBLIC KEY", "RSA PRIVATE KEY",
		"EC PRIVATE KEY", "EC PARAMETERS", "DSA PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "CERTIFICATE REQUEST",
		"NEW CERTIFICATE REQUEST", "TRUSTED CERTIFICATE", "X509 CERTIFICATE", "PKCS7", "CMS", "OPENSSH PRIVATE KEY",
		"SSH2 PUBLIC KEY", "X509 CRL", pgpArmorType} {
		m[t] = t
	}
	return m
}()

// pemBlockSPKI returns the SPKI of one decoded PEM block. ecParams is the
// content of a preceding "EC PARAMETERS" block, or nil.
func pemBlockSPKI(block pemBlock, ecParams []byte) ([]byte, error) {
	if strings.Contains(block.procType, "ENCRYPTED") {
		return nil, encryptedErrorf("%s is encrypted (Proc-Type %s): pkbf decrypts no private keys but PKCS#12 files: check its public key or certificate instead", block.typ, block.procType)
	}
	return typedSPKI(block.typ, block.der, ecParams)
}

// typedSPKI returns the SPKI of the DER contents b of a PEM block of type typ.
func typedSPKI(typ string, b []byte, ecParams []byte) ([]byte, error) {
	switch typ {
	case "PUBLIC KEY":
		return checkedSPKI(b)
	case "RSA PUBLIC KEY":
		return pkcs1PublicSPKI(b)
	case "RSA PRIVATE KEY":
		return pkcs1PrivateSPKI(b)
	case "PRIVATE KEY":
		return pkcs8SPKI(b)
	case "ENCRYPTED PRIVATE KEY":
		return nil, encryptedErrorf("ENCRYPTED PRIVATE KEY is an encrypted PKCS#8 key: pkbf decrypts no private keys but PKCS#12 files: check its public key or certificate instead")
	case "EC PRIVATE KEY", "SM2 PRIVATE KEY": // OpenSSL labels SM2 keys so
		return sec1SPKI(b, ecParams)
	case "OPENSSH PRIVATE KEY":
		return opensshPrivateSPKI(b)
	case "CERTIFICATE", "X509 CERTIFICATE":
		return certificateSPKI(b)
	case "TRUSTED CERTIFICATE":
		// OpenSSL's trusted form: the certificate, then its trust settings.
		return trustedCertificateSPKI(b)
	case "CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST":
		return csrSPKI(b)
	case "DSA PRIVATE KEY":
		return dsaPrivateSPKI(b)
	case pkcs7PEMTypes[0], pkcs7PEMTypes[1], pkcs7PEMTypes[2]:
		return singleSPKI(pkcs7Parts(b))
	case "EC PARAMETERS", "DSA PARAMETERS", "DH PARAMETERS", "X9.42 DH PARAMETERS":
		return nil, keyErrorf("%s holds domain parameters, not a key", typ)
	case "X509 CRL":
		return nil, keyErrorf("X509 CRL is a certificate revocation list: it holds no public key")
	case "SSH2 ENCRYPTED PRIVATE KEY":
		return nil, unsupportedErrorf("SSH2 ENCRYPTED PRIVATE KEY (ssh.com format) is not supported: convert it with ssh-keygen -i")
	}
	return nil, keyErrorf("PEM block type %q is not a key, certificate or certificate request", typ)
}
