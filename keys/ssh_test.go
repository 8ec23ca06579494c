package keys

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cloudflare/circl/sign"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"
	"github.com/cloudflare/circl/sign/mldsa/mldsa65"
	"github.com/cloudflare/circl/sign/mldsa/mldsa87"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pkbf/pkbf/internal/der"
)

// sshTestKeys returns an OpenSSH public key of each type x/crypto/ssh can
// make, and a certificate for one of them.
func sshTestKeys(t testing.TB) []ssh.PublicKey {
	var pubs []ssh.PublicKey
	add := func(pub any) {
		sp, err := ssh.NewPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		pubs = append(pubs, sp)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	add(&rsaKey.PublicKey)
	for _, c := range []elliptic.Curve{elliptic.P256(), elliptic.P384(), elliptic.P521()} {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		add(&k.PublicKey)
	}
	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	add(edPub)
	signer, err := ssh.NewSignerFromKey(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	cert := &ssh.Certificate{Key: pubs[1], CertType: ssh.UserCert, ValidPrincipals: []string{"alice"}, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, signer); err != nil {
		t.Fatal(err)
	}
	return append(pubs, cert)
}

// Lines of every form OpenSSH writes give the SPKI, fingerprint and comment
// that x/crypto/ssh, an independent reading, gives.
func TestSSHLinesMatchXCryptoSSH(t *testing.T) {
	for i, pub := range sshTestKeys(t) {
		key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
		comment := fmt.Sprintf("user%d@example.com", i)
		lines := []string{
			key,
			key + " " + comment,
			`command="echo \"a b\"",no-pty ` + key + " " + comment,
			"host.example.com,10.0.0.1 " + key + " " + comment,
			"@cert-authority *.example.com " + key + " " + comment,
			knownhosts.HashHostname("host.example.com") + " " + key + " " + comment,
		}
		crypto := pub
		if cert, ok := pub.(*ssh.Certificate); ok {
			crypto = cert.Key
		}
		want, err := x509.MarshalPKIXPublicKey(crypto.(ssh.CryptoPublicKey).CryptoPublicKey())
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range lines {
			var parsed ssh.PublicKey
			var xComment string
			if p, c, _, _, err := ssh.ParseAuthorizedKey([]byte(line)); err == nil {
				parsed, xComment = p, c
			} else if _, _, p, c, _, err := ssh.ParseKnownHosts([]byte(line)); err == nil {
				parsed, xComment = p, c
			} else {
				t.Fatalf("x/crypto/ssh reads neither an authorized_keys nor a known_hosts line in %q", line)
			}
			got, err := SPKI([]byte(line))
			if err != nil {
				t.Errorf("SPKI(%q): %v", line, err)
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("SPKI(%q) = %x, x/crypto/ssh and crypto/x509 give %x", line, got, want)
			}
			k := Key{kind: kindLine, Raw: []byte(line)}
			fp, c := k.SSHFingerprint()
			if fp != ssh.FingerprintSHA256(parsed) || c != xComment {
				t.Errorf("SSHFingerprint(%q) = %q, %q; x/crypto/ssh gives %q, %q", line, fp, c, ssh.FingerprintSHA256(parsed), xComment)
			}
		}
	}
}

// SSHPublicKeySPKI reads the wire-format blob x/crypto/ssh's Marshal
// writes, certificates included, to the SPKI crypto/x509 writes; a blob
// cut short, with bytes after its fields, or of an unknown type is an
// error.
func TestSSHPublicKeySPKI(t *testing.T) {
	for _, pub := range sshTestKeys(t) {
		crypto := pub
		if cert, ok := pub.(*ssh.Certificate); ok {
			crypto = cert.Key
		}
		want, err := x509.MarshalPKIXPublicKey(crypto.(ssh.CryptoPublicKey).CryptoPublicKey())
		if err != nil {
			t.Fatal(err)
		}
		got, err := SSHPublicKeySPKI(pub.Marshal())
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("SSHPublicKeySPKI(%s blob) = %x, %v; want %x", pub.Type(), got, err, want)
		}
	}
	blob := sshTestKeys(t)[0].Marshal()
	for _, tc := range []struct {
		name string
		blob []byte
		err  error
	}{
		{"empty", nil, ErrInvalidKey},
		{"cut short", blob[:len(blob)-1], ErrInvalidKey},
		{"bytes after its fields", append(slices.Clip(blob), 0), ErrInvalidKey},
		{"unknown type", []byte("\x00\x00\x00\x07ssh-foo"), ErrUnsupportedKey},
	} {
		spki, err := SSHPublicKeySPKI(tc.blob)
		if spki != nil || !errors.Is(err, tc.err) || !strings.HasPrefix(err.Error(), "pkbf: ") {
			t.Errorf("%s: %x, %v; want an error wrapping %v", tc.name, spki, err, tc.err)
		}
	}
}

// sshMLDSAKey is an SSH ML-DSA key made with circl, an implementation
// independent of x/crypto/ssh and of Go 1.27's crypto/mldsa: its blob
// (draft-sfluhrer-ssh-mldsa section 4: the type, then the FIPS 204 public
// key as one string) and the RFC 9881 SPKI of the same key, built from
// circl's OID.
type sshMLDSAKey struct {
	typ        string
	key, blob  []byte
	spki       []byte
	schemeName string
}

func sshMLDSAKeys(t testing.TB) []sshMLDSAKey {
	type oidScheme interface{ Oid() asn1.ObjectIdentifier }
	var out []sshMLDSAKey
	for typ, s := range map[string]sign.Scheme{"ssh-mldsa-44": mldsa44.Scheme(), "ssh-mldsa-65": mldsa65.Scheme(), "ssh-mldsa-87": mldsa87.Scheme()} {
		pub, _, err := s.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		key, err := pub.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		oid := s.(oidScheme).Oid()
		ints := make([]int, len(oid))
		copy(ints, oid)
		blob := ssh.Marshal(struct {
			Name string
			Key  []byte
		}{typ, key})
		out = append(out, sshMLDSAKey{typ, key, blob, rawSPKI(der.OID(ints...), nil, 0, key), s.Name()})
	}
	return out
}

// mldsaCertBlob is an ML-DSA certificate's blob, as x/crypto/ssh v0.58
// built with Go 1.27 names and writes one (the format of
// PROTOCOL.certkeys, the key's fields as the plain key's): a real
// Ed25519 certificate with the ML-DSA key in place of its key.
func mldsaCertBlob(t testing.TB, typ string, key []byte) []byte {
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPub, _ := ssh.NewPublicKey(ed.Public())
	ca, _ := ssh.NewSignerFromSigner(ed)
	cert := &ssh.Certificate{Key: edPub, CertType: ssh.UserCert, ValidPrincipals: []string{"alice"}, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	var fields struct {
		Name, Nonce, Key []byte
		Rest             []byte `ssh:"rest"`
	}
	if err := ssh.Unmarshal(cert.Marshal(), &fields); err != nil {
		t.Fatal(err)
	}
	fields.Name, fields.Key = []byte(typ+"-cert-v01@golang.org"), key
	return ssh.Marshal(&fields)
}

// F3 of red-team round 1: x/crypto/ssh v0.58 built with Go 1.27 offers
// and accepts ssh-mldsa-44, -65 and -87 keys and their certificates
// (ssh-mldsa-44-cert-v01@golang.org, ...), which pkbf refused as unknown
// types. Their blobs give the RFC 9881 SPKI of the same key: as a blob,
// as a line (with the fingerprint ssh-keygen's rule gives) and inside a
// certificate. A key one byte short or long, bytes after it, another
// parameter set's key under a type, and certificate names x/crypto/ssh
// does not write are refused.
func TestSSHMLDSA(t *testing.T) {
	ks := sshMLDSAKeys(t)
	for _, k := range ks {
		if got, err := SSHPublicKeySPKI(k.blob); err != nil || !bytes.Equal(got, k.spki) {
			t.Errorf("%s blob: %v (the %s SPKI: %v)", k.typ, err, k.schemeName, bytes.Equal(got, k.spki))
		}
		line := k.typ + " " + base64.StdEncoding.EncodeToString(k.blob) + " alice@mldsa"
		if got, err := SPKI([]byte(line)); err != nil || !bytes.Equal(got, k.spki) {
			t.Errorf("%s line: %v (SPKI %v)", k.typ, err, bytes.Equal(got, k.spki))
		}
		sum := sha256.Sum256(k.blob)
		lk := Key{kind: kindLine, Raw: []byte(line)}
		if fp, comment := lk.SSHFingerprint(); fp != "SHA256:"+base64.RawStdEncoding.EncodeToString(sum[:]) || comment != "alice@mldsa" {
			t.Errorf("%s line: fingerprint %q, comment %q", k.typ, fp, comment)
		}
		if got, err := SSHPublicKeySPKI(mldsaCertBlob(t, k.typ, k.key)); err != nil || !bytes.Equal(got, k.spki) {
			t.Errorf("%s certificate: %v (the certified key's SPKI: %v)", k.typ, err, bytes.Equal(got, k.spki))
		}
	}
	blob := func(typ string, key []byte) []byte {
		return ssh.Marshal(struct {
			Name string
			Key  []byte
		}{typ, key})
	}
	k, other := ks[0], ks[1]
	cert := mldsaCertBlob(t, k.typ, k.key)
	for _, tc := range []struct {
		name string
		blob []byte
		err  error
	}{
		{"one byte short", blob(k.typ, k.key[1:]), ErrInvalidKey},
		{"one byte long", blob(k.typ, append(slices.Clip(k.key), 0)), ErrInvalidKey},
		{"bytes after the key", append(slices.Clip(k.blob), 0), ErrInvalidKey},
		{"another parameter set's key", blob(k.typ, other.key), ErrInvalidKey},
		{"certificate cut short in its key", cert[:bytes.Index(cert, k.key)+100], ErrInvalidKey},
		{"certificate under OpenSSH's suffix", withSSHName(cert, k.typ+"-cert-v01@openssh.com"), ErrUnsupportedKey},
		{"a name of no parameter set", blob("ssh-mldsa-55", k.key), ErrUnsupportedKey},
	} {
		spki, err := SSHPublicKeySPKI(tc.blob)
		if spki != nil || !errors.Is(err, tc.err) || !strings.HasPrefix(err.Error(), "pkbf: ") {
			t.Errorf("%s: %x, %v; want an error wrapping %v", tc.name, spki, err, tc.err)
		}
	}
}

// withSSHName returns blob with its type name replaced by name.
func withSSHName(blob []byte, name string) []byte {
	var fields struct {
		Name []byte
		Rest []byte `ssh:"rest"`
	}
	if err := ssh.Unmarshal(blob, &fields); err != nil {
		panic(err)
	}
	fields.Name = []byte(name)
	return ssh.Marshal(&fields)
}

// BenchmarkSSHLine reads authorized_keys lines (a quarter RSA 2048, the
// rest P-256, as BenchmarkCheckAuthorizedKeys has them) to SPKI and
// fingerprint, with pkbf's reader and with x/crypto/ssh's: the measure of
// whether x/crypto/ssh could take over at comparable speed
// (docs/performance.md).
func BenchmarkSSHLine(b *testing.B) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	for j := range 512 {
		var pub any = &rsaKey.PublicKey
		if j%4 != 0 {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			pub = &k.PublicKey
		}
		sp, _ := ssh.NewPublicKey(pub)
		lines = append(lines, append(bytes.TrimSpace(ssh.MarshalAuthorizedKey(sp)), fmt.Sprintf(" user%d@example.com", j)...))
	}
	b.Run("pkbf", func(b *testing.B) {
		for i := range b.N {
			line := lines[i%len(lines)]
			if _, err := sshLineSPKI(line); err != nil {
				b.Fatal(err)
			}
			k := Key{kind: kindLine, Raw: line}
			if fp, _ := k.SSHFingerprint(); fp == "" {
				b.Fatal("no fingerprint")
			}
		}
	})
	b.Run("x-crypto-ssh", func(b *testing.B) {
		for i := range b.N {
			pub, _, _, _, err := ssh.ParseAuthorizedKey(lines[i%len(lines)])
			if err != nil {
				b.Fatal(err)
			}
			if _, err := x509.MarshalPKIXPublicKey(pub.(ssh.CryptoPublicKey).CryptoPublicKey()); err != nil {
				b.Fatal(err)
			}
			ssh.FingerprintSHA256(pub)
		}
	})
}

// nextFieldByByte is nextField as it was written first, one byte at a
// time: the reference for its fast path.
func nextFieldByByte(s []byte) (field, rest []byte) {
	s = bytes.TrimLeft(s, " \t")
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted && i+1 < len(s):
			i++
		case c == '"':
			quoted = !quoted
		case (c == ' ' || c == '\t') && !quoted:
			return s[:i], s[i:]
		}
	}
	return s, nil
}

