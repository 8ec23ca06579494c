package nixbloom

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

func TestCacheInfoField(t *testing.T) {
	for _, tt := range []struct {
		name, info, want string
		ok               bool
	}{
		{"plain", "StoreDir: /nix/store\nBloomFilter: a.nixbloom\n", "a.nixbloom", true},
		{"no space", "BloomFilter:a.nixbloom\n", "a.nixbloom", true},
		{"tabs and CR around the value", "BloomFilter:\t a.nixbloom \t\r\n", "a.nixbloom", true},
		{"no final line end", "BloomFilter: a.nixbloom", "a.nixbloom", true},
		{"a URL, colons and all", "BloomFilter: https://x.example/a:b\n", "https://x.example/a:b", true},
		{"the last wins", "BloomFilter: a\nBloomFilter: b\n", "b", true},
		{"empty value", "BloomFilter:\n", "", true},
		{"space before the colon is another key", "BloomFilter : old.nixbloom\n", "", false},
		{"space before the key is another key", " BloomFilter: old.nixbloom\n", "", false},
		{"tab before the colon", "BloomFilter\t: old.nixbloom\n", "", false},
		{"keys are case-sensitive", "bloomfilter: x\n", "", false},
		{"a look-alike then the field", "BloomFilter : old\nBloomFilter: new\n", "new", true},
		{"no colon", "BloomFilter a\n", "", false},
		{"vertical tab is not trimmed", "BloomFilter:\va\n", "\va", true},
		{"blank lines", "\n\nBloomFilter: a\n\n", "a", true},
		{"empty file", "", "", false},
	} {
		v, ok := CacheInfoField([]byte(tt.info), "BloomFilter")
		if v != tt.want || ok != tt.ok {
			t.Errorf("%s: CacheInfoField = %q, %v; want %q, %v", tt.name, v, ok, tt.want, tt.ok)
		}
	}
}

func TestSetCacheInfoField(t *testing.T) {
	for _, tt := range []struct {
		name, info, want string
	}{
		{"added", "StoreDir: /nix/store\n", "StoreDir: /nix/store\nBloomFilter: f\n"},
		{"added after a last line without its end", "StoreDir: /nix/store", "StoreDir: /nix/store\nBloomFilter: f\n"},
		{"replaced in place", "StoreDir: /nix/store\nBloomFilter: old\nPriority: 40\n", "StoreDir: /nix/store\nBloomFilter: f\nPriority: 40\n"},
		{"duplicates folded into the first", "BloomFilter: a\nX: 1\nBloomFilter: b\n", "BloomFilter: f\nX: 1\n"},
		{"look-alike replaced", "StoreDir: /nix/store\nBloomFilter : old\nPriority: 40\n", "StoreDir: /nix/store\nBloomFilter: f\nPriority: 40\n"},
		{"look-alikes and the field", " BloomFilter: a\nBloomFilter\t: b\nBloomFilter: c\n", "BloomFilter: f\n"},
		{"other keys kept as they are", "bloomfilter: x\nBloomFilterX: y\njunk\n\nCRLF: z\r\n", "bloomfilter: x\nBloomFilterX: y\njunk\n\nCRLF: z\r\nBloomFilter: f\n"},
		{"empty file", "", "BloomFilter: f\n"},
	} {
		got, err := SetCacheInfoField([]byte(tt.info), "BloomFilter", "f")
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: SetCacheInfoField = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	for _, tt := range []struct{ name, key, value string }{
		{"empty key", "", "v"},
		{"colon in the key", "Bloom:Filter", "v"},
		{"space after the key", "BloomFilter ", "v"},
		{"line end in the value", "BloomFilter", "a\nStoreDir: /x"},
		{"space around the value", "BloomFilter", " v"},
		{"CR ending the value", "BloomFilter", "v\r"},
	} {
		if _, err := SetCacheInfoField(nil, tt.key, tt.value); err == nil || !strings.HasPrefix(err.Error(), "nixbloom: ") {
			t.Errorf("%s: SetCacheInfoField(%q, %q) = %v, want an error", tt.name, tt.key, tt.value, err)
		}
	}
}

// A field set reads back as set; every other field Nix reads keeps its
// value.
func FuzzCacheInfo(f *testing.F) {
	f.Add([]byte("StoreDir: /nix/store\nBloomFilter : old\nPriority: 40\n"), "BloomFilter", "x.nixbloom")
	f.Add([]byte("a:b\r\n\n:\nBloomFilter:"), "a", "b")
	f.Fuzz(func(t *testing.T, info []byte, key, value string) {
		out, err := SetCacheInfoField(info, key, value)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "nixbloom: ") {
				t.Fatal(err)
			}
			return
		}
		if v, ok := CacheInfoField(out, key); !ok || v != value {
			t.Fatalf("%q set to %q reads back as %q, %v", key, value, v, ok)
		}
		for _, l := range cacheInfoLines(info) {
			if l.field && strings.Trim(l.key, nixSpace) != key {
				before, _ := CacheInfoField(info, l.key)
				if after, ok := CacheInfoField(out, l.key); !ok || after != before {
					t.Fatalf("%q was %q, is %q, %v", l.key, before, after, ok)
				}
			}
		}
	})
}

