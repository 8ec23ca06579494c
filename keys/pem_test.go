package keys

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"errors"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

func TestDecodePEMBlock(t *testing.T) {
	for _, tt := range []struct {
		name, raw, typ, procType string
		der                      []byte // nil: refused
	}{
		{"plain", "-----BEGIN X-----\nAAEC\nAw==\n-----END X-----\n", "X", "", []byte{0, 1, 2, 3}},
		{"CRLF", "-----BEGIN X-----\r\nAAEC\r\nAw==\r\n-----END X-----\r\n", "X", "", []byte{0, 1, 2, 3}},
		{"indented", "  -----BEGIN X-----\n  AAEC\n  Aw==\n  -----END X-----", "X", "", []byte{0, 1, 2, 3}},
		{"odd line lengths", "-----BEGIN X-----\nAAE\nCAw==\n-----END X-----\n", "X", "", []byte{0, 1, 2, 3}},
		{"spaces inside", "-----BEGIN X-----\nAA EC\tAw==\n-----END X-----\n", "X", "", []byte{0, 1, 2, 3}},
		{"headers", "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAEC\n-----END RSA PRIVATE KEY-----\n", "RSA PRIVATE KEY", "4,ENCRYPTED", []byte{0, 1, 2}},
		{"other END type", "-----BEGIN X-----\nAAEC\n-----END Y-----\n", "", "", nil},
		{"no END", "-----BEGIN X-----\nAAEC\n", "", "", nil},
		{"padding inside", "-----BEGIN X-----\nAA==\nAAEC\n-----END X-----\n", "", "", nil},
		{"not base64", "-----BEGIN X-----\nAA*C\n-----END X-----\n", "", "", nil},
	} {
		block, ok := decodePEMBlock([]byte(tt.raw))
		if ok != (tt.der != nil) || ok && (block.typ != tt.typ || block.procType != tt.procType || !bytes.Equal(block.der, tt.der)) {
			t.Errorf("%s: %q %q %x, %v; want %q %q %x", tt.name, block.typ, block.procType, block.der, ok, tt.typ, tt.procType, tt.der)
		}
	}
}

func TestNextPEMBlock(t *testing.T) {
	text := []byte("prose\n  -----BEGIN A-----\nAAAA\n  -----END A-----\nmore prose\n-----BEGIN B-----\nAAAA\n")
	raw, rest, found, ok := nextPEMBlock(text)
	if !found || !ok || string(raw) != "  -----BEGIN A-----\nAAAA\n  -----END A-----\n" {
		t.Fatalf("first block %q, found %v, ok %v", raw, found, ok)
	}
	if _, _, found, ok = nextPEMBlock(rest); !found || ok {
		t.Errorf("a block without its END line: found %v, ok %v; want found, not ok", found, ok)
	}
	if _, _, found, _ = nextPEMBlock([]byte("no blocks\n")); found {
		t.Error("found a block in prose")
	}
}

// An encrypted legacy PEM key is reported as encrypted, from its header.
func TestPEMEncryptedHeader(t *testing.T) {
	_, err := SPKI([]byte("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAEC\n-----END RSA PRIVATE KEY-----\n"))
	if !errors.Is(err, ErrEncryptedKey) {
		t.Errorf("SPKI of an encrypted RSA PRIVATE KEY: %v, want ErrEncryptedKey", err)
	}
}

// FuzzDecodePEMBlock checks pkbf's one PEM decoder against encoding/pem:
// whatever it accepts, encoding/pem reads the same way (type, bytes and
// Proc-Type header) once each line is trimmed (pkbf, unlike encoding/pem,
// allows indented blocks, as in YAML files, on every line including END).
func FuzzDecodePEMBlock(f *testing.F) {
	testkit.SeedFiles(f, "../testdata/keys/*.pem")
	f.Add([]byte("-----BEGIN X-----\nAAAA\nAA==\n-----END X-----\n"))
	f.Add([]byte("-----BEGIN X-----\nAA==\nAAAA\n-----END X-----\n"))
	f.Add([]byte("-----BEGIN X-----\nAAAAAA\nAAAAAA==\n-----END X-----\n"))
	f.Add([]byte("-----BEGIN X-----\nAA AA\tAAAA\n-----END X-----\n"))
	f.Add([]byte("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n"))
	f.Add([]byte("  -----BEGIN X-----\n  Comment: a\n\n  AAAA\n  -----END X-----\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		block, ok := decodePEMBlock(raw)
		if !ok {
			return
		}
		var trimmed []byte
		for line := range bytes.Lines(raw) {
			trimmed = append(append(trimmed, bytes.TrimSpace(line)...), '\n')
		}
		want, _ := pem.Decode(trimmed)
		if want == nil || want.Type != block.typ || !bytes.Equal(want.Bytes, block.der) || want.Headers["Proc-Type"] != block.procType {
			t.Fatalf("pkbf decodes %q %q %x; encoding/pem gives %+v", block.typ, block.procType, block.der, want)
		}
	})
}

// TestPEMSPKIOwnsItsBytes reads the SPKIs of many distinct PEM
// certificates in turn and checks that each one keeps its bytes after the
// others are read:
// Key.SPKI decodes a block into a reused buffer and must not return a part
// of it.
func TestPEMSPKIOwnsItsBytes(t *testing.T) {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	newCert := benchCertificates(t, rk, ek)
	var spkis, want [][]byte
	for i := range 64 {
		var k Key
		s := NewScanner(bytes.NewReader(newCert(i)))
		if !s.Scan() {
			t.Fatal("no key scanned")
		}
		k = s.Key()
		spki, err := k.SPKI()
		if err != nil {
			t.Fatal(err)
		}
		spkis, want = append(spkis, spki), append(want, bytes.Clone(spki))
	}
	for i := range spkis {
		if !bytes.Equal(spkis[i], want[i]) {
			t.Fatalf("certificate %d: SPKI changed after later ones were read:\n got %x\nwant %x", i, spkis[i], want[i])
		}
	}
}
