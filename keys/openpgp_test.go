package keys

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

// pgpVectors are the ROCA authors' OpenPGP keys, beside the project.
const pgpVectors = "../../shared/vectors/weak/roca"

// pgpMPIBytes encodes a multiprecision integer.
func pgpMPIBytes(v *big.Int) []byte {
	n := v.BitLen()
	return append([]byte{byte(n >> 8), byte(n)}, v.Bytes()...)
}

// pgpKeyBody is the body of a public-key packet of an RSA key.
func pgpKeyBody(version byte, algorithm byte, pub *rsa.PublicKey) []byte {
	material := append(pgpMPIBytes(pub.N), pgpMPIBytes(big.NewInt(int64(pub.E)))...)
	b := []byte{version, 0x5a, 0, 0, 1}
	switch version {
	case 2, 3:
		b = append(b, 0, 0, algorithm)
	case 5, 6:
		n := len(material)
		b = append(b, algorithm, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	default:
		b = append(b, algorithm)
	}
	return append(b, material...)
}

// pgpNewPacket frames a body in the new format, with the length form
// given: 1, 2 or 5 bytes.
func pgpNewPacket(tag byte, body []byte, lengthBytes int) []byte {
	n := len(body)
	b := []byte{0xc0 | tag}
	switch lengthBytes {
	case 1:
		b = append(b, byte(n))
	case 2:
		if n < 192 || n > 8383 {
			panic("pgpNewPacket: two-byte length out of range")
		}
		n -= 192
		b = append(b, byte(n>>8)+192, byte(n))
	default:
		b = append(b, 255, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, body...)
}

// pgpOldPacket frames a body in the old format, with a 1, 2 or 4-byte
// length.
func pgpOldPacket(tag byte, body []byte, lengthBytes int) []byte {
	n := len(body)
	switch lengthBytes {
	case 1:
		return append([]byte{0x80 | tag<<2, byte(n)}, body...)
	case 2:
		return append([]byte{0x80 | tag<<2 | 1, byte(n >> 8), byte(n)}, body...)
	}
	return append([]byte{0x80 | tag<<2 | 2, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, body...)
}

// pgpArmor armors packets, with a checksum line when crc.
func pgpArmor(packets []byte, crc bool) []byte {
	var b bytes.Buffer
	b.WriteString(pgpArmorBegin + "\nComment: made by a test\n\n")
	enc := base64.StdEncoding.EncodeToString(packets)
	for len(enc) > 64 {
		b.WriteString(enc[:64] + "\n")
		enc = enc[64:]
	}
	b.WriteString(enc + "\n")
	if crc {
		c := crc24(packets)
		b.WriteString("=" + base64.StdEncoding.EncodeToString([]byte{byte(c >> 16), byte(c >> 8), byte(c)}) + "\n")
	}
	b.WriteString(pgpArmorEnd + "\n")
	return b.Bytes()
}

// testRSAKey is an RSA-2048 key: its key packets take the two-byte length
// form of the new format (192 to 8383 bytes).
func testRSAKey(t testing.TB) *rsa.PublicKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &k.PublicKey
}

// TestOpenPGPKeysRoundTrip reads keys of every version, in both packet
// formats and every length form, armored or not, with the packets a key
// carries beside them, and compares them with the keys written.
func TestOpenPGPKeysRoundTrip(t *testing.T) {
	primary, sub := testRSAKey(t), testRSAKey(t)
	userID := []byte("Test Key <test@example.invalid>")
	for _, version := range []byte{2, 3, 4, 5, 6} {
		for _, algorithm := range []byte{1, 2, 3} {
			for i, frame := range []func(byte, []byte, int) []byte{pgpNewPacket, pgpOldPacket} {
				for _, lengthBytes := range []int{2, 5} {
					name := fmt.Sprintf("v%d/alg%d/format%d/len%d", version, algorithm, i, lengthBytes)
					var packets []byte
					packets = append(packets, frame(pgpTagPublicKey, pgpKeyBody(version, algorithm, primary), lengthBytes)...)
					packets = append(packets, frame(13, userID, 1)...)
					packets = append(packets, frame(2, make([]byte, 40), 1)...) // a signature
					packets = append(packets, frame(pgpTagPublicSubkey, pgpKeyBody(version, algorithm, sub), lengthBytes)...)
					for _, input := range [][]byte{packets, pgpArmor(packets, true), pgpArmor(packets, false)} {
						spkis, err := OpenPGPKeys(input)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						if len(spkis) != 2 {
							t.Fatalf("%s: %d keys, want 2", name, len(spkis))
						}
						for j, want := range []*rsa.PublicKey{primary, sub} {
							if wantSPKI, _ := x509.MarshalPKIXPublicKey(want); !bytes.Equal(spkis[j], wantSPKI) {
								t.Fatalf("%s: key %d is\n%x\nwant\n%x", name, j, spkis[j], wantSPKI)
							}
						}
					}
				}
			}
		}
	}
}

// TestOpenPGPKeysInvalid: what is not an OpenPGP RSA public key is an
// error, never a key.
func TestOpenPGPKeysInvalid(t *testing.T) {
	pub := testRSAKey(t)
	v4 := pgpKeyBody(4, 1, pub)
	good := pgpNewPacket(pgpTagPublicKey, v4, 2)
	armored := pgpArmor(good, true)
	badMPI := bytes.Clone(v4)
	badMPI[7]++ // the modulus's bit count one too many
	tests := []struct {
		name  string
		input []byte
		want  string
	}{
		{"empty", nil, "no \"-----BEGIN PGP PUBLIC KEY BLOCK-----\""},
		{"text", []byte("hello"), "no \"-----BEGIN PGP PUBLIC KEY BLOCK-----\""},
		{"private key block", []byte("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nAAAA\n-----END PGP PRIVATE KEY BLOCK-----\n"), "no \"-----BEGIN"},
		{"no END line", bytes.TrimSuffix(armored, []byte(pgpArmorEnd+"\n")), "no \"-----END"},
		{"bad checksum", bytes.Replace(armored, []byte("\n="), []byte("\n=A"), 1), "checksum"},
		{"bad base64", bytes.Replace(armored, []byte("\n\n"), []byte("\n\n*"), 1), "bad base64"},
		{"header without colon", bytes.Replace(armored, []byte("Comment: made by a test"), []byte("Comment made by a test"), 1), "header line"},
		{"no blank line", []byte(pgpArmorBegin + "\nComment: x"), "no blank line"},
		{"checksum line of 8 characters", []byte(pgpArmorBegin + "\n\n=00000000\n" + pgpArmorEnd), "checksum line is not"},
		{"text between checksum and END", bytes.Replace(armored, []byte("\n"+pgpArmorEnd), []byte("\nAAAA\n"+pgpArmorEnd), 1), "between the checksum"},
		{"empty armor", pgpArmor(nil, false), "no packets"},
		{"top bit clear", append(pgpOldPacket(13, []byte("x"), 1), 0x01), "top bit"},
		{"cut header, new format", []byte{0xc6}, "cut short"},
		{"cut two-byte length", []byte{0xc6, 0xc1}, "cut short"},
		{"cut five-byte length", []byte{0xc6, 0xff, 0, 0}, "cut short"},
		{"cut header, old format", []byte{0x80 | 6<<2 | 2, 0, 0}, "cut short"},
		{"partial length", []byte{0xc6, 0xe0, 1, 2, 3}, "partial body length"},
		{"indeterminate length", []byte{0x80 | 6<<2 | 3, 1, 2, 3}, "indeterminate"},
		{"tag 0", []byte{0xc0, 0}, "reserved tag 0"},
		{"body past the end", pgpNewPacket(pgpTagPublicKey, v4, 2)[:len(good)-1], "remain"},
		{"no key packet", pgpNewPacket(13, []byte("user"), 1), "no public-key packet"},
		{"empty key packet", pgpNewPacket(pgpTagPublicKey, nil, 1), "empty"},
		{"version 7", pgpNewPacket(pgpTagPublicKey, append([]byte{7}, v4[1:]...), 2), "version 7"},
		{"version 1", pgpNewPacket(pgpTagPublicKey, append([]byte{1}, v4[1:]...), 2), "version 1"},
		{"cut fixed fields", pgpNewPacket(pgpTagPublicKey, v4[:5], 1), "cut short"},
		{"v6 size mismatch", pgpNewPacket(pgpTagPublicKey, append(pgpKeyBody(6, 1, pub), 0), 2), "says its key is"},
		{"no exponent", pgpNewPacket(pgpTagPublicKey, v4[:len(v4)-5], 2), "no exponent"},
		{"modulus cut", pgpNewPacket(pgpTagPublicKey, v4[:100], 1), "bytes remain"},
		{"bit count too big", pgpNewPacket(pgpTagPublicKey, badMPI, 2), "not its size"},
		{"zero-bit MPI", pgpNewPacket(pgpTagPublicKey, append(bytes.Clone(v4[:6]), 0, 0), 1), "of 0 bits"},
		{"leading zero byte", pgpNewPacket(pgpTagPublicKey, append(bytes.Clone(v4[:6]), 0, 9, 0, 1), 1), "not its size"},
		{"bytes after the exponent", pgpNewPacket(pgpTagPublicKey, append(bytes.Clone(v4), 0), 2), "after its exponent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spkis, err := OpenPGPKeys(tt.input)
			if err == nil || spkis != nil {
				t.Fatalf("OpenPGPKeys = %d keys, %v; want an error", len(spkis), err)
			}
			testkit.CheckErr(t, err, ErrInvalidKey)
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
		})
	}
	t.Run("checksum mismatch", func(t *testing.T) {
		c := crc24(good) ^ 1
		wrong := "=" + base64.StdEncoding.EncodeToString([]byte{byte(c >> 16), byte(c >> 8), byte(c)})
		i := bytes.LastIndex(armored, []byte("\n=")) + 1
		j := i + bytes.IndexByte(armored[i:], '\n')
		bad := append(append(bytes.Clone(armored[:i]), wrong...), armored[j:]...)
		_, err := OpenPGPKeys(bad)
		if err == nil || !strings.Contains(err.Error(), "CRC-24 checksum mismatch") {
			t.Fatalf("OpenPGPKeys = %v, want a checksum mismatch", err)
		}
	})
	t.Run("another algorithm", func(t *testing.T) {
		ed := append([]byte{4, 0, 0, 0, 1, 22}, 0, 8, 0xff)
		_, err := OpenPGPKeys(pgpNewPacket(pgpTagPublicKey, ed, 1))
		if !errors.Is(err, ErrUnsupportedKey) || !strings.Contains(err.Error(), "algorithm 22") {
			t.Fatalf("OpenPGPKeys(EdDSA key) = %v, want ErrUnsupportedKey naming algorithm 22", err)
		}
	})
}

// TestOpenPGPKeysLimit: a key of 10000 keys is read, one of 10001 is not.
func TestOpenPGPKeysLimit(t *testing.T) {
	packet := pgpNewPacket(pgpTagPublicSubkey, pgpKeyBody(4, 1, testRSAKey(t)), 2)
	many := bytes.Repeat(packet, maxContainerParts)
	if spkis, err := OpenPGPKeys(many); err != nil || len(spkis) != maxContainerParts {
		t.Fatalf("%d keys: %d read, %v", maxContainerParts, len(spkis), err)
	}
	if _, err := OpenPGPKeys(append(many, packet...)); err == nil || !strings.Contains(err.Error(), "more than 10000 keys") {
		t.Fatalf("%d keys: %v, want an error", maxContainerParts+1, err)
	}
}

// TestOpenPGPKeysVectors reads the ROCA authors' OpenPGP keys and compares
// them with what GnuPG reads (gpg --with-key-data prints each key's n and
// e in hex).
func TestOpenPGPKeysVectors(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(pgpVectors, "*.pgp"))
	if len(files) == 0 {
		t.Skipf("no OpenPGP vectors at %s (they live beside the project, in shared/)", pgpVectors)
	}
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		if os.Getenv("PKBF_REQUIRE_GPG") != "" {
			t.Fatal("gpg is not on PATH (PKBF_REQUIRE_GPG is set)")
		}
		t.Skip("gpg is not on PATH: the keys are not compared with GnuPG's reading")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		spkis, err := OpenPGPKeys(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cmd := exec.Command(gpg, "--batch", "--with-key-data", "--with-colons", "--import-options", "show-only", "--import", f)
		cmd.Env = append(os.Environ(), "GNUPGHOME="+t.TempDir())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gpg %s: %v", f, err)
		}
		var want []string // n and e of each key, in hex
		for _, line := range strings.Split(string(out), "\n") {
			if fields := strings.Split(line, ":"); fields[0] == "pkd" && len(fields) > 3 {
				want = append(want, strings.ToLower(fields[3]))
			}
		}
		if len(want) != 2*len(spkis) {
			t.Fatalf("%s: %d keys, gpg reads %d", f, len(spkis), len(want)/2)
		}
		for i, spki := range spkis {
			pub, err := x509.ParsePKIXPublicKey(spki)
			if err != nil {
				t.Fatalf("%s: key %d: %v", f, i, err)
			}
			rk := pub.(*rsa.PublicKey)
			n, e := hex.EncodeToString(rk.N.Bytes()), hex.EncodeToString(big.NewInt(int64(rk.E)).Bytes())
			if n != want[2*i] || e != want[2*i+1] {
				t.Fatalf("%s: key %d has n=%s e=%s, gpg reads n=%s e=%s", f, i, n, e, want[2*i], want[2*i+1])
			}
		}
	}
}

