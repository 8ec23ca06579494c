package weakkeys

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"math/big"
	mrand "math/rand"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// The full-size Debian file the benchmarks use: the published lists
// cannot be had here, so it is built from generated lists of the same
// size and shape: the CA/B Forum's SHA-256 lists (sha256_modulus_<bits>.csv
// for RSA-2048, 3072, 4096 and 8192, sha256_xcoord_<curve>.csv for P-256,
// P-384 and P-521), each 3 architectures × 3 random-state settings ×
// 32768 PIDs = 294,912 sorted lines of 64 lowercase hex digits, and
// openssl-vulnkey lists (blacklist.RSA-2048, blacklist.RSA-4096) of as
// many 20-digit lines.
const fullListLines = 3 * 3 * 32768

var fullLists = []string{
	"sha256_modulus_2048.csv", "sha256_modulus_3072.csv", "sha256_modulus_4096.csv", "sha256_modulus_8192.csv",
	"sha256_xcoord_P-256.csv", "sha256_xcoord_P-384.csv", "sha256_xcoord_P-521.csv",
	"blacklist.RSA-2048", "blacklist.RSA-4096",
}

var fullDebian = struct {
	once      sync.Once
	dir, file string
	err       error
}{}

// TestMain removes the full-size lists the benchmarks make.
func TestMain(m *testing.M) {
	code := m.Run()
	if fullDebian.dir != "" {
		os.RemoveAll(fullDebian.dir)
	}
	os.Exit(code)
}

// fullSizeLists writes the generated lists once per test binary and
// returns their directory and the Debian file built from them.
func fullSizeLists(b *testing.B) (dir, file string) {
	fullDebian.once.Do(func() {
		d, err := os.MkdirTemp("", "weakkeys-bench")
		if err != nil {
			fullDebian.err = err
			return
		}
		fullDebian.dir = d
		r := mrand.New(mrand.NewSource(17))
		var bld Builder
		for _, name := range fullLists {
			l, _ := listForFile(name)
			path := filepath.Join(d, name)
			if err := writeGeneratedList(path, r, fullListLines, hashDigits(l.Scheme)); err != nil {
				fullDebian.err = err
				return
			}
			if err := bld.ReadFile(path); err != nil {
				fullDebian.err = err
				return
			}
		}
		fullDebian.file = filepath.Join(d, "debian.pkwk")
		fullDebian.err = bld.WriteFile(fullDebian.file)
	})
	if fullDebian.err != nil {
		b.Fatal(fullDebian.err)
	}
	return fullDebian.dir, fullDebian.file
}

// writeGeneratedList writes n random hashes, sorted, as a published list.
func writeGeneratedList(path string, r *mrand.Rand, n, digits int) error {
	hashes := make([][]byte, n)
	for i := range hashes {
		hashes[i] = make([]byte, digits/2)
		r.Read(hashes[i])
	}
	slices.SortFunc(hashes, bytes.Compare) // as published
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, h := range hashes {
		fmt.Fprintln(w, hex.EncodeToString(h))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// benchModuli are moduli with no small factor: for the checks, as much
// work as real keys (nothing stops them early). The benchmarks take them
// in turn from a thousand, so that the Debian lists' entries a lookup
// reads are not all in the CPU's caches, as for a CA's stream of new keys.
func benchModuli(n, bits int) []*big.Int {
	r := mrand.New(mrand.NewSource(18))
	out := make([]*big.Int, n)
	for i := range out {
		out[i] = roughModulus(r, bits)
	}
	return out
}

// BenchmarkCheck is the whole check of a key: its SPKI read, every rule,
// the Debian lookup in the full-size file. For RSA, x-gcd is its time over
// that of one math/big GCD of the same moduli with the product of the
// primes below 752, the floor the check is held to (at most 2): the GCDs
// are timed in the same run, in turns with the checks (256 of each), so
// that a noisy machine slows both alike.
func BenchmarkCheck(b *testing.B) {
	_, file := fullSizeLists(b)
	d, err := OpenDebian(file)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	c := mustNew(b, WithDebian(d))
	for _, bits := range []int{2048, 3072, 4096} {
		b.Run(fmt.Sprintf("RSA%d", bits), func(b *testing.B) {
			moduli := benchModuli(1024, bits)
			spkis := make([][]byte, len(moduli))
			for i, n := range moduli {
				spkis[i] = rsaSPKIOf(n, f4)
			}
			var gcd time.Duration
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if res, err := c.Check(spkis[i%len(spkis)]); err != nil || res.Findings != nil {
					b.Fatal(res, err)
				}
				if i++; i%256 == 0 {
					b.StopTimer()
					gcd += gcdTime(moduli, i-256, 256)
					b.StartTimer()
				}
			}
			gcd += gcdTime(moduli, i-i%256, i%256)
			b.ReportMetric(float64(b.Elapsed())/float64(gcd), "x-gcd")
		})
	}
	b.Run("P256", func(b *testing.B) {
		var spkis [][]byte
		for range 64 {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			spki, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
			spkis = append(spkis, spki)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if res, err := c.Check(spkis[i%len(spkis)]); err != nil || res.Findings != nil {
				b.Fatal(res, err)
			}
			i++
		}
	})
}

// gcdTime times the GCDs of moduli from, on, count of them, with the
// primes' product.
func gcdTime(moduli []*big.Int, from, count int) time.Duration {
	var z big.Int
	start := time.Now()
	for i := from; i < from+count; i++ {
		z.GCD(nil, nil, moduli[i%len(moduli)], smallPrimeProduct)
	}
	return time.Since(start)
}

// BenchmarkFloor is what the check is measured against: one GCD of an
// RSA-2048 modulus with the product of the 133 primes below 752.
func BenchmarkFloor(b *testing.B) {
	b.Run("GCD752", func(b *testing.B) {
		moduli := benchModuli(1024, 2048)
		var z big.Int
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			z.GCD(nil, nil, moduli[i%len(moduli)], smallPrimeProduct)
			i++
		}
	})
}

