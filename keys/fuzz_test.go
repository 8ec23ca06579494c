package keys

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pkbf/pkbf/internal/testkit"
)

func quickInputs(f *testing.F) {
	iters, bits := maxPKCS12Iterations, maxFieldBits
	maxPKCS12Iterations, maxFieldBits = 1<<12, 2048
	f.Cleanup(func() { maxPKCS12Iterations, maxFieldBits = iters, bits })
}

func FuzzSPKI(f *testing.F) {
	quickInputs(f)
	testkit.SeedFiles(f, "../testdata/keys/*", "../testdata/keys/more/*", "../testdata/keys/binary/*-explicit-compressed.pem", "../testdata/keys/curves/unnamed.nopub.pem")
	for _, k := range sshMLDSAKeys(f) { // x/crypto/ssh's ML-DSA keys and certificates, as lines
		f.Add([]byte(k.typ + " " + base64.StdEncoding.EncodeToString(k.blob) + " mldsa\n"))
		f.Add([]byte(k.typ + "-cert-v01@golang.org " + base64.StdEncoding.EncodeToString(mldsaCertBlob(f, k.typ, k.key)) + "\n"))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		spki, err := SPKI(b)
		if err != nil {
			testkit.CheckErr(t, err, ErrInvalidKey)
			if spki != nil {
				t.Fatal("failed SPKI returned bytes")
			}
			return
		}
		if _, err := parseSPKI(spki); err != nil {
			t.Fatalf("SPKI returned an invalid SPKI: %v", err)
		}
		if again, err := SPKI(spki); err != nil || !bytes.Equal(again, spki) {
			t.Fatalf("SPKI(SPKI(x)) = %x, %v; want SPKI(x)", again, err)
		}
		encs, err := Encodings(spki)
		if err != nil {
			testkit.CheckErr(t, err, ErrInvalidKey)
			return
		}
		for _, e := range encs {
			if _, err := parseSPKI(e); err != nil {
				t.Fatalf("Encodings returned an invalid SPKI: %v", err)
			}
		}
		// The canonical form is a fixed point, and a filter holding any
		// encoding finds the key from any other.
		canonical := encs[0]
		if again, err := Canonical(canonical); err != nil || !bytes.Equal(again, canonical) {
			t.Fatalf("Canonical(Canonical(x)) = %x, %v; want Canonical(x) %x", again, err, canonical)
		}
		forms, err := Encodings(canonical)
		if err != nil {
			t.Fatalf("Encodings(canonical): %v", err)
		}
		for _, stored := range forms {
			if !lookup(stored, spki) || !lookup(stored, canonical) {
				t.Fatalf("a filter holding %x does not find %x", stored, spki)
			}
		}
	})
}

// scanSummary is everything a scan reports, for comparing two scans.
func scanSummary(r io.Reader) (string, error) {
	var out strings.Builder
	s := NewScanner(r)
	for s.Scan() {
		k := s.Key()
		spki, err := k.SPKI()
		fmt.Fprintf(&out, "%d %d %d %s %x %v\n", k.Index, k.Line, k.Offset, k.Source(), spki, err)
	}
	return out.String(), s.Err()
}

// checkFramings compares a scan of b that frames PEM blocks from the read
// buffer with one through a one-byte reader, which frames them line by line.
func checkFramings(t *testing.T, name string, b []byte) {
	fast, err1 := scanSummary(bytes.NewReader(b))
	slow, err2 := scanSummary(iotest.OneByteReader(bytes.NewReader(b)))
	if fast != slow || (err1 == nil) != (err2 == nil) {
		t.Fatalf("%s: buffered and line-by-line framing differ:\n%s\n----\n%s", name, fast, slow)
	}
}

func TestScannerFramings(t *testing.T) {
	names, _ := filepath.Glob("../testdata/keys/*")
	more, _ := filepath.Glob("../testdata/keys/more/*")
	for _, name := range append(names, more...) {
		if fi, err := os.Stat(name); err == nil && fi.IsDir() {
			continue
		}
		checkFramings(t, name, testkit.ReadFile(t, name))
	}
	pub := testkit.ReadFile(t, "../testdata/keys/p256.spki.pem")
	crlf := bytes.ReplaceAll(pub, []byte("\n"), []byte("\r\n"))
	indented := bytes.ReplaceAll(pub, []byte("\n"), []byte("\n  "))
	enc := testkit.ReadFile(t, "../testdata/keys/p256.sec1-encrypted.pem") // has Proc-Type headers
	indentedEnc := bytes.ReplaceAll(enc, []byte("\n"), []byte("\n    "))
	for name, b := range map[string][]byte{"CRLF": crlf, "indented": indented, "BEGIN inside": append(pub[:60:60], pub...), "indented with headers": indentedEnc} {
		checkFramings(t, name, b)
	}
}

func FuzzScanner(f *testing.F) {
	quickInputs(f)
	testkit.SeedFiles(f, "../testdata/keys/*", "../testdata/keys/more/*", "../testdata/keys/binary/*-explicit-compressed.pem", "../testdata/keys/curves/unnamed.nopub.pem",
		pkcs7Vector, filepath.Join(pgpVectors, "*.pgp"))
	if b, err := os.ReadFile(pkcs7Vector); err == nil { // the BER bundle in binary
		if block, ok := decodePEMBlock(textOf(b)); ok {
			f.Add(block.der)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkFramings(t, "input", b)
		s := NewScanner(bytes.NewReader(b))
		n := 0
		for s.Scan() {
			n++
			k := s.Key()
			if k.Index != n || k.Offset < 0 || k.Offset > int64(len(b)) || len(k.Raw) > len(b)+2 {
				t.Fatalf("key %d: index %d, offset %d, %d raw bytes of %d", n, k.Index, k.Offset, len(k.Raw), len(b))
			}
			if _, err := k.SPKI(); err != nil {
				testkit.CheckErr(t, err, ErrInvalidKey)
			}
			sameForms(t, k)
			if k.Source() == "" {
				t.Fatal("empty Source")
			}
		}
		if s.Err() != nil {
			t.Fatalf("Err = %v reading from memory", s.Err())
		}
		if n > len(b)/2+1 {
			t.Fatalf("%d keys from %d bytes", n, len(b))
		}
	})
}

// lookup reports whether a filter holding exactly stored finds the key of
// spki the way pkbf's Filter.Contains looks: spki as given, then the forms
// Forms gives.
func lookup(stored, spki []byte) bool {
	if bytes.Equal(stored, spki) {
		return true
	}
	canonical, other, err := Forms(nil, spki)
	return err == nil && (bytes.Equal(stored, canonical) || bytes.Equal(stored, other))
}