// nixOpens says whether Nix 2.8 opens a binary cache with this
// nix-cache-info, by the rules of cacheInfoLines (the ones CacheInfoField
// and SetCacheInfoField read by): every StoreDir must be /nix/store, every
// Priority must start with an int, as std::stoi reads it.
func nixOpens(info []byte) bool {
	stoi := regexp.MustCompile(`^[+-]?[0-9]+`)
	for _, l := range cacheInfoLines(info) {
		switch {
		case !l.field:
		case l.key == "StoreDir" && l.value != "/nix/store":
			return false
		case l.key == "Priority":
			if _, err := strconv.ParseInt(stoi.FindString(l.value), 10, 32); err != nil {
				return false
			}
		}
	}
	return true
}

// Nix itself is the oracle of how nix-cache-info reads: the fields Nix
// reads (StoreDir, which must match its store; Priority, which must be a
// number) are written with every separator and space variant here, and
// Nix opens the cache (nix path-info --all) exactly when pkbf's reading
// of the same lines says it should.
func TestCacheInfoAgainstNix(t *testing.T) {
	env := testkit.NixEnv(t)
	for _, tt := range []struct {
		name, info string
		opens      bool // what Nix 2.8 did, recorded
	}{
		{"plain", "StoreDir: /nix/store\n", true},
		{"no space", "StoreDir:/nix/store\n", true},
		{"tabs and CR around the value", "StoreDir:\t/nix/store \t\r\n", true},
		{"no final line end", "StoreDir: /nix/store", true},
		{"another store", "StoreDir: /nix/other\n", false},
		{"another store, no line end", "StoreDir:/nix/other", false},
		{"space before the colon is another key", "StoreDir : /nix/other\n", true},
		{"tab before the colon is another key", "StoreDir\t: /nix/other\n", true},
		{"space before the key is another key", " StoreDir: /nix/other\n", true},
		{"keys are case-sensitive", "storedir: /nix/other\n", true},
		{"every line counts, the bad one first", "StoreDir: /nix/other\nStoreDir: /nix/store\n", false},
		{"every line counts, the bad one last", "StoreDir: /nix/store\nStoreDir: /nix/other\n", false},
		{"trailing slash", "StoreDir: /nix/store/\n", false},
		{"a vertical tab is not trimmed", "StoreDir:\v/nix/store\n", false},
		{"a form feed is not trimmed", "StoreDir: /nix/store\f\n", false},
		{"a no-break space is not trimmed", "StoreDir: \u00a0/nix/store\n", false},
		{"a colon in the value", "StoreDir: /nix/store:x\n", false},
		{"blank lines and a line without colon", "\n\njunk\nStoreDir: /nix/store\n\n", true},
		{"CR line ends", "StoreDir: /nix/store\r\nPriority: 40\r\n", true},
		{"priority", "Priority: 40\n", true},
		{"priority not a number", "Priority: high\n", false},
		{"priority look-alike not a number", "Priority : high\n", true},
		{"priority empty", "Priority:\n", false},
		{"priority with a tail", "Priority:\t-5x\n", true},
		{"priority out of range", "Priority: 99999999999\n", false},
		{"a BloomFilter look-alike", "StoreDir: /nix/store\nBloomFilter : x\nWantMassQuery: 1\n", true},
	} {
		dir := filepath.Join(t.TempDir(), "cache")
		os.Mkdir(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "nix-cache-info"), []byte(tt.info), 0o644)
		_, err := testkit.NixTry(env, "nix", "path-info", "--store", "file://"+dir, "--all")
		if nix := err == nil; nix != tt.opens || nixOpens([]byte(tt.info)) != nix {
			t.Errorf("%s: Nix opens the cache: %v (%v), recorded %v; pkbf's reading says %v", tt.name, nix, err, tt.opens, nixOpens([]byte(tt.info)))
		}
	}
}

