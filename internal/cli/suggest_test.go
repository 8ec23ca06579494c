package cli

import "testing"

func TestNearest(t *testing.T) {
	commands := []string{"info", "check", "create", "add", "merge", "update", "serve", "version", "help", "completion"}
	for _, tc := range []struct{ name, s, want string }{
		{"one letter missing inside", "chck", "check"}, {"two letters swapped, short", "chekc", ""},
		{"one letter missing", "updat", "update"},
		{"a prefix", "ver", "version"},
		{"exact", "serve", "serve"},
		{"too far", "frobnicate", ""},
		{"one letter, no prefix rule", "x", ""},
		{"empty", "", ""},
		{"tie to the first in order", "ad", "add"},
	} {
		if got := Nearest(tc.s, commands); got != tc.want {
			t.Errorf("%s: Nearest(%q) = %q, want %q", tc.name, tc.s, got, tc.want)
		}
	}
	if got := Nearest("json", nil); got != "" {
		t.Errorf("no candidates: %q", got)
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}} {
		if got := distance(tc.a, tc.b); got != tc.want || distance(tc.b, tc.a) != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
