package pkbf

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keys"
)

// A filter holding any encoding of a key finds it, with Contains, from
// every form a file gives it in; and from no other key.
func TestContainsEncodings(t *testing.T) {
	files, _ := filepath.Glob("testdata/keys/*.pub")
	more, _ := filepath.Glob("testdata/keys/*.spki.*")
	files = append(files, more...)
	if len(files) < 8 {
		t.Fatalf("only %d key files", len(files))
	}
	spkis := map[string][]byte{}
	for _, name := range files {
		spki, err := SPKI(testkit.ReadFile(t, name))
		if err != nil {
			continue // a security key, say: not this test's business
		}
		spkis[name] = spki
	}
	for name, spki := range spkis {
		encs, err := keys.Encodings(spki)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, stored := range encs {
			f, _ := New(4, 16)
			f.Add(stored)
			i := 0
			for v := range f.Check(context.Background(), derInput(encs), CheckOptions{}) {
				if !f.Contains(encs[i]) || !v.Probably {
					t.Errorf("%s: a filter holding %x does not contain %x", name, stored[:8], encs[i][:8])
				}
				i++
			}
			if i != len(encs) {
				t.Errorf("%s: %d verdicts for %d encodings", name, i, len(encs))
			}
			if !f.Contains(spki) {
				t.Errorf("%s: a filter holding an encoding does not contain the file's", name)
			}
			for other, o := range spkis {
				if keys.Fingerprint(o) != keys.Fingerprint(spki) && filepath.Base(other)[:3] != filepath.Base(name)[:3] && f.Contains(o) {
					t.Logf("%s: false positive for %s (rare at this size)", name, other)
				}
			}
		}
	}
}

// Looking up a key already in canonical form allocates nothing.
func TestContainsAllocs(t *testing.T) {
	f, _ := New(4, 16)
	for _, name := range []string{"rsa2048.spki.der", "p256.spki.der"} {
		spki, err := SPKI(testkit.ReadFile(t, filepath.Join("testdata/keys", name)))
		if err != nil {
			t.Fatal(err)
		}
		if allocs := testing.AllocsPerRun(100, func() { f.Contains(spki) }); allocs != 0 {
			t.Errorf("Contains of %s: %v allocations", name, allocs)
		}
	}
}
