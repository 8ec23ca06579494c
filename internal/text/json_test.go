package text

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// AppendJSONString writes what encoding/json writes without HTML escaping, for
// valid UTF-8 byte for byte. For invalid UTF-8 the releases differ (Go
// 1.26 writes the escape \ufffd, Go 1.27 the character itself): there the
// output is pinned, and must decode to what encoding/json's decodes to.
func TestAppendJSONString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // pinned output; "" means encoding/json's bytes
	}{
		{in: ""}, {in: "plain"}, {in: `quote " and \ backslash`}, {in: "tab\tnewline\nreturn\r"},
		{in: "\x00\x01\x1f\x7f"}, {in: "é ∑ 😀"}, {in: "line\u2028and\u2029para"}, {in: "<html> & 'x'"},
		{in: "invalid \xff\xfe utf-8", want: `"invalid \ufffd\ufffd utf-8"`},
		{in: "cut \xe2\x82", want: `"cut \ufffd\ufffd"`},
	} {
		var enc bytes.Buffer
		e := json.NewEncoder(&enc)
		e.SetEscapeHTML(false)
		if err := e.Encode(tc.in); err != nil {
			t.Fatal(err)
		}
		std := bytes.TrimSuffix(enc.Bytes(), []byte("\n"))
		got := AppendJSONString(nil, tc.in)
		want := tc.want
		if want == "" {
			if !utf8.ValidString(tc.in) {
				t.Fatalf("%q: invalid UTF-8 needs a pinned output", tc.in)
			}
			want = string(std)
		}
		if string(got) != want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", tc.in, got, want)
		}
		var fromGot, fromStd string
		if err := json.Unmarshal(got, &fromGot); err != nil {
			t.Errorf("AppendJSONString(%q) = %s: not JSON: %v", tc.in, got, err)
		}
		if err := json.Unmarshal(std, &fromStd); err != nil {
			t.Fatal(err)
		}
		if fromGot != fromStd {
			t.Errorf("AppendJSONString(%q) decodes to %q, encoding/json's output to %q", tc.in, fromGot, fromStd)
		}
	}
}
