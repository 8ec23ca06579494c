package jsontext

import (
	"bytes"
	"encoding/json"
	"testing"
)

// AppendString writes what encoding/json writes without HTML escaping.
func TestAppendString(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "tab\tnewline\nreturn\r", "\x00\x01\x1f\x7f",
		"invalid \xff\xfe utf-8", "cut \xe2\x82", "é ∑ 😀", "line\u2028and\u2029para", "<html> & 'x'",
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Errorf("AppendString(%q) = %s, encoding/json gives %s", s, got, want.Bytes())
		}
	}
}
