package update

import (
	"strings"
	"testing"
)

// ParseHeader reads "Name: value" lines, skipping blanks and comments; a
// line that is not a header is refused, named by its place, its value
// never quoted.
func TestParseHeader(t *testing.T) {
	h, err := ParseHeader([]byte("# credentials\n\nauthorization: Bearer k3y\r\nX-Extra:  a b \n"), "hdr")
	if err != nil || h.Get("Authorization") != "Bearer k3y" || h.Get("X-Extra") != "a b" || len(h) != 2 {
		t.Fatalf("%v, %v", h, err)
	}
	for _, tc := range []struct{ name, text, err string }{
		{"no colon", "Bearer k3y\n", "hdr: line 1 is not a \"Name: value\" header"},
		{"empty name", "ok: 1\n: k3y\n", "hdr: line 2 is not"},
		{"blank in the name", "Author ization: k3y\n", "hdr: line 1 is not"},
	} {
		_, err := ParseHeader([]byte(tc.text), "hdr")
		if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "k3y") || !strings.HasPrefix(err.Error(), "pkbf: ") {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}
