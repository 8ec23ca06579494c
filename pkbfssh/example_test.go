package pkbfssh_test

import (
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/pkbfssh"
)

// FilterLines keeps the lines sshd may use and the filter lacks the key
// of; a line of type rsa-sha2-256, or with a vertical tab in its base64,
// is read as sshd reads it.
func ExampleFilterLines() {
	ed, _ := os.ReadFile("../testdata/keys/ed25519.pub")
	p256, _ := os.ReadFile("../testdata/keys/p256.pub")
	w, err := pkbf.New(4, 16)
	if err != nil {
		log.Fatal(err)
	}
	keycheck.AddKey(w, p256) // the filter holds the P-256 key
	edFields, p256Fields := strings.Fields(string(ed)), strings.Fields(string(p256))
	file := "# keys\n" +
		edFields[0] + " " + edFields[1] + " laptop\n" +
		p256Fields[0] + " " + p256Fields[1][:30] + "\v" + p256Fields[1][30:] + " desktop\n" +
		"ssh-ed25519 AAAAnot-base64 old\n"
	r, err := pkbfssh.FilterLines(os.Stdout, keycheck.New(w, keycheck.Options{}), []byte(file), nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range r.Compromised {
		fmt.Printf("left out line %d: %s %s\n", l.Num, l.Key.Fingerprint, l.Comment)
	}
	fmt.Printf("left out %d unreadable line(s), the first line %d\n", r.Unreadable, r.FirstUnreadable.Num)
	// Output:
	// # keys
	// ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBswAqzIW47r2ex5K+XpaApknyxEeUQlYvsiWUXHw8KV laptop
	// left out line 3: SHA256:EN1Y0pVuDJMmMxjHMcnedCPeSoIKrux8676onBqa64s desktop
	// left out 1 unreadable line(s), the first line 4
}