// TestNextField splits lines made of the characters that matter to
// nextField (blanks, quotes, backslashes) and ordinary ones into every
// field, and checks each split against the byte-at-a-time reference.
func TestNextField(t *testing.T) {
	alphabet := []byte(" \t\"\\aA=")
	lines := []string{"", " ", "ssh-rsa AAAA comment", `command="echo \"a b\"",no-pty ssh-ed25519 AAAA x`, "\t\tx\t y"}
	for n := 1; n <= 6; n++ { // every line of n characters from the alphabet
		line := make([]byte, n)
		for code := 0; code < pow(len(alphabet), n); code++ {
			c := code
			for i := range line {
				line[i] = alphabet[c%len(alphabet)]
				c /= len(alphabet)
			}
			lines = append(lines, string(line))
		}
	}
	for _, line := range lines {
		rest, want := []byte(line), []byte(line)
		for range len(line) + 1 {
			f, r := nextField(rest)
			wf, wr := nextFieldByByte(want)
			if !bytes.Equal(f, wf) || !bytes.Equal(r, wr) || (r == nil) != (wr == nil) {
				t.Fatalf("nextField(%q) = %q, %q; want %q, %q", rest, f, r, wf, wr)
			}
			if len(f) == 0 {
				break
			}
			rest, want = r, wr
		}
	}
}

func pow(b, n int) int {
	p := 1
	for range n {
		p *= b
	}
	return p
}