func FuzzOpenPGPKeys(f *testing.F) {
	testkit.SeedFiles(f, filepath.Join(pgpVectors, "*.pgp"))
	for _, k := range []*rsa.PublicKey{testRSAKey(f)} {
		f.Add(pgpArmor(pgpNewPacket(pgpTagPublicKey, pgpKeyBody(4, 1, k), 2), true))
		f.Add(pgpOldPacket(pgpTagPublicKey, pgpKeyBody(3, 1, k), 2))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		spkis, err := OpenPGPKeys(b)
		if err != nil {
			testkit.CheckErr(t, err, ErrInvalidKey)
			if spkis != nil {
				t.Fatal("a failed read returned keys")
			}
			return
		}
		// Each key is a valid RSA SPKI, and writing the keys as packets
		// reads back the same keys.
		var packets []byte
		for _, spki := range spkis {
			info, err := parseSPKI(spki)
			if err != nil || info.kind != algRSA {
				t.Fatalf("OpenPGPKeys returned %x, not an RSA SPKI: %v", spki, err)
			}
			n, e := new(big.Int).SetBytes(info.n), new(big.Int).SetBytes(info.e)
			material := append(pgpMPIBytes(n), pgpMPIBytes(e)...)
			packets = append(packets, pgpNewPacket(pgpTagPublicSubkey, append([]byte{4, 0, 0, 0, 0, 1}, material...), 5)...)
		}
		again, err := OpenPGPKeys(pgpArmor(packets, true))
		if err != nil || len(again) != len(spkis) {
			t.Fatalf("rewritten keys: %d, %v; want %d", len(again), err, len(spkis))
		}
		for i := range spkis {
			if !bytes.Equal(again[i], spkis[i]) {
				t.Fatalf("key %d rewritten is %x, want %x", i, again[i], spkis[i])
			}
		}
	})
}

