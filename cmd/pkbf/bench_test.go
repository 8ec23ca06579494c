package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/weakkeys"
)

// certCorpus makes n distinct certificates shaped like web server ones:
// a P-256 or RSA-2048 key (one in four RSA), signed by an RSA-2048 CA, with
// a dozen DNS names, about 1.3 KB of DER each.
func certCorpus(b *testing.B, n int) [][]byte {
	b.Helper()
	ca, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pkbf bench CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	rsaLeaf, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	var ders [][]byte
	for i := range n {
		var pub any
		if i%4 == 0 {
			pub = &rsaLeaf.PublicKey // one RSA key is enough: keygen is slow
		} else {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			pub = &k.PublicKey
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: fmt.Sprintf("host%d.example.com", i)},
			NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
		for j := range 12 {
			tmpl.DNSNames = append(tmpl.DNSNames, fmt.Sprintf("www%d.host%d.example.com", j, i))
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, pub, ca)
		if err != nil {
			b.Fatal(err)
		}
		ders = append(ders, der)
	}
	return ders
}

// benchInputs caches each benchmark's input file: the benchmark function
// runs more than once, and making the input is slower than checking it.
var benchInputs = map[string]string{}

// benchCheck runs "pkbf check" on a file made of n objects by write, and
// reports keys per second.
func benchCheck(b *testing.B, n int, write func(w io.Writer, i int)) {
	benchCheckFilter(b, "../../testdata/example.pkbf", n, write)
}

