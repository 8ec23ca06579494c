package nixbloom

import (
	"bytes"
	"errors"
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

// cacheStoreDir reads info, a cache's nix-cache-info, as Nix's
// BinaryCacheStore::init does when it opens the cache, and returns the
// store directory the cache is for ("" if it names none). Nix checks every
// StoreDir line against its own store directory and every Priority with
// std::stoi, and refuses the cache on any mismatch: so StoreDir lines that
// disagree, or a Priority that is no int, are an error naming where.
func cacheStoreDir(info []byte, where string) (string, error) {
	dir := ""
	for _, l := range cacheInfoLines(info) {
		switch {
		case !l.field:
		case l.key == "StoreDir" && dir != "" && l.value != dir:
			return "", fmt.Errorf("nixbloom: %s: StoreDir %q and %q: no Nix opens a cache for two stores", where, dir, l.value)
		case l.key == "StoreDir":
			dir = l.value
		case l.key == "Priority" && !stoi(l.value):
			return "", fmt.Errorf("nixbloom: %s: Priority %q is not a number: Nix refuses the cache", where, l.value)
		}
	}
	return dir, nil
}

// stoi reports whether C++'s std::stoi takes s: after C white space, a
// sign and at least one digit, which must fit an int; the rest is ignored.
func stoi(s string) bool {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	j := i
	for j < len(s) && '0' <= s[j] && s[j] <= '9' {
		j++
	}
	if j == i {
		return false
	}
	_, err := strconv.ParseInt(s[:j], 10, 32)
	return err == nil
}

// storeDirFor returns the store directory a client asking about path (a
// store path, base name or hash part, checked) has, given the one its
// cache is for (cacheDir, "" if none): a store path's own directory, which
// must be the cache's; else the cache's, or /nix/store.
func storeDirFor(path, cacheDir, where string) (string, error) {
	slash := strings.LastIndexByte(path, '/')
	switch {
	case slash < 0 && cacheDir != "":
		return cacheDir, nil
	case slash < 0:
		return defaultStoreDir, nil
	case cacheDir != "" && path[:slash] != cacheDir:
		return "", fmt.Errorf("nixbloom: %s: the cache is for Nix stores in %s, not %q", where, cacheDir, path[:slash])
	}
	return path[:slash], nil
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
// (nar-info.cc) does, and fails wherever it throws: from each field's
// start, the key runs to the next ':' (which may be on a later line), the
// value starts two bytes after it and runs to the next '\n' searched from
// there; a field without either is corrupt. Every StorePath must be a store
// path in storeDir (the last wins); NarHash and FileHash must be hashes
// Nix parses; NarSize and FileSize numbers; each References entry (one
// non-empty References line at most) and a Deriver other than
// "unknown-deriver" store path base names; a non-empty CA a content
// address, once. NarHash, a non-empty URL and a non-zero NarSize must be
// there. Signatures (Sig) are not checked, as Nix's parser does not.
func parseNarinfo(b []byte, storeDir, where string) (narinfo, error) {
	s := string(b)
	var ni narinfo
	var url string
	var haveStorePath, haveNarHash, haveRefs, haveCA bool
	var narSize uint64
	corrupt := func(format string, a ...any) (narinfo, error) {
		return narinfo{}, fmt.Errorf("nixbloom: %s is corrupt: "+format, append([]any{where}, a...)...)
	}
	for pos := 0; pos < len(s); {
		colon := strings.IndexByte(s[pos:], ':')
		if colon < 0 {
			return corrupt("no ':' after byte %d", pos)
		}
		colon += pos
		name := s[pos:colon]
		eol := -1
		if colon+2 <= len(s) {
			eol = strings.IndexByte(s[colon+2:], '\n')
		}
		if eol < 0 {
			return corrupt("field %q has no line end", name)
		}
		eol += colon + 2
		value := s[colon+2 : eol]
		switch name {
		case "StorePath":
			p, err := parseStorePath(value, storeDir, where)
			if err != nil {
				return narinfo{}, err
			}
			ni, haveStorePath = p, true
		case "URL":
			url = value
		case "NarHash", "FileHash":
			if err := parseHash(value); err != nil {
				return corrupt("%s %q: %s", name, value, err)
			}
			haveNarHash = haveNarHash || name == "NarHash"
		case "NarSize", "FileSize":
			// Nix's string2Int (boost::lexical_cast) takes a leading '+'.
			n, err := strconv.ParseUint(strings.TrimPrefix(value, "+"), 10, 64)
			if err != nil {
				return corrupt("%s %q is not a number", name, value)
			}
			if name == "NarSize" {
				narSize = n
			}
		case "References":
			if haveRefs {
				return corrupt("a second References field")
			}
			for _, r := range strings.Split(value, " ") {
				if r == "" {
					continue
				}
				if err := checkBaseName(r); err != nil {
					return corrupt("References: %s", err)
				}
				haveRefs = true
			}
		case "Deriver":
			if value != "unknown-deriver" {
				if err := checkBaseName(value); err != nil {
					return corrupt("Deriver: %s", err)
				}
			}
		case "CA":
			if haveCA {
				return corrupt("a second CA field")
			}
			if value != "" {
				if err := parseContentAddress(value); err != nil {
					return corrupt("CA %q: %s", value, err)
				}
				haveCA = true
			}
		}
		pos = eol + 1
	}
	switch {
	case !haveStorePath:
		return corrupt("no StorePath field")
	case !haveNarHash:
		return corrupt("no NarHash field")
	case url == "":
		return corrupt("no URL")
	case narSize == 0:
		return corrupt("no NarSize, or 0")
	}
	return ni, nil
}

// checkBaseName checks a store path's base name as Nix's StorePath
// constructor does: a 32-character Nix32 hash part, one more character
// (which Nix does not look at) and a name (see checkName).
func checkBaseName(base string) error {
	if len(base) < hashPartLen+1 {
		return fmt.Errorf("%q is too short to be a store path", base)
	}
	var h [hashPartBytes]byte
	if err := decodeHashPart(&h, base[:hashPartLen]); err != nil {
		return fmt.Errorf("%q: the hash part is not Nix32", base)
	}
	if err := checkName(base[hashPartLen+1:]); err != nil {
		return fmt.Errorf("%q: %s", base, err)
	}
	return nil
}

// hashSizes are the bytes of each hash type Nix knows (parseHashType).
var hashSizes = map[string]int{"md5": 16, "sha1": 20, "sha256": 32, "sha512": 64}

// parseHash checks a hash as Nix's Hash::parseAnyPrefixed reads it:
// "TYPE:DIGEST", or "TYPE-BASE64" (SRI).
func parseHash(s string) error {
	typ, rest, ok := strings.Cut(s, ":")
	sri := false
	if !ok {
		typ, rest, ok = strings.Cut(s, "-")
		sri = ok
	}
	if !ok {
		return errors.New("no hash type")
	}
	size, ok := hashSizes[typ]
	if !ok {
		return fmt.Errorf("unknown hash type %q", typ)
	}
	return parseDigest(rest, size, sri)
}

// parseDigest checks the digest of a hash of size bytes as Nix's Hash
// constructor does: base-16, Nix32 or base-64, told apart by the length
// (any length, base-64, for SRI).
func parseDigest(s string, size int, sri bool) error {
	switch {
	case !sri && len(s) == 2*size:
		for i := range len(s) {
			if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return errors.New("invalid base-16 digest")
			}
		}
	case !sri && len(s) == (size*8-1)/5+1:
		for n := range len(s) {
			d := nix32Value[s[len(s)-1-n]]
			if d == 0xff {
				return errors.New("invalid Nix32 digest")
			}
			// The bits past the last byte must be 0.
			if bit := n * 5; bit/8 == size-1 && d>>(8-bit%8) != 0 {
				return errors.New("invalid Nix32 digest")
			}
		}
	case sri || len(s) == (4*size/3+3)&^3:
		// Nix's base64Decode: stops at '=', skips '\n', refuses any other
		// byte out of the alphabet, and drops the bits of a partial byte.
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
		bits, n := 0, 0
		for i := 0; i < len(s) && s[i] != '='; i++ {
			if s[i] == '\n' {
				continue
			}
			if strings.IndexByte(alphabet, s[i]) < 0 {
				return errors.New("invalid base-64 digest")
			}
			if bits += 6; bits >= 8 {
				n, bits = n+1, bits-8
			}
		}
		if n != size {
			return errors.New("invalid base-64 digest")
		}
	default:
		return errors.New("digest of the wrong length")
	}
	return nil
}

// parseContentAddress checks a CA field as Nix's parseContentAddress
// reads it: "text:sha256:DIGEST" or "fixed:[r:]TYPE:DIGEST".
func parseContentAddress(s string) error {
	prefix, rest, ok := strings.Cut(s, ":")
	if !ok || (prefix != "text" && prefix != "fixed") {
		return errors.New("not a content address (text: or fixed:)")
	}
	if prefix == "fixed" {
		rest = strings.TrimPrefix(rest, "r:")
	}
	typ, digest, ok := strings.Cut(rest, ":")
	if !ok {
		return errors.New("no hash type")
	}
	size, ok := hashSizes[typ]
	switch {
	case !ok:
		return fmt.Errorf("unknown hash type %q", typ)
	case prefix == "text" && typ != "sha256":
		return errors.New("a text content address must use sha256")
	}
	return parseDigest(digest, size, false)
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
	if err := checkName(name); err != nil {
		return narinfo{}, fmt.Errorf("%w: %s: StorePath %q: %s", ErrInvalidPath, where, p, err)
	}
	return narinfo{storePath: clean, hashPart: base[:hashPartLen], name: name}, nil
}