// TestScannerOpenPGP: a Scanner reads each key of an armored OpenPGP
// public key as a Key with its Part, a key of another algorithm than RSA
// as a Key with an unsupported-key error (never skipped), and goes on
// after the armor; damaged armor is one Key with its error.
func TestScannerOpenPGP(t *testing.T) {
	primary, sub := testRSAKey(t), testRSAKey(t)
	eddsa := []byte{4, 0, 0, 0, 1, 22, 0, 8, 0xff} // EdDSA: not read
	var packets []byte
	packets = append(packets, pgpNewPacket(pgpTagPublicKey, pgpKeyBody(4, 1, primary), 2)...)
	packets = append(packets, pgpNewPacket(13, []byte("Test <t@example.invalid>"), 1)...)
	packets = append(packets, pgpNewPacket(pgpTagPublicSubkey, eddsa, 1)...)
	packets = append(packets, pgpNewPacket(pgpTagPublicSubkey, pgpKeyBody(4, 1, sub), 2)...)
	packets = append(packets, pgpNewPacket(pgpTagPublicSubkey, append(pgpKeyBody(4, 1, sub), 0), 2)...)
	armored := pgpArmor(packets, true)
	cert := testkit.ReadFile(t, "../testdata/keys/p256.cert.pem")
	damaged := bytes.Replace(armored, []byte("\n="), []byte("\n=AAAA\n=X"), 1)
	in := bytes.Join([][]byte{cert, armored, damaged, cert}, nil)
	primarySPKI, _ := x509.MarshalPKIXPublicKey(primary)
	subSPKI, _ := x509.MarshalPKIXPublicKey(sub)
	certSPKI, _ := SPKI(cert)
	line := func(b []byte) int { return bytes.Count(b, []byte("\n")) + 1 }
	want := []struct {
		source string
		spki   []byte
		err    string
	}{
		{"block 1 (line 1)", certSPKI, ""},
		{fmt.Sprintf("block 2 (line %d), OpenPGP key 1", line(cert)), primarySPKI, ""},
		{fmt.Sprintf("block 2 (line %d), OpenPGP key 2", line(cert)), nil, "algorithm 22"},
		{fmt.Sprintf("block 2 (line %d), OpenPGP key 3", line(cert)), subSPKI, ""},
		{fmt.Sprintf("block 2 (line %d), OpenPGP key 4", line(cert)), nil, "1 bytes after its exponent"},
		{fmt.Sprintf("block 3 (line %d)", line(cert)+line(armored)-1), nil, "OpenPGP armor"},
		{fmt.Sprintf("block 4 (line %d)", line(cert)+line(armored)+line(damaged)-2), certSPKI, ""},
	}
	s := NewScanner(bytes.NewReader(in))
	for i := 0; s.Scan(); i++ {
		k := s.Key()
		spki, err := k.SPKI()
		if i >= len(want) {
			t.Fatalf("an extra key: %s", k.Source())
		}
		w := want[i]
		if k.Source() != w.source || !bytes.Equal(spki, w.spki) || (err == nil) != (w.err == "") || (err != nil && !strings.Contains(err.Error(), w.err)) {
			t.Fatalf("key %d: %s, %x, %v; want %s, %x, an error saying %q", i+1, k.Source(), spki, err, w.source, w.spki, w.err)
		}
		if w.err == "algorithm 22" && !errors.Is(err, ErrUnsupportedKey) {
			t.Fatalf("key %d: %v does not wrap ErrUnsupportedKey", i+1, err)
		}
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}

	// SPKI reads armor of one key; of several it sends to Scanner.
	one := pgpArmor(pgpNewPacket(pgpTagPublicKey, pgpKeyBody(4, 1, primary), 2), true)
	if spki, err := SPKI(one); err != nil || !bytes.Equal(spki, primarySPKI) {
		t.Errorf("SPKI of an armored key = %x, %v; want its SPKI", spki, err)
	}
	two := pgpArmor(append(pgpNewPacket(pgpTagPublicKey, pgpKeyBody(4, 1, primary), 2), pgpNewPacket(pgpTagPublicSubkey, pgpKeyBody(4, 1, sub), 2)...), true)
	if _, err := SPKI(two); err == nil || !strings.Contains(err.Error(), "read them with Scanner") {
		t.Errorf("SPKI of an armored key of two keys = %v, want an error sending to Scanner", err)
	}
	if _, err := SPKI(armored); !errors.Is(err, ErrUnsupportedKey) {
		t.Errorf("SPKI of an armored key with an EdDSA subkey = %v, want its error", err)
	}
}
