package pkbf_test

import (
	"fmt"
	"log"
	"os"

	"github.com/pkbf/pkbf"
)

// Query a filter file with DER SubjectPublicKeyInfos. Probably tests the
// exact bytes it is given; package keycheck reads keys in every form and
// looks each up under every encoding a filter may hold it in.
func ExampleOpen() {
	filter, err := pkbf.Open("testdata/example.pkbf")
	if err != nil {
		log.Fatal(err)
	}
	defer filter.Close()

	for _, name := range []string{"p256.spki.der", "p384.spki.der"} {
		spki, err := os.ReadFile("testdata/keys/" + name)
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
	// p256.spki.der is probably compromised: confirm online
	// p384.spki.der is not in the filter
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
	spki, _ := os.ReadFile("testdata/keys/p256.spki.der")
	added, err := filter.Add(spki) // these bytes; keycheck.AddKey adds every encoding
	if err != nil {
		log.Fatal(err)
	}
	h := filter.Header()
	fmt.Printf("k %d, L %d: added %v; %d entry, revision %d\n", k, l, added, h.EntryCount, h.Revision)
	// filter.WriteFile("my.pkbf") would save it atomically.
	// Output: k 3, L 14: added true; 1 entry, revision 1
}
