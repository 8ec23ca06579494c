package keys

import (
	"bytes"
	"errors"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

// PuTTY key files as puttygen wrote them (version 2 and 3, encrypted or
// not: the public key is in the clear), against the same keys in OpenSSH
// form.
func TestPuTTY(t *testing.T) {
	for _, pair := range [][2]string{{"more/ed25519.ppk", "ed25519.pub"}, {"more/rsa2048.v2.ppk", "rsa2048.pub"}, {"more/p256.encrypted.ppk", "p256.pub"}} {
		checkSameKey(t, pair[0], pair[1])
	}
	ppk := testkit.ReadFile(t, keysDir+"/more/ed25519.ppk")
	i := bytes.Index(ppk, []byte("Public-Lines: "))
	if i < 0 {
		t.Fatal("no Public-Lines in ed25519.ppk")
	}
	damaged := append(append([]byte{}, ppk[:i]...), "Public-Lines: 9\n"...)
	if _, err := SPKI(damaged); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("a PuTTY file cut after its Public-Lines count: %v, want ErrInvalidKey", err)
	}
}