// BenchmarkParts times each part of an RSA-2048 check alone, and the
// naive ways of doing the arithmetic ones with math/big, for comparison.
// DebianSearch is the two RSA-2048 lists' searches alone, of random
// hashes: the entries they read are not in the caches, as for a stream of
// new keys.
func BenchmarkParts(b *testing.B) {
	moduli := benchModuli(1024, 2048)
	s := new(scratch)
	b.Run("SmallPrimes", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			smallPrimeRemainders(moduli[i%len(moduli)], s)
			i++
		}
	})
	b.Run("SmallPrimesNaive", func(b *testing.B) {
		primes := make([]*big.Int, len(smallPrimes))
		for i, p := range smallPrimes {
			primes[i] = big.NewInt(int64(p))
		}
		var r big.Int
		i := 0
		for b.Loop() {
			for _, p := range primes {
				r.Mod(moduli[i%len(moduli)], p)
			}
			i++
		}
	})
	b.Run("ROCA", func(b *testing.B) {
		rems := make([][rocaPrimes]uint32, len(moduli))
		for i, n := range moduli {
			smallPrimeRemainders(n, s)
			copy(rems[i][:], s.primeRem[:rocaPrimes])
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			isROCA(rems[i%len(rems)][:])
			i++
		}
	})
	b.Run("Fermat", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if fermatRound(moduli[i%len(moduli)], defaultRounds, s) != 0 {
				b.Fatal("found")
			}
			i++
		}
	})
	b.Run("FermatNaive", func(b *testing.B) {
		i := 0
		for b.Loop() {
			naiveFermat(moduli[i%len(moduli)], defaultRounds)
			i++
		}
	})
	b.Run("Debian", func(b *testing.B) {
		_, file := fullSizeLists(b)
		d, err := OpenDebian(file)
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		mags := make([][]byte, len(moduli))
		for i, n := range moduli {
			mags[i] = n.Bytes()
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.hashes.reset(mags[i%len(mags)])
			if found, covered, err := d.lookup(s.found[:0], coverage{typeRSA, 2048}, &s.hashes); err != nil || !covered || len(found) != 0 {
				b.Fatal(found, covered, err)
			}
			i++
		}
	})
	b.Run("DebianSearch", func(b *testing.B) {
		_, file := fullSizeLists(b)
		d, err := OpenDebian(file)
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		var lists []*debianList
		for i := range d.lists {
			if d.lists[i].cover == (coverage{typeRSA, 2048}) {
				lists = append(lists, &d.lists[i])
			}
		}
		r := mrand.New(mrand.NewSource(21))
		var h [32]byte
		b.ReportAllocs()
		for b.Loop() {
			r.Read(h[:])
			for _, l := range lists {
				if l.contains(h[:]) {
					b.Fatalf("%x found", h)
				}
			}
		}
	})
}

// BenchmarkDebianFile times building the full-size file from the lists'
// text (ReadFile of each, WriteFile) and opening it (mapping, checksum,
// every list's order), and reports its size.
func BenchmarkDebianFile(b *testing.B) {
	dir, file := fullSizeLists(b)
	b.Run("Build", func(b *testing.B) {
		out := filepath.Join(b.TempDir(), "debian.pkwk")
		for b.Loop() {
			var bld Builder
			for _, name := range fullLists {
				if err := bld.ReadFile(filepath.Join(dir, name)); err != nil {
					b.Fatal(err)
				}
			}
			if err := bld.WriteFile(out); err != nil {
				b.Fatal(err)
			}
		}
		fi, err := os.Stat(out)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(fi.Size())/1e6, "file-MB")
	})
	b.Run("Open", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, err := OpenDebian(file)
			if err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
	})
}
