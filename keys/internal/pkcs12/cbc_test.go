package pkcs12

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"testing"
)

func TestDecryptCBC(t *testing.T) {
	block, _ := aes.NewCipher(make([]byte, 16))
	iv := make([]byte, 16)
	encrypt := func(plain []byte) []byte {
		out := make([]byte, len(plain))
		cipher.NewCBCEncrypter(block, iv).CryptBlocks(out, plain)
		return out
	}
	good := append([]byte("thirteen byte"), 3, 3, 3)
	if got, err := DecryptCBC(block, iv, encrypt(good)); err != nil || string(got) != "thirteen byte" {
		t.Errorf("padded text: %q, %v", got, err)
	}
	full := append(bytes.Repeat([]byte("x"), 16), bytes.Repeat([]byte{16}, 16)...)
	if got, err := DecryptCBC(block, iv, encrypt(full)); err != nil || len(got) != 16 {
		t.Errorf("a whole block of padding: %q, %v", got, err)
	}
	for name, plain := range map[string][]byte{
		"zero pad byte":     append([]byte("fifteen bytes!!"), 0),
		"pad past a block":  append([]byte("fifteen bytes!!"), 17),
		"inconsistent pads": append([]byte("fourteen bytes"), 1, 2),
	} {
		if _, err := DecryptCBC(block, iv, encrypt(plain)); err != ErrBadPadding {
			t.Errorf("%s: %v, want ErrBadPadding", name, err)
		}
	}
	for name, tc := range map[string]struct{ iv, data []byte }{
		"no data":      {iv, nil},
		"partial data": {iv, make([]byte, 17)},
		"short IV":     {iv[:8], make([]byte, 16)},
	} {
		if _, err := DecryptCBC(block, tc.iv, tc.data); err == nil || err == ErrBadPadding {
			t.Errorf("%s: %v, want a shape error", name, err)
		}
	}
}
