package fingerprint

import "testing"

// Fingerprints as sha256sum prints them (printf ” | sha256sum, printf abc | sha256sum).
func TestAppend(t *testing.T) {
	for in, want := range map[string]string{
		"":    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"abc": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	} {
		if got := string(Append([]byte("x"), []byte(in))); got != "x"+want {
			t.Errorf("Append(%q) = %s", in, got)
		}
	}
}
