package nixbloom

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Nix reads nix-cache-info (BinaryCacheStore::init in Nix's libstore) one
// line at a time: the text is split at '\n', a line without ':' is
// skipped, the key is everything before the first ':', compared exactly
// (untrimmed: "BloomFilter : x" is the field "BloomFilter "), and the value
// is the rest with space, tab, '\r' and '\n' trimmed from both ends. Every
// line is read in order, so of two lines with one key the last wins.
// cacheInfoLines is that reading, for CacheInfoField and SetCacheInfoField
// alike.

// nixSpace is what Nix's trim removes from both ends of a value.
const nixSpace = " \t\r\n"

type cacheInfoLine struct {
	text       []byte // the line, without its '\n'
	key, value string
	field      bool // it has a ':'
}

func cacheInfoLines(info []byte) []cacheInfoLine {
	var lines []cacheInfoLine
	for len(info) > 0 {
		text, rest, _ := bytes.Cut(info, []byte("\n"))
		info = rest
		l := cacheInfoLine{text: text}
		if k, v, ok := bytes.Cut(text, []byte(":")); ok {
			l.key, l.value, l.field = string(k), strings.Trim(string(v), nixSpace), true
		}
		lines = append(lines, l)
	}
	return lines
}

// CacheInfoField returns the value of key in info, the text of a
// nix-cache-info file, read by Nix's rules: the key matches exactly, the
// value is trimmed of spaces, tabs and line ends, and the last line with
// the key wins.
func CacheInfoField(info []byte, key string) (value string, ok bool) {
	for _, l := range cacheInfoLines(info) {
		if l.field && l.key == key {
			value, ok = l.value, true
		}
	}
	return value, ok
}

// SetCacheInfoField returns info, the text of a nix-cache-info file, with
// key set to value. The lines that have the key, and those whose key is
// the key with spaces or tabs around it (which Nix reads as another field,
// but a reader that trims keys would take for this one), give way to one
// "key: value" line where the first of them was, or at the end if there is
// none. Other lines are kept as they are. The result reads back, by [CacheInfoField], as value.
// It returns an error for a key or value that would not read back so (a
// ':' or line end in the key, a line end in the value, spaces around
// either, an empty key).
func SetCacheInfoField(info []byte, key, value string) ([]byte, error) {
	switch {
	case key == "" || strings.ContainsAny(key, ":\n") || strings.Trim(key, nixSpace) != key:
		return nil, fmt.Errorf("nixbloom: nix-cache-info key %q: want no ':', line end or surrounding space", key)
	case strings.ContainsAny(value, "\n") || strings.Trim(value, nixSpace) != value:
		return nil, fmt.Errorf("nixbloom: nix-cache-info value %q for %s: want no line end or surrounding space", value, key)
	}
	var out bytes.Buffer
	done := false
	for _, l := range cacheInfoLines(info) {
		if l.field && strings.Trim(l.key, nixSpace) == key {
			if !done {
				fmt.Fprintf(&out, "%s: %s\n", key, value)
				done = true
			}
			continue
		}
		out.Write(l.text)
		out.WriteByte('\n')
	}
	if !done {
		fmt.Fprintf(&out, "%s: %s\n", key, value)
	}
	return out.Bytes(), nil
}

// defaultStoreDir is the store directory of a cache whose nix-cache-info
// names none, as of a Nix configured as usual.
const defaultStoreDir = "/nix/store"

// narinfo is what pkbf reads of a .narinfo file.
type narinfo struct {
	storePath string // cleaned, as Nix prints it
	hashPart  string
	name      string
}

// parseNarinfo reads a .narinfo file as Nix's NarInfo constructor
// (nar-info.cc) does, in the parts that decide whether Nix takes it: from
// each field's start, the key runs to the next ':' (which may be on a
// later line), the value starts two bytes after it and runs to the next
// '\n' searched from there; a field without either is corrupt; the last
// StorePath or URL wins. StorePath must be a store path in storeDir, and
// NarHash, a non-empty URL and a non-zero NarSize must be there, as Nix
// requires. The values of the other fields (hashes, references,
// signatures) are not checked.
func parseNarinfo(b []byte, storeDir, where string) (narinfo, error) {
	s := string(b)
	var storePath, url string
	var haveStorePath, haveNarHash bool
	var narSize uint64
	for pos := 0; pos < len(s); {
		colon := strings.IndexByte(s[pos:], ':')
		if colon < 0 {
			return narinfo{}, fmt.Errorf("nixbloom: %s is corrupt: no ':' after byte %d", where, pos)
		}
		colon += pos
		name := s[pos:colon]
		eol := -1
		if colon+2 <= len(s) {
			eol = strings.IndexByte(s[colon+2:], '\n')
		}
		if eol < 0 {
			return narinfo{}, fmt.Errorf("nixbloom: %s is corrupt: field %q has no line end", where, name)
		}
		eol += colon + 2
		value := s[colon+2 : eol]
		switch name {
		case "StorePath":
			storePath, haveStorePath = value, true
		case "URL":
			url = value
		case "NarHash":
			haveNarHash = true
		case "NarSize", "FileSize":
			// Nix's string2Int (boost::lexical_cast) takes a leading '+'.
			n, err := strconv.ParseUint(strings.TrimPrefix(value, "+"), 10, 64)
			if err != nil {
				return narinfo{}, fmt.Errorf("nixbloom: %s is corrupt: %s %q is not a number", where, name, value)
			}
			if name == "NarSize" {
				narSize = n
			}
		}
		pos = eol + 1
	}
	switch {
	case !haveStorePath:
		return narinfo{}, fmt.Errorf("nixbloom: %s is corrupt: no StorePath field", where)
	case !haveNarHash:
		return narinfo{}, fmt.Errorf("nixbloom: %s is corrupt: no NarHash field", where)
	case url == "":
		return narinfo{}, fmt.Errorf("nixbloom: %s is corrupt: no URL", where)
	case narSize == 0:
		return narinfo{}, fmt.Errorf("nixbloom: %s is corrupt: no NarSize, or 0", where)
	}
	return parseStorePath(storePath, storeDir, where)
}

// parseStorePath checks a store path as Nix's Store::parseStorePath does:
// an absolute path, cleaned, whose directory is storeDir and whose base
// name is a 32-character Nix32 hash part, one more character (which Nix
// does not look at) and a name of 1 to 211 characters from
// [0-9A-Za-z+-._?=].
func parseStorePath(p, storeDir, where string) (narinfo, error) {
	if !strings.HasPrefix(p, "/") {
		return narinfo{}, fmt.Errorf("%w: %s: StorePath %q is not an absolute path", ErrInvalidPath, where, p)
	}
	clean := path.Clean(p)
	dir, base := path.Split(clean)
	if path.Clean(dir) != storeDir {
		return narinfo{}, fmt.Errorf("%w: %s: StorePath %q is not in the store %s", ErrInvalidPath, where, p, storeDir)
	}
	if len(base) < hashPartLen+2 {
		return narinfo{}, fmt.Errorf("%w: %s: StorePath %q: base name too short", ErrInvalidPath, where, p)
	}
	var h [hashPartBytes]byte
	if err := decodeHashPart(&h, base[:hashPartLen]); err != nil {
		return narinfo{}, fmt.Errorf("%w, in %s: StorePath %q", err, where, p)
	}
	name := base[hashPartLen+1:]
	if len(name) > 211 {
		return narinfo{}, fmt.Errorf("%w: %s: StorePath %q: name longer than 211 characters", ErrInvalidPath, where, p)
	}
	for i := range len(name) {
		if c := name[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || strings.IndexByte("+-._?=", c) >= 0) {
			return narinfo{}, fmt.Errorf("%w: %s: StorePath %q: %q is not allowed in a name", ErrInvalidPath, where, p, c)
		}
	}
	return narinfo{storePath: clean, hashPart: base[:hashPartLen], name: name}, nil
}
