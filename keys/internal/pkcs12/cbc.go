package pkcs12

import (
	"bytes"
	"crypto/cipher"
	"crypto/subtle"
	"errors"
	"fmt"
)

// ErrBadPadding is returned by DecryptCBC for plain text that does not end
// in valid padding: the wrong password, most likely.
var ErrBadPadding = errors.New("decryption gives bad padding")

// DecryptCBC decrypts CBC and removes PKCS#7 padding. It returns
// ErrBadPadding, or an error saying the data or IV has the wrong shape.
func DecryptCBC(block cipher.Block, iv, data []byte) ([]byte, error) {
	bs := block.BlockSize()
	if len(iv) != bs || len(data) == 0 || len(data)%bs != 0 {
		return nil, fmt.Errorf("encrypted data is not whole %d-byte blocks with a %d-byte IV", bs, bs)
	}
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, data)
	pad := int(out[len(out)-1])
	if pad == 0 || pad > bs || subtle.ConstantTimeCompare(out[len(out)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) != 1 {
		return nil, ErrBadPadding
	}
	return out[:len(out)-pad], nil
}
