package text

import (
	"strings"
	"testing"
)

// Each common mistake gets its hint, and a filter or anything else none.
func TestFilterHint(t *testing.T) {
	for _, tc := range []struct {
		name, start, want string
	}{
		{"PEM", "-----BEGIN CERTIFICATE-----", "key or certificate"},
		{"OpenSSH", "ssh-ed25519 AAAA", "key or certificate"},
		{"DER", "\x30\x82\x01\x22", "DER key or certificate"},
		{"gzip", "\x1f\x8b\x08", "gunzip"},
		{"bzip2", "BZh91AY", "bunzip2"},
		{"xz", "\xfd7zXZ\x00", "unxz"},
		{"zstd", "\x28\xb5\x2f\xfd", "unzstd"},
		{"zip", "PK\x03\x04", "zip archive"},
		{"another version", "pkbfv2", "format version"},
		{"HTML", "<!DOCTYPE html>", "HTML"},
		{"short DER", "\x30\x59", ""},
		{"text", "hello", ""},
		{"empty", "", ""},
	} {
		got := FilterHint([]byte(tc.start))
		if tc.want == "" && got != "" || tc.want != "" && (!strings.HasPrefix(got, ": ") || !strings.Contains(got, tc.want)) {
			t.Errorf("%s: %q, want one naming %q", tc.name, got, tc.want)
		}
	}
}
