package pkcs12

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// Derivations cross-checked with OpenSSL 3.0, which takes the password's
// bytes as given (hexpass: BMPPassword's encoding):
//
//	openssl kdf -keylen 24 -kdfopt digest:SHA1 -kdfopt hexpass:0073006d006500670000 \
//	    -kdfopt hexsalt:0A58CF64530D823F -kdfopt iter:1 -kdfopt id:1 PKCS12KDF
//
// and so on for each row. The first is the classic "smeg" vector of other
// PKCS#12 implementations' tests too.
func TestKDF(t *testing.T) {
	for _, v := range []struct {
		sha256     bool
		pass, salt string
		iter       int
		id         byte
		want       string
	}{
		{false, "smeg", "0A58CF64530D823F", 1, 1, "8AAAE6297B6CB04642AB5B077851284EB7128F1A2A7FBCA3"},
		{false, "smeg", "642B99AB44FB4B1F", 1, 2, "C0A38D64A79BEA1D"},
		{false, "queeg", "05DEC959ACFF72F7", 1000, 1, "ED2034E36328830FF09DF1E1A07DD357185DAC0D4F9EB3D4"},
		{false, "queeg", "05DEC959ACFF72F7", 1000, 2, "11DEDAD7758D4860"},
		{true, "pässwörd", "0102030405060708", 2048, 3, "E6B828F453A9AB94CD0758276707633A40F842A536B0B6CB4E5C164888F79E0B"},
		{false, "a", "00", 3, 1, "475192A7CC1B269335651239EC821F4E9B5D7C5A3A41657C1D649869952B37A2AE38353DD121A0F6ED60B6D6C782F6924620F135C7C59828D0E8431F"},
		{false, "", "00", 3, 1, "604B114B76700FFF0A26A8D8B278D77AC556EA3C"},
	} {
		h := sha1.New
		if v.sha256 {
			h = sha256.New
		}
		salt, _ := hex.DecodeString(v.salt)
		want, _ := hex.DecodeString(v.want)
		if got := KDF(h, v.id, BMPPassword(v.pass), salt, v.iter, len(want)); !bytes.Equal(got, want) {
			t.Errorf("%+v: %X", v, got)
		}
	}
}

func TestBMPPassword(t *testing.T) {
	for pw, want := range map[string]string{"": "0000", "a": "00610000", "é€𝄞": "00e920acd834dd1e0000"} {
		if got := hex.EncodeToString(BMPPassword(pw)); got != want {
			t.Errorf("BMPPassword(%q) = %s, want %s", pw, got, want)
		}
	}
}