// benchCheckFilter is benchCheck against the given filter; exit status 1
// (a key probably in the filter) is fine.
func benchCheckFilter(b *testing.B, filter string, n int, write func(w io.Writer, i int)) {
	path, ok := benchInputs[b.Name()]
	if !ok {
		dir, err := os.MkdirTemp("", "pkbf-bench-")
		if err != nil {
			b.Fatal(err)
		}
		path = filepath.Join(dir, "input")
		var buf bytes.Buffer
		for i := range n {
			write(&buf, i)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		benchInputs[b.Name()] = path
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	start := time.Now()
	for b.Loop() {
		var stderr bytes.Buffer
		if code := run([]string{"check", filter, path}, nil, io.Discard, &stderr); code != 0 && code != 1 {
			b.Fatalf("exit %d: %s", code, stderr.String())
		}
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "keys/s")
}

// TestMain removes the benchmarks' input files. With PKBF_RUN_AS_COMMAND
// set, the test binary is the pkbf command instead (main, with the
// arguments after "--"), for tests that need real processes.
func TestMain(m *testing.M) {
	if os.Getenv("PKBF_RUN_AS_COMMAND") != "" {
		args := os.Args[1:]
		for i, a := range args {
			if a == "--" {
				args = args[i+1:]
				break
			}
		}
		os.Args = append([]string{"pkbf"}, args...)
		main()
	}
	code := m.Run()
	for _, path := range benchInputs {
		os.RemoveAll(filepath.Dir(path))
	}
	os.Exit(code)
}

const benchObjects = 100_000

// BenchmarkCheckPEMCertificates: one large concatenated PEM file of
// certificates (512 distinct ones, cycled).
func BenchmarkCheckPEMCertificates(b *testing.B) {
	var pems [][]byte
	benchCheck(b, benchObjects, func(w io.Writer, i int) {
		if pems == nil {
			for _, der := range certCorpus(b, 512) {
				pems = append(pems, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
			}
		}
		w.Write(pems[i%len(pems)])
	})
}

// BenchmarkCheckDERPublicKeys: concatenated DER SubjectPublicKeyInfos.
func BenchmarkCheckDERPublicKeys(b *testing.B) {
	var spkis [][]byte
	benchCheck(b, benchObjects, func(w io.Writer, i int) {
		for len(spkis) < 512 {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
			spkis = append(spkis, der)
		}
		w.Write(spkis[i%len(spkis)])
	})
}

// BenchmarkCheckAuthorizedKeys: an authorized_keys file of Ed25519, ECDSA
// and RSA keys with comments.
func BenchmarkCheckAuthorizedKeys(b *testing.B) {
	var lines [][]byte
	benchCheck(b, benchObjects, func(w io.Writer, i int) {
		if lines == nil {
			rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
			for j := range 512 {
				var pub any = &rsaKey.PublicKey
				if j%4 != 0 {
					k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
					pub = &k.PublicKey
				}
				sp, err := ssh.NewPublicKey(pub)
				if err != nil {
					b.Fatal(err)
				}
				lines = append(lines, append(bytes.TrimSpace(ssh.MarshalAuthorizedKey(sp)), fmt.Sprintf(" user%d@example.com\n", j)...))
			}
		}
		w.Write(lines[i%len(lines)])
	})
}

// benchFilterFile writes a filter of 2^l bits (k 12) with half its bits
// set at random, once per size, and returns its path.
func benchFilterFile(b *testing.B, l uint8) string {
	name := fmt.Sprintf("filter-%d", l)
	if path, ok := benchInputs[name]; ok {
		return path
	}
	dir, err := os.MkdirTemp("", "pkbf-bench-")
	if err != nil {
		b.Fatal(err)
	}
	h := pkbf.Header{HashCount: 12, HashLength: l}
	data, _ := h.AppendBinary(nil)
	data = append(data, make([]byte, h.Bits()/8)...)
	r := mrand.New(mrand.NewPCG(5, 6))
	for i := 24; i < len(data); i += 8 {
		binary.LittleEndian.PutUint64(data[i:], r.Uint64())
	}
	path := filepath.Join(dir, "filter.pkbf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	benchInputs[name] = path
	return path
}

// BenchmarkCheck runs check, as a process of its own (this test binary
// turned into the command), on 200 000
// distinct objects of each common form against half-full 1 MiB and 256
// MiB filters (k 12), verdicts written to /dev/null, and sets it against
// its floor, measured in the same run on the same objects and filter: what
// any checker must do for one object, one at a time, in one goroutine.
// For a PEM certificate: decode its base64 (line by line, which takes
// Go's fast path for whole quanta), find its SPKI (pkbf.SPKI's walk of the
// DER), SHA-256 it (the fingerprint check prints) and query the filter for
// each of the key's encodings (an EC key's other point form too, built by
// keys.Forms: a filter may hold either). For a DER SPKI: SHA-256 and the
// queries. For an authorized_keys line: read the key into an SPKI
// (keys.SPKI: base64 and the SSH wire format), SHA-256 the SSH blob and
// the SPKI (check prints both fingerprints) and query. It reports, for
// check with GOMAXPROCS 1 and with as many as the machine has CPUs (it
// must use them all; the benchmark's -cpu would not do: it sets the
// benchmark's GOMAXPROCS, not the command's):
//   - keys/s, objects over the whole run's time;
//   - start-ms, the time of a run on an empty input (process start, the
//     filter opened, the exit), timed alternately with the whole runs;
//   - floor-ns, the floor per object;
//   - x-floor, check's time per object, the whole run less start-ms over
//     the objects, over the floor's;
//   - x-whole, the whole run's time over the objects, over the floor's.
//
// A process of its own, because that is what users run: its collector
// works with check's own small heap, not with the benchmark's corpus
// beside it, which made an in-process run look faster than check is.
//
// The objects are made from a few templates with a counter written into
// each one's public key (RSA modulus, EC point, Ed25519 key): distinct
// keys at no cost of key generation or signing (check verifies no
// signature), whose filter lines do not sit in the caches from one
// object to the next.
func BenchmarkCheck(b *testing.B) {
	const n = 200_000
	for _, form := range []struct {
		name  string
		make  func(b *testing.B, n int) [][]byte
		floor func(f *pkbf.Filter, object []byte) bool
	}{
		{"PEMCertificates", pemCertificates, pemCertificateFloor},
		{"DERPublicKeys", derPublicKeys, derPublicKeyFloor},
		{"AuthorizedKeys", authorizedKeys, authorizedKeyFloor},
	} {
		var input string
		var objects [][]byte
		for _, l := range []uint8{23, 31} {
			b.Run(fmt.Sprintf("%s/%dMiB", form.name, (1<<l)>>23), func(b *testing.B) {
				if objects == nil {
					objects = form.make(b, n)
					input = writeInput(b, objects)
				}
				filter := benchFilterFile(b, l)
				f, err := pkbf.Open(filter)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				floor := floorPerObject(b, f, objects, form.floor)
				empty := writeInput(b, nil)
				for _, procs := range slices.Compact([]int{1, runtime.NumCPU()}) {
					b.Run(fmt.Sprint("GOMAXPROCS=", procs), func(b *testing.B) {
						var whole, start time.Duration
						for b.Loop() {
							t := time.Now()
							checkProcess(b, procs, filter, input)
							whole += time.Since(t)
							t = time.Now()
							checkProcess(b, procs, filter, empty, "--allow-empty")
							start += time.Since(t)
						}
						perRun := float64(whole.Nanoseconds()) / float64(b.N)
						startNs := float64(start.Nanoseconds()) / float64(b.N)
						perObject := (perRun - startNs) / n
						b.ReportMetric(n/perRun*1e9, "keys/s")
						b.ReportMetric(startNs/1e6, "start-ms")
						b.ReportMetric(floor, "floor-ns")
						b.ReportMetric(perObject/floor, "x-floor")
						b.ReportMetric(perRun/n/floor, "x-whole")
					})
				}
			})
		}
	}
}

// checkProcess runs "pkbf check --quiet [flags] filter input" as a
// process with GOMAXPROCS procs, its verdicts to /dev/null, and fails the
// benchmark unless it exits 0 or 1.
func checkProcess(b *testing.B, procs int, filter, input string, flags ...string) {
	cmd := exec.Command(os.Args[0], append(append([]string{"--", "check", "--quiet"}, flags...), filter, input)...)
	cmd.Env = append(os.Environ(), "PKBF_RUN_AS_COMMAND=1", fmt.Sprint("GOMAXPROCS=", procs))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == exitFound) {
		b.Fatalf("pkbf check: %v: %s", err, stderr.String())
	}
}

// checkProcessCode runs "pkbf check --quiet args" as a process and
// returns its exit status.
func checkProcessCode(b *testing.B, args ...string) int {
	cmd := exec.Command(os.Args[0], append([]string{"--", "check", "--quiet"}, args...)...)
	cmd.Env = append(os.Environ(), "PKBF_RUN_AS_COMMAND=1")
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		b.Fatal(err)
	}
	return 0
}

// floorPerObject times floor on every object (each try over all of them,
// the fastest of three) and returns ns per object. It fails the benchmark
// if floor rejects an object.
func floorPerObject(b *testing.B, f *pkbf.Filter, objects [][]byte, floor func(*pkbf.Filter, []byte) bool) float64 {
	best := math.Inf(1)
	for range 3 {
		start := time.Now()
		hits := 0
		for _, o := range objects {
			if floor(f, o) {
				hits++
			}
		}
		best = min(best, float64(time.Since(start).Nanoseconds())/float64(len(objects)))
		benchSink += hits
	}
	return best
}

var benchSink int

// floorScratch holds what a floor decodes: the floors run in one
// goroutine, and a buffer cleared for every object would cost more than
// the decoding.
var floorScratch [4096]byte

// formsScratch holds the other encodings keys.Forms builds for a floor.
var formsScratch [256]byte

// pemCertificateFloor is the floor for one PEM certificate: see
// BenchmarkCheck.
func pemCertificateFloor(f *pkbf.Filter, object []byte) bool {
	const begin, end = "-----BEGIN CERTIFICATE-----\n", "-----END CERTIFICATE-----"
	i := bytes.Index(object, []byte(begin)) + len(begin)
	j := i + bytes.Index(object[i:], []byte(end))
	der := floorScratch[:]
	n := 0
	for line := range bytes.Lines(object[i:j]) { // whole lines decode fastest
		m, err := base64.StdEncoding.Decode(der[n:], bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			panic(err)
		}
		n += m
	}
	spki, err := keys.SPKI(der[:n])
	if err != nil {
		panic(err)
	}
	return derPublicKeyFloor(f, spki)
}

// derPublicKeyFloor is the floor for one DER SPKI: its SHA-256, its
// other point form if it is an EC key, and a query for each.
func derPublicKeyFloor(f *pkbf.Filter, spki []byte) bool {
	fp := sha256.Sum256(spki)
	return anyProbably(f, spki) && fp[0] == 0
}

// anyProbably reports whether any encoding of the key in spki is
// probably in the filter: spki, and an EC key's other point form.
func anyProbably(f *pkbf.Filter, spki []byte) bool {
	_, other, err := keys.Forms(formsScratch[:0], spki)
	if err != nil {
		panic(err)
	}
	found := f.Probably(spki)
	if other != nil {
		found = f.Probably(other) || found
	}
	return found
}

func authorizedKeyFloor(f *pkbf.Filter, object []byte) bool {
	spki, err := keys.SPKI(object)
	if err != nil {
		panic(err)
	}
	blob := bytes.Fields(object)[1]
	n, _ := base64.StdEncoding.Decode(floorScratch[:], blob)
	fp, sshFP := sha256.Sum256(spki), sha256.Sum256(floorScratch[:n])
	return anyProbably(f, spki) && fp[0] == sshFP[0]
}

// writeInput writes the objects, concatenated, to a file that lives until
// the benchmarks end, and returns its path.
func writeInput(b *testing.B, objects [][]byte) string {
	dir, err := os.MkdirTemp("", "pkbf-bench-")
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "input")
	benchInputs[path] = path
	if err := os.WriteFile(path, bytes.Join(objects, nil), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// pemCertificates returns n distinct PEM certificates, a quarter RSA-2048
// and the rest P-256 (see BenchmarkCheck).
func pemCertificates(b *testing.B, n int) [][]byte {
	templates := certCorpus(b, 8)
	out := make([][]byte, n)
	for i := range out {
		der := templates[i%len(templates)]
		spki, err := keys.SPKI(der)
		if err != nil {
			b.Fatal(err)
		}
		out[i] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: testkit.WithCounter(der, spki, i)})
	}
	return out
}

// derPublicKeys returns n distinct DER SPKIs, a quarter RSA-2048 and the
// rest P-256.
func derPublicKeys(b *testing.B, n int) [][]byte {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	rsaDER, _ := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	ecDER, _ := x509.MarshalPKIXPublicKey(&ek.PublicKey)
	out := make([][]byte, n)
	for i := range out {
		t := ecDER
		if i%4 == 0 {
			t = rsaDER
		}
		out[i] = testkit.WithCounter(t, t, i)
	}
	return out
}

// authorizedKeys returns n distinct authorized_keys lines with comments,
// a quarter RSA-2048 (the modulus plus 2i) and the rest Ed25519 (random
// bytes, which any 32 bytes are).
func authorizedKeys(b *testing.B, n int) [][]byte {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	r := mrand.New(mrand.NewPCG(7, 8))
	out := make([][]byte, n)
	for i := range out {
		var pub any
		if i%4 == 0 {
			pub = &rsa.PublicKey{N: new(big.Int).Add(rk.N, big.NewInt(int64(2*i))), E: rk.E}
		} else {
			k := make(ed25519.PublicKey, ed25519.PublicKeySize)
			for j := range k {
				k[j] = byte(r.Uint32())
			}
			pub = k
		}
		sp, err := ssh.NewPublicKey(pub)
		if err != nil {
			b.Fatal(err)
		}
		out[i] = append(bytes.TrimSpace(ssh.MarshalAuthorizedKey(sp)), fmt.Sprintf(" user%d@example.com\n", i)...)
	}
	return out
}

// BenchmarkCheckBR runs check as a process (as BenchmarkCheck does) on a
// stream of 200 000 distinct PEM certificates of RSA-2048 keys, against
// half-full 1 MiB and 256 MiB filters, without the weak-key checks and
// with them (--br, with a Debian file of the published RSA-2048 lists'
// size: 294 912 SHA-256 moduli and 294 912 openssl-vulnkey lines), the
// two timed in turns in the same run. It reports both runs' seconds and
// x-plain, the run with --br over the run without.
//
// The keys are one real modulus N plus 2iM, M the product of the primes
// below 752: distinct, of the same size, and with no small factor, as a
// real modulus has none (N plus a multiple of M has N's remainders), so
// that every key is clean and the checks do all their work (the small
// primes, ROCA, 100 rounds of Fermat, the Debian lists) as for the keys a
// CA sees.
func BenchmarkCheckBR(b *testing.B) {
	const n = 200_000
	input := brCertificates(b, n)
	debian := benchDebianFile(b)
	if code := checkProcessCode(b, "--br", "--debian", debian, "--no-filter", input); code != exitOK {
		b.Fatalf("check --br --no-filter of the certificates: exit %d, want 0: every key clean", code)
	}
	for _, l := range []uint8{23, 31} {
		b.Run(fmt.Sprintf("%dMiB", (1<<l)>>23), func(b *testing.B) {
			filter := benchFilterFile(b, l)
			var plain, br time.Duration
			for b.Loop() {
				t := time.Now()
				checkProcess(b, runtime.NumCPU(), filter, input)
				plain += time.Since(t)
				t = time.Now()
				checkProcess(b, runtime.NumCPU(), filter, input, "--br", "--debian", debian)
				br += time.Since(t)
			}
			b.ReportMetric(plain.Seconds()/float64(b.N), "plain-s")
			b.ReportMetric(br.Seconds()/float64(b.N), "br-s")
			b.ReportMetric(float64(br)/float64(plain), "x-plain")
			b.ReportMetric(n*float64(b.N)/br.Seconds(), "br-keys/s")
		})
	}
}

// brCertificates writes n distinct PEM certificates of clean RSA-2048
// keys (see BenchmarkCheckBR), signed by a P-256 CA, and returns the
// file's path.
func brCertificates(b *testing.B, n int) string {
	if path, ok := benchInputs["br-certificates"]; ok {
		return path
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pkbf bench CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "host.example.com"}, DNSNames: []string{"host.example.com"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		b.Fatal(err)
	}
	m := big.NewInt(2)
	for p := int64(3); p < 752; p += 2 {
		if big.NewInt(p).ProbablyPrime(0) {
			m.Mul(m, big.NewInt(p))
		}
	}
	n0 := key.N.FillBytes(make([]byte, 256))
	at := bytes.Index(der, n0)
	var buf bytes.Buffer
	nk := new(big.Int)
	for i := range n {
		nk.Add(key.N, new(big.Int).Mul(m, big.NewInt(int64(i)))) // m is even: N's remainders
		if nk.BitLen() != 2048 {
			b.Fatalf("modulus %d is %d bits", i, nk.BitLen())
		}
		c := bytes.Clone(der)
		nk.FillBytes(c[at : at+256])
		pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c})
	}
	path := writeInput(b, [][]byte{buf.Bytes()})
	benchInputs["br-certificates"] = path
	return path
}

// benchDebianFile writes a Debian weak-key file of the published RSA-2048
// lists' size, of random hashes, and returns its path.
func benchDebianFile(b *testing.B) string {
	if path, ok := benchInputs["debian"]; ok {
		return path
	}
	r := mrand.New(mrand.NewPCG(9, 10))
	var builder weakkeys.Builder
	for _, l := range []weakkeys.List{
		{Name: "sha256_modulus_2048.csv", Key: "RSA-2048", Scheme: weakkeys.SHA256Modulus},
		{Name: "blacklist.RSA-2048", Key: "RSA-2048", Scheme: weakkeys.VulnKey},
	} {
		digits := 64
		if l.Scheme == weakkeys.VulnKey {
			digits = 20
		}
		var text bytes.Buffer
		for range 294_912 {
			for range digits {
				text.WriteByte("0123456789abcdef"[r.IntN(16)])
			}
			text.WriteByte('\n')
		}
		if err := builder.ReadList(l, &text); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(filepath.Dir(writeInput(b, nil)), "debian.pkwk")
	if err := builder.WriteFile(path); err != nil {
		b.Fatal(err)
	}
	benchInputs["debian"] = path
	return path
}
