package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"golang.org/x/crypto/ssh"
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
	data = append(data, make([]byte, h.DataSize())...)
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

// BenchmarkCheckFilterSize: 200 000 distinct RSA-2048 SPKIs (DER,
// concatenated: the modulus carries a counter) against a 256 MiB filter,
// larger than the CPU caches, and a 1 MiB one.
func BenchmarkCheckFilterSize(b *testing.B) {
	const n = 200_000
	k, _ := rsa.GenerateKey(rand.Reader, 2048)
	base, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	for _, l := range []uint8{31, 23} {
		filter := benchFilterFile(b, l)
		b.Run(fmt.Sprintf("%dMiB", (1<<l)>>23), func(b *testing.B) {
			benchCheckFilter(b, filter, n, func(w io.Writer, i int) {
				key := bytes.Clone(base)
				binary.BigEndian.PutUint32(key[40:], uint32(i)) // inside the modulus
				w.Write(key)
			})
		})
	}
}
