package keys

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
	"golang.org/x/crypto/ssh"
)

// RFC 4716 public keys, as ssh-keygen -e and puttygen write them, and as
// the RFC allows them (headers continued with a backslash, quoted).
func TestRFC4716(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(pub.Marshal())
	var body strings.Builder
	for s := b64; len(s) > 0; s = s[min(len(s), 70):] {
		body.WriteString(s[:min(len(s), 70)] + "\n")
	}
	want := wantSPKI(t, &k.PublicKey)
	for name, text := range map[string]string{
		"plain":             "---- BEGIN SSH2 PUBLIC KEY ----\n" + body.String() + "---- END SSH2 PUBLIC KEY ----\n",
		"comment":           "---- BEGIN SSH2 PUBLIC KEY ----\nComment: \"256-bit ECDSA, user@host\"\n" + body.String() + "---- END SSH2 PUBLIC KEY ----\n",
		"continued headers": "---- BEGIN SSH2 PUBLIC KEY ----\nSubject: user\nComment: \"a comment that goes on \\\nand on\"\nx-private: 1\n" + body.String() + "---- END SSH2 PUBLIC KEY ----\n",
		"CRLF":              strings.ReplaceAll("---- BEGIN SSH2 PUBLIC KEY ----\n"+body.String()+"---- END SSH2 PUBLIC KEY ----\n", "\n", "\r\n"),
	} {
		got, err := SPKI([]byte(text))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: SPKI = %x, %v; want %x", name, got, err, want)
		}
	}
	// The files ssh-keygen and puttygen wrote for the project's keys.
	for _, pair := range [][2]string{{"more/p384.rfc4716.pub", "p384.pub"}, {"more/rsa2048.rfc4716.pub", "rsa2048.pub"}, {"more/ed25519.puttygen-rfc4716.pub", "ed25519.pub"}} {
		checkSameKey(t, pair[0], pair[1])
	}
	cut := "---- BEGIN SSH2 PUBLIC KEY ----\n" + body.String()[:40] + "\n---- END SSH2 PUBLIC KEY ----\n"
	if _, err := SPKI([]byte(cut)); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("a cut RFC 4716 key: %v, want ErrInvalidKey", err)
	}
}

// checkSameKey checks that two files of the project's testdata give one
// SPKI.
func checkSameKey(t *testing.T, a, b string) {
	t.Helper()
	sa, errA := SPKI(testkit.ReadFile(t, keysDir+"/"+a))
	sb, errB := SPKI(testkit.ReadFile(t, keysDir+"/"+b))
	if errA != nil || errB != nil || !bytes.Equal(sa, sb) {
		t.Errorf("%s and %s: %x, %v and %x, %v; want one key", a, b, sa, errA, sb, errB)
	}
}
