package keys_test

import (
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/pkbf/pkbf/keys"
)

// Read every key of an authorized_keys file, each with where it came from.
// (The first key is testdata/keys/ed25519.pub; openssl gives its SPKI
// SHA-256 as b7fa1d77f8725a4c..., see testdata/keys/MANIFEST.)
func ExampleScanner() {
	input := strings.NewReader(`# team keys
ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBswAqzIW47r2ex5K+XpaApknyxEeUQlYvsiWUXHw8KV alice
ssh-rsa AAAA-not-base64 bob
`)
	s := keys.NewScanner(input)
	for s.Scan() {
		key := s.Key()
		spki, err := key.SPKI()
		if err != nil {
			fmt.Printf("%s: error: %v\n", key.Source(), err)
			continue
		}
		fmt.Printf("%s: %s\n", key.Source(), keys.Fingerprint(spki)[:16])
	}
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// line 2: b7fa1d77f8725a4c
	// line 3: error: pkbf: invalid key: OpenSSH ssh-rsa key is not valid base64: illegal base64 data at input byte 4
}

// The publisher stores EC keys under both point encodings.
func ExampleEncodings() {
	data, _ := os.ReadFile("../testdata/keys/p256.spki-compressed.der")
	spki, err := keys.SPKI(data)
	if err != nil {
		log.Fatal(err)
	}
	encodings, err := keys.Encodings(spki)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range encodings {
		fmt.Printf("%d-byte SPKI\n", len(e))
	}
	// Output:
	// 91-byte SPKI
	// 59-byte SPKI
}
