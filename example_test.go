package pkbf_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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

// Check every key of some files: each key is parsed once, looked up under
// every encoding, in batches and in parallel, and gets a verdict with its
// place in its file.
func ExampleFilter_Check() {
	filter, err := pkbf.Open("testdata/example.pkbf")
	if err != nil {
		log.Fatal(err)
	}
	defer filter.Close()

	// In testdata/example.pkbf: rsa2048, p256 and ed25519; not p384, rsa1024.
	files := pkbf.Files("testdata/keys/p256.cert.pem", "testdata/keys/p384.pub", "testdata/keys/rsa1024.cert.der", "testdata/keys/missing.pem")
	for v := range filter.Check(context.Background(), files, pkbf.CheckOptions{}) {
		if v.Err != nil {
			fmt.Println(v.Source(), "error:", errors.Is(v.Err, fs.ErrNotExist))
			continue
		}
		fmt.Println(v.Source(), v.Status(), v.Fingerprint[:16])
	}
	// Output:
	// testdata/keys/p256.cert.pem: block 1 (line 1) probably 6069088c7559ff46
	// testdata/keys/p384.pub: line 1 no 019fbc8a37ba5054
	// testdata/keys/rsa1024.cert.der: object 1 (byte 0) no 4ed1f61a8da754f0
	// testdata/keys/missing.pem error: true
}