// Nix is the oracle of how a .narinfo reads: each variant of a .narinfo
// Nix wrote is put in a cache of its own, and pkbf's CachePaths lists what
// nix path-info --all lists, and refuses what it refuses. Where the
// StorePath has another hash part than the file's name, nix path-info
// lists it (from its cache of the lookup it refused) but nix copy --from
// the cache says the path is not valid: there the copy is the oracle. Two
// disagreements are known and kept: pkbf refuses a .narinfo that is a
// symbolic link (Nix follows it), and does not check the values of the
// fields it does not use (References here), so it lists a path Nix
// refuses, which puts a false positive in the filter.
func TestNarinfoAgainstNix(t *testing.T) {
	env := testkit.NixEnv(t)
	src := filepath.Join(t.TempDir(), "differential.txt")
	os.WriteFile(src, []byte("pkbf nixbloom narinfo differential\n"), 0o644)
	storePath := strings.TrimSpace(testkit.Nix(t, env, "nix-store", "--add", src))
	base := filepath.Join(t.TempDir(), "base")
	testkit.Nix(t, env, "nix", "copy", "--to", "file://"+base+"?compression=none", storePath)
	hash := filepath.Base(storePath)[:hashPartLen]
	name := filepath.Base(storePath)[hashPartLen+1:]
	good := string(testkit.ReadFile(t, filepath.Join(base, hash+".narinfo")))
	field := func(key string) string { // the line of key, with its '\n'
		i := strings.Index(good, key+": ")
		return good[i : i+strings.IndexByte(good[i:], '\n')+1]
	}
	without := func(key string) string { return strings.Replace(good, field(key), "", 1) }
	with := func(key, value string) string { return strings.Replace(good, field(key), key+": "+value+"\n", 1) }
	other := strings.Repeat("0", hashPartLen)
	for _, tt := range []struct {
		name, file, narinfo string
		link                bool // the .narinfo is a link to the file
		copy                bool // nix copy --from is the oracle
		disagree            string
	}{
		{name: "as Nix wrote it", narinfo: good},
		{name: "no space after StorePath's colon", narinfo: strings.Replace(good, "StorePath: ", "StorePath:", 1)},
		{name: "two spaces after StorePath's colon", narinfo: strings.Replace(good, "StorePath: ", "StorePath:  ", 1)},
		{name: "a tab after StorePath's colon", narinfo: strings.Replace(good, "StorePath: ", "StorePath:\t", 1)},
		{name: "space before StorePath's colon", narinfo: strings.Replace(good, "StorePath: ", "StorePath : ", 1)},
		{name: "space before StorePath", narinfo: strings.Replace(good, "StorePath: ", " StorePath: ", 1)},
		{name: "CRLF line ends", narinfo: strings.ReplaceAll(good, "\n", "\r\n")},
		{name: "no final line end", narinfo: strings.TrimSuffix(good, "\n")},
		{name: "a line without colon", narinfo: good + "junk\n"},
		{name: "a blank line swallows the next key", narinfo: strings.Replace(good, "Compression: ", "\nCompression: ", 1)},
		{name: "a blank line swallows StorePath", narinfo: "\n" + good},
		{name: "an empty field swallows the next line", narinfo: "Foo:\n" + good},
		{name: "StorePath twice, the last right", narinfo: "StorePath: /nix/store/" + other + "-x\n" + good},
		{name: "StorePath twice, the last wrong", narinfo: good + "StorePath: /nix/store/" + other + "-x\n", copy: true},
		{name: "StorePath of another hash", narinfo: with("StorePath", "/nix/store/"+other+"-"+name), copy: true},
		{name: "as Nix wrote it, copied", narinfo: good, copy: true},
		{name: "StorePath with a doubled slash", narinfo: with("StorePath", "/nix//store/"+hash+"-"+name)},
		{name: "StorePath through ..", narinfo: with("StorePath", "/nix/store/../store/"+hash+"-"+name)},
		{name: "StorePath in another store", narinfo: with("StorePath", "/gnu/store/"+hash+"-"+name)},
		{name: "StorePath relative", narinfo: with("StorePath", "nix/store/"+hash+"-"+name)},
		{name: "StorePath with _ after the hash", narinfo: with("StorePath", "/nix/store/"+hash+"_"+name)},
		{name: "StorePath with an empty name", narinfo: with("StorePath", "/nix/store/"+hash+"-")},
		{name: "StorePath with a space in the name", narinfo: with("StorePath", "/nix/store/"+hash+"-a b")},
		{name: "StorePath with a name of 211", narinfo: with("StorePath", "/nix/store/"+hash+"-"+strings.Repeat("n", 211))},
		{name: "StorePath with a name of 212", narinfo: with("StorePath", "/nix/store/"+hash+"-"+strings.Repeat("n", 212))},
		{name: "no StorePath", narinfo: without("StorePath")},
		{name: "no NarHash", narinfo: without("NarHash")},
		{name: "no URL", narinfo: without("URL")},
		{name: "empty URL", narinfo: with("URL", "")},
		{name: "no NarSize", narinfo: without("NarSize")},
		{name: "NarSize 0", narinfo: with("NarSize", "0")},
		{name: "NarSize not a number", narinfo: with("NarSize", "12x")},
		{name: "NarSize negative", narinfo: with("NarSize", "-1")},
		{name: "NarSize too large", narinfo: with("NarSize", "18446744073709551616")},
		{name: "NarSize with a plus sign", narinfo: with("NarSize", "+120")},
		{name: "NarSize with leading zeros", narinfo: with("NarSize", "0120")},
		{name: "NarSize with a space", narinfo: with("NarSize", " 120")},
		{name: "FileSize not a number", narinfo: with("FileSize", "x")},
		{name: "a name that is not a hash part is not Nix's", file: "short.narinfo", narinfo: "junk"},
		{name: "a hash part with e", file: "e" + hash[1:] + ".narinfo", narinfo: good},
		{name: "a link to a .narinfo", narinfo: good, link: true, disagree: "pkbf refuses a link"},
		{name: "a reference that is no store path", narinfo: with("References", "not-a-path"), disagree: "pkbf does not read References"},
	} {
		dir := filepath.Join(t.TempDir(), "cache")
		os.Mkdir(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "nix-cache-info"), []byte("StoreDir: /nix/store\n"), 0o644)
		file := tt.file
		if file == "" {
			file = hash + ".narinfo"
		}
		if tt.link {
			os.WriteFile(filepath.Join(dir, "target"), []byte(tt.narinfo), 0o644)
			os.Symlink("target", filepath.Join(dir, file))
		} else {
			os.WriteFile(filepath.Join(dir, file), []byte(tt.narinfo), 0o644)
		}
		out, nixErr := testkit.NixTry(env, "nix", "path-info", "--store", "file://"+dir, "--all")
		nixPaths := strings.Fields(out)
		if tt.copy {
			os.Mkdir(filepath.Join(dir, "nar"), 0o755)
			nars, _ := filepath.Glob(filepath.Join(base, "nar", "*"))
			for _, nar := range nars {
				os.Link(nar, filepath.Join(dir, "nar", filepath.Base(nar)))
			}
			_, nixErr = testkit.NixTry(env, "nix", "copy", "--from", "file://"+dir, "--to", "file://"+filepath.Join(filepath.Dir(dir), "copy"), storePath)
			nixPaths = []string{storePath}
		}
		paths, err := CachePaths(dir)
		agree := (nixErr != nil) == (err != nil) && (err != nil || slices.Equal(paths, nixPaths))
		switch {
		case tt.disagree == "" && !agree:
			t.Errorf("%s: Nix lists %q (%v); pkbf %q (%v)", tt.name, nixPaths, nixErr, paths, err)
		case tt.disagree != "" && agree:
			t.Errorf("%s: known disagreement (%s) is gone: Nix lists %q (%v); pkbf %q (%v)", tt.name, tt.disagree, nixPaths, nixErr, paths, err)
		case err != nil && !strings.HasPrefix(err.Error(), "nixbloom: "):
			t.Errorf("%s: error %q lacks the prefix", tt.name, err)
		}
	}
}
