package update

import (
	"bufio"
	"bytes"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/pkbf/pkbf/internal/perr"
)

// ParseHeader reads request headers for [Options.Header] from text, one
// "Name: value" line each (credentials, kept in a file or the environment
// rather than on a command line); blank lines and lines starting with #
// are skipped. An error names where the text came from (from) and the
// line, and never quotes a value.
func ParseHeader(text []byte, from string) (http.Header, error) {
	h := http.Header{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, perr.Errorf("%s: line %d is not a \"Name: value\" header", from, n)
		}
		h.Add(textproto.CanonicalMIMEHeaderKey(name), strings.TrimSpace(value))
	}
	if err := sc.Err(); err != nil {
		return nil, perr.Errorf("%s: %v", from, err)
	}
	return h, nil
}
