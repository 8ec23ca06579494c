package curves

import (
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// Every entry is a named-curve OID and an explicit ECParameters SEQUENCE
// over a prime or binary field, and names and OIDs are unique.
func TestTableEntries(t *testing.T) {
	names, oids := map[string]bool{}, map[string]bool{}
	for _, c := range Table {
		oid, err1 := hex.DecodeString(c.OID)
		explicit, err2 := hex.DecodeString(c.Explicit)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: not hex", c.Name)
		}
		s := cryptobyte.String(oid)
		var o cryptobyte.String
		if !s.ReadASN1(&o, cbasn1.OBJECT_IDENTIFIER) || !s.Empty() || len(o) == 0 {
			t.Errorf("%s: OID %x is not one DER OBJECT IDENTIFIER", c.Name, oid)
		}
		s = cryptobyte.String(explicit)
		var params cryptobyte.String
		if !s.ReadASN1(&params, cbasn1.SEQUENCE) || !s.Empty() || !strings.Contains(c.Explicit, "06072a8648ce3d0101") && !strings.Contains(c.Explicit, "06072a8648ce3d0102") {
			t.Errorf("%s: explicit parameters are not one SEQUENCE over a prime or binary field", c.Name)
		}
		if names[c.Name] || oids[c.OID] {
			t.Errorf("%s: name or OID %s twice", c.Name, c.OID)
		}
		names[c.Name], oids[c.OID] = true, true
	}
	if len(Table) < 60 || !names["prime256v1"] || !names["secp384r1"] || !names["secp521r1"] || !names["sect233k1"] || !names["c2pnb368w1"] {
		t.Errorf("%d curves; the NIST or binary curves missing?", len(Table))
	}
}

// The generator, run with this machine's openssl, writes the table that is
// checked in (bar its first line, which names the openssl version). It
// runs openssl about 160 times, seconds of work: .ci/run asks for it with
// PKBF_CHECK_GENERATED=1.
func TestGeneratorReproducesTable(t *testing.T) {
	if os.Getenv("PKBF_CHECK_GENERATED") != "1" {
		t.Skip("set PKBF_CHECK_GENERATED=1 to run gen.sh and compare its table")
	}
	for _, tool := range []string{"openssl", "xxd", "gofmt"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here to run gen.sh", tool)
		}
	}
	out := filepath.Join(t.TempDir(), "table.go")
	if b, err := exec.Command("bash", "gen.sh", out).CombinedOutput(); err != nil {
		t.Fatalf("gen.sh: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("table.go")
	if err != nil {
		t.Fatal(err)
	}
	_, gotBody, _ := strings.Cut(string(got), "\n")
	_, wantBody, _ := strings.Cut(string(want), "\n")
	if gotBody != wantBody {
		t.Errorf("gen.sh writes a different table from table.go: run go generate ./internal/curves")
	}
}
