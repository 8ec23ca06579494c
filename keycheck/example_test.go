package keycheck_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
)

// Check one key in any form, for a gate: the verdict is Probably or Err,
// never a "no" for what cannot be checked. The fingerprints are openssl's
// (openssl rsa -inform DER -in rsa2048.pkcs1.der -pubout -outform DER |
// sha256sum).
func ExampleChecker_CheckKey() {
	filter, err := pkbf.Open("../testdata/example.pkbf")
	if err != nil {
		log.Fatal(err)
	}
	defer filter.Close()
	checker := keycheck.New(filter, keycheck.Options{})

	for _, name := range []string{"p256.cert.pem", "p384.pub", "rsa2048.pkcs1.der"} {
		data, err := os.ReadFile("../testdata/keys/" + name)
		if err != nil {
			log.Fatal(err)
		}
		switch v := checker.CheckKey(data); {
		case v.Err != nil:
			fmt.Println(name, "cannot be checked:", v.Err)
		case v.Probably:
			fmt.Println(name, "is probably compromised:", v.Key.Fingerprint[:16])
		default:
			fmt.Println(name, "is not in the filter")
		}
	}
	// Output:
	// p256.cert.pem is probably compromised: 6069088c7559ff46
	// p384.pub is not in the filter
	// rsa2048.pkcs1.der is probably compromised: e4bea90242e63d69
}

// Check every key of some files: each key is parsed once, looked up under
// every encoding, in batches and in parallel, and gets a verdict with its
// place in its file.
func ExampleChecker_Check() {
	filter, err := pkbf.Open("../testdata/example.pkbf")
	if err != nil {
		log.Fatal(err)
	}
	defer filter.Close()
	checker := keycheck.New(filter, keycheck.Options{})

	// In example.pkbf: rsa2048, p256 and ed25519; not p384, rsa1024.
	files := keycheck.Files("../testdata/keys/p256.cert.pem", "../testdata/keys/p384.pub", "../testdata/keys/rsa1024.cert.der", "../testdata/keys/missing.pem")
	for v := range checker.Check(context.Background(), files) {
		if v.Err != nil {
			fmt.Println(v.Source, "error:", errors.Is(v.Err, fs.ErrNotExist))
			continue
		}
		fmt.Println(v.Source, v.Status(), v.Key.Fingerprint[:16])
	}
	// Output:
	// ../testdata/keys/p256.cert.pem: block 1 (line 1) probably 6069088c7559ff46
	// ../testdata/keys/p384.pub: line 1 no 019fbc8a37ba5054
	// ../testdata/keys/rsa1024.cert.der: object 1 (byte 0) no 4ed1f61a8da754f0
	// ../testdata/keys/missing.pem error: true
}

// Add a key to a filter under every encoding a filter may hold it in, as
// the publisher adds keys.
func ExampleAddKey() {
	filter, err := pkbf.New(3, 14)
	if err != nil {
		log.Fatal(err)
	}
	pub, _ := os.ReadFile("../testdata/keys/p256.pub")
	added, err := keycheck.AddKey(filter, pub) // an EC key: both point forms
	if err != nil {
		log.Fatal(err)
	}
	h := filter.Header()
	fmt.Printf("added %d encodings; %d entries, revision %d\n", added, h.EntryCount, h.Revision)
	// Output: added 2 encodings; 2 entries, revision 1
}
