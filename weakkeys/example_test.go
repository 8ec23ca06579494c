package weakkeys_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log"
	"math/big"
	"os"
	"path/filepath"
	"strings"

	"github.com/pkbf/pkbf/weakkeys"
)

// A Debian file built from a published list, and a key looked up in it.
func Example() {
	// An RSA-2048 modulus, and a list that holds its hash as the CA/B
	// Forum's sha256_modulus_2048.csv would.
	n := new(big.Int).Lsh(big.NewInt(1), 2047)
	n.Add(n, big.NewInt(1))
	sum := sha256.Sum256(n.Bytes())
	list := hex.EncodeToString(sum[:]) + "\n"

	var b weakkeys.Builder
	err := b.ReadList(weakkeys.List{Name: "sha256_modulus_2048.csv", Key: "RSA-2048", Scheme: weakkeys.SHA256Modulus}, strings.NewReader(list))
	if err != nil {
		log.Fatal(err)
	}
	dir, _ := os.MkdirTemp("", "weakkeys")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "debian.pkwk")
	if err := b.WriteFile(path); err != nil {
		log.Fatal(err)
	}

	debian, err := weakkeys.OpenDebian(path)
	if err != nil {
		log.Fatal(err)
	}
	defer debian.Close()
	checker, err := weakkeys.New(weakkeys.WithDebian(debian))
	if err != nil {
		log.Fatal(err)
	}
	res, err := checker.CheckModulus(n.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range res.Findings {
		fmt.Println(f.Rule, f.Detail)
	}
	// Output:
	// small-factor 3
	// small-factor 179
	// debian-weak sha256_modulus_2048.csv
}

func ExampleFinding() {
	checker, err := weakkeys.New()
	if err != nil {
		log.Fatal(err)
	}
	// 2^2048 - 1, a modulus of 2048 bits with small factors.
	n := new(big.Int).Lsh(big.NewInt(1), 2048)
	n.Sub(n, big.NewInt(1))
	res, err := checker.CheckModulus(n.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Findings[0])
	// Output:
	// small-factor: RSA modulus is divisible by 3: BR 6.1.6 says it SHOULD have no factors smaller than 752
}
