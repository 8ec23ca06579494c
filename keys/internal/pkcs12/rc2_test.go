package pkcs12

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// The test vectors of RFC 2268 section 5, decrypted.
func TestRC2Vectors(t *testing.T) {
	for _, v := range []struct {
		key               string
		effectiveBits     int
		plain, ciphertext string
	}{
		{"0000000000000000", 63, "0000000000000000", "ebb773f993278eff"},
		{"ffffffffffffffff", 64, "ffffffffffffffff", "278b27e42e2f0d49"},
		{"3000000000000000", 64, "1000000000000001", "30649edf9be7d2c2"},
		{"88", 64, "0000000000000000", "61a8a244adacccf0"},
		{"88bca90e90875a", 64, "0000000000000000", "6ccf4308974c267f"},
		{"88bca90e90875a7f0f79c384627bafb2", 64, "0000000000000000", "1a807d272bbe5db1"},
		{"88bca90e90875a7f0f79c384627bafb2", 128, "0000000000000000", "2269552ab0f85ca6"},
		{"88bca90e90875a7f0f79c384627bafb216f80a6f85920584c42fceb0be255daf1e", 129, "0000000000000000", "5b78d3a43dfff1f1"},
	} {
		key, _ := hex.DecodeString(v.key)
		ct, _ := hex.DecodeString(v.ciphertext)
		want, _ := hex.DecodeString(v.plain)
		got := make([]byte, 8)
		NewRC2(key, v.effectiveBits).Decrypt(got, ct)
		if !bytes.Equal(got, want) {
			t.Errorf("key %s, %d bits: %x decrypts to %x, want %s", v.key, v.effectiveBits, ct, got, v.plain)
		}
	}
}
