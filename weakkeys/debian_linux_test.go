package weakkeys

import (
	"math/big"
	mrand "math/rand"
	"os"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

// TestCheckFileCutShort: a Debian file cut short while it is mapped makes
// Check fail with an error, not the process with a fault.
func TestCheckFileCutShort(t *testing.T) {
	var b Builder
	if err := b.ReadList(List{Name: "m", Key: "RSA-2048", Scheme: SHA256Modulus}, strings.NewReader(randomHashes(t, 100000, 64))); err != nil {
		t.Fatal(err)
	}
	path := writeDebian(t, &b)
	d := openDebian(t, path)
	if !d.file.Mapped() {
		t.Skip("the file is read, not mapped, here")
	}
	c := mustNew(t, WithDebian(d))
	spki := rsaSPKIOf(roughModulus(mrand.New(mrand.NewSource(16)), 2048), big.NewInt(65537))
	if _, err := c.Check(spki); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	res, err := c.Check(spki)
	if err == nil {
		t.Fatalf("Check after the file was cut = %v, want an error", res.Findings)
	}
	testkit.CheckErr(t, err, ErrInvalidFile)
	if !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), "cut short") {
		t.Fatalf("error %q does not name the file and what happened", err)
	}
}
