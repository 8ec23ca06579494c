package nixbloom

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	g, _ := New(10, 0.1)
	g.Add("/nix/store/" + strings.Repeat("0", 32) + "-x")
	var buf bytes.Buffer
	g.WriteTo(&buf)
	f.Add(buf.Bytes())
	f.Add(append(header("NixBloom", 1, 64, 8), 0xff))
	f.Fuzz(func(t *testing.T, b []byte) {
		flt, err := Parse(b)
		if err != nil {
			if flt != nil || !errors.Is(err, ErrInvalidFilter) || !strings.HasPrefix(err.Error(), "nixbloom: ") {
				t.Fatalf("Parse = %v, %v", flt, err)
			}
			return
		}
		var out bytes.Buffer
		if _, err := flt.WriteTo(&out); err != nil || !bytes.Equal(out.Bytes(), b) {
			t.Fatal("a parsed filter does not write back to its input")
		}
		flt.MayContain(strings.Repeat("z", 32))
	})
}

func FuzzMayContain(f *testing.F) {
	flt, _ := New(100, 0.01)
	f.Add("/nix/store/" + strings.Repeat("0", 32) + "-hello")
	f.Add(strings.Repeat("z", 32))
	f.Add("e" + strings.Repeat("0", 31))
	f.Fuzz(func(t *testing.T, path string) {
		if err := flt.Add(path); err != nil {
			if !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("Add(%q) = %v", path, err)
			}
			return
		}
		if ok, err := flt.MayContain(path); !ok || err != nil {
			t.Fatalf("MayContain(%q) = %v, %v after Add", path, ok, err)
		}
	})
}

// parseNarinfo never panics, and fails with the package's prefix; what it
// takes has the hash part and name of a store path in the store.
func FuzzNarinfo(f *testing.F) {
	f.Add([]byte("StorePath: /nix/store/" + strings.Repeat("0", 32) + "-x\nURL: u\nNarHash: h\nNarSize: 1\n"))
	f.Add([]byte("Foo:\nStorePath: /nix/store/x\n"))
	f.Add([]byte(":"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ni, err := parseNarinfo(b, "/nix/store", "x.narinfo")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "nixbloom: ") {
				t.Fatal(err)
			}
			return
		}
		if ni.storePath != "/nix/store/"+ni.hashPart+ni.storePath[len("/nix/store/")+hashPartLen:] || ni.name == "" {
			t.Fatalf("%+v", ni)
		}
		if _, err := HashPart(ni.hashPart); err != nil {
			t.Fatal(err)
		}
	})
}
