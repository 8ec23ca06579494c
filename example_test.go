package pkbf_test

import (
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/pkbf/pkbf"
)

// Check one key against a filter file.
func ExampleOpen() {
	filter, err := pkbf.Open("testdata/example.pkbf")
	if err != nil {
		log.Fatal(err)
	}
	defer filter.Close()

	for _, name := range []string{"p256.cert.pem", "p384.cert.pem"} {
		data, err := os.ReadFile("testdata/keys/" + name)
		if err != nil {
			log.Fatal(err)
		}
		spki, err := pkbf.SPKI(data)
		if err != nil {
			log.Fatal(err)
		}
		if filter.Probably(spki) {
			fmt.Println(name, "is probably compromised: confirm online")
		} else {
			fmt.Println(name, "is not in the filter")
		}
	}
	// Output:
	// p256.cert.pem is probably compromised: confirm online
	// p384.cert.pem is not in the filter
}

// Build a filter sized for the expected number of keys, and save it.
func ExampleNew() {
	k, l, err := pkbf.Parameters(1000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	filter, err := pkbf.New(k, l)
	if err != nil {
		log.Fatal(err)
	}
	pub, _ := os.ReadFile("testdata/keys/p256.pub")
	added, err := filter.AddKey(pub) // an EC key: both point forms
	if err != nil {
		log.Fatal(err)
	}
	h := filter.Header()
	fmt.Printf("k %d, L %d: added %d encodings; %d entries, revision %d\n", k, l, added, h.EntryCount, h.Revision)
	// filter.WriteFile("my.pkbf") would save it atomically.
	// Output: k 3, L 14: added 2 encodings; 2 entries, revision 1
}

// Read every key of an authorized_keys file, each with where it came from.
// (The first key is testdata/keys/ed25519.pub; openssl gives its SPKI
// SHA-256 as b7fa1d77f8725a4c..., see testdata/keys/MANIFEST.)
func ExampleKeyScanner() {
	input := strings.NewReader(`# team keys
ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBswAqzIW47r2ex5K+XpaApknyxEeUQlYvsiWUXHw8KV alice
ssh-rsa AAAA-not-base64 bob
`)
	s := pkbf.NewKeyScanner(input)
	for s.Scan() {
		key := s.Key()
		spki, err := key.SPKI()
		if err != nil {
			fmt.Printf("%s: error: %v\n", key.Source(), err)
			continue
		}
		fmt.Printf("%s: %s\n", key.Source(), pkbf.Fingerprint(spki)[:16])
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
	data, _ := os.ReadFile("testdata/keys/p256.spki-compressed.der")
	spki, err := pkbf.SPKI(data)
	if err != nil {
		log.Fatal(err)
	}
	encodings, err := pkbf.Encodings(spki)
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

// Check keys in bulk: one call for many keys overlaps their memory
// latency on a filter larger than the CPU caches, with the answers of
// Contains (every encoding of each key).
func ExampleFilter_ContainsBatch() {
	filter, err := pkbf.Open("testdata/example.pkbf")
	if err != nil {
		log.Fatal(err)
	}
	defer filter.Close()

	// In testdata/example.pkbf: rsa2048, p256 and ed25519; not p384, rsa1024.
	names := []string{"p256.cert.pem", "p384.cert.pem", "rsa2048.spki.der", "rsa1024.cert.der", "ed25519.pub"}
	var spkis [][]byte
	for _, name := range names {
		data, err := os.ReadFile("testdata/keys/" + name)
		if err != nil {
			log.Fatal(err)
		}
		spki, err := pkbf.SPKI(data)
		if err != nil {
			log.Fatal(err)
		}
		spkis = append(spkis, spki)
	}
	answers := make([]bool, len(spkis))
	filter.ContainsBatch(spkis, answers)
	for i, name := range names {
		fmt.Println(name, answers[i])
	}
	// Output:
	// p256.cert.pem true
	// p384.cert.pem false
	// rsa2048.spki.der true
	// rsa1024.cert.der false
	// ed25519.pub true
}
