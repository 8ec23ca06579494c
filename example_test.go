package pkbf_test

import (
	"fmt"
	"log"
	"os"

	"github.com/pkbf/pkbf"
)

// Check keys against a filter file. Contains looks under every encoding a
// filter may hold the key in; Probably would test only the exact bytes.
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
		if filter.Contains(spki) {
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
