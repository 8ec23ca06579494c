package keys

import (
	"bytes"
	"encoding/base64"
	"encoding/pem"
	"strings"
)

// decodePEMBlock decodes a block framed by the scanner: a BEGIN line, lines
// of base64 and an END line of the same type. It decodes each line straight
// into the result, so it takes the common shape only (no headers, every
// line but the last a multiple of four characters, padding only at the
// end) and reports false for anything else, which encoding/pem then reads.
func decodePEMBlock(raw []byte) (typ, der []byte, ok bool) {
	first, rest, _ := bytes.Cut(raw, []byte("\n"))
	body, last, ok := cutLastLine(rest)
	typ, ok1 := bytes.CutPrefix(bytes.TrimSpace(first), []byte("-----BEGIN "))
	typ, ok2 := bytes.CutSuffix(typ, []byte("-----"))
	endTyp, ok3 := bytes.CutPrefix(bytes.TrimSpace(last), []byte("-----END "))
	endTyp, ok4 := bytes.CutSuffix(endTyp, []byte("-----"))
	if !ok || !ok1 || !ok2 || !ok3 || !ok4 || !bytes.Equal(typ, endTyp) {
		return nil, nil, false
	}
	der = make([]byte, base64.StdEncoding.DecodedLen(len(body)))
	n := 0
	for len(body) > 0 {
		var line []byte
		line, body, _ = bytes.Cut(body, []byte("\n"))
		line = bytes.TrimSpace(line)
		if len(body) > 0 && (len(line)%4 != 0 || bytes.IndexByte(line, '=') >= 0) {
			return nil, nil, false // joined lines, or padding before the end
		}
		m, err := base64.StdEncoding.Decode(der[n:], line)
		if err != nil {
			return nil, nil, false
		}
		n += m
	}
	return typ, der[:n], true
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
		block, after := pem.Decode(rest)
		if block == nil {
			if blocks == 0 {
				return nil, keyErrorf("PEM block %q is incomplete or malformed: no matching END line or bad base64", pemType(rest))
			}
			if bytes.Contains(rest, []byte("-----BEGIN ")) {
				return nil, keyErrorf("PEM block %q after block %d is incomplete or malformed", pemType(rest), blocks)
			}
			break
		}
		rest = after
		blocks++
		if block.Type == "EC PARAMETERS" {
			ecCurve = block.Bytes
			continue
		}
		if found != nil {
			return nil, keyErrorf("more than one key in PEM input (block %d is %q); read bundles with Scanner", blocks, block.Type)
		}
		spki, err := pemBlockSPKI(block, ecCurve)
		if err != nil {
			return nil, err
		}
		found = spki
	}
	if found == nil {
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
	if len(name) > 40 {
		name = append(name[:40:40], "..."...)
	}
	return string(name)
}

// pemBlockSPKI returns the SPKI of one decoded PEM block. ecParams is the
// content of a preceding "EC PARAMETERS" block, or nil.
func pemBlockSPKI(block *pem.Block, ecParams []byte) ([]byte, error) {
	if strings.Contains(block.Headers["Proc-Type"], "ENCRYPTED") {
		return nil, encryptedErrorf("%s is encrypted (Proc-Type %s): its public key cannot be read without the passphrase", block.Type, block.Headers["Proc-Type"])
	}
	return typedSPKI(block.Type, block.Bytes, ecParams)
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
		return nil, encryptedErrorf("ENCRYPTED PRIVATE KEY is an encrypted PKCS#8 key: its public key cannot be read without the passphrase")
	case "EC PRIVATE KEY":
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
