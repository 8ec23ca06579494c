package pkbfssh

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"
)

// testLine returns the first two fields of a testdata .pub file.
func testLine(t testing.TB, name string) (typ, b64 string) {
	t.Helper()
	b, err := os.ReadFile("../testdata/keys/" + name)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	return f[0], f[1]
}

func reblob(t *testing.T, b64 string, f func([]byte) []byte) string {
	blob, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(f(blob))
}

func renamed(name string) func([]byte) []byte {
	return func(blob []byte) []byte {
		n := binary.BigEndian.Uint32(blob)
		out := binary.BigEndian.AppendUint32(nil, uint32(len(name)))
		return append(append(out, name...), blob[4+n:]...)
	}
}

// mldsaB64 is an ssh-mldsa-44 key blob in base64 (its key all zero bytes).
func mldsaB64() string {
	blob := binary.BigEndian.AppendUint32(renamed("ssh-mldsa-44")([]byte{0, 0, 0, 0}), 1312)
	return base64.StdEncoding.EncodeToString(append(blob, make([]byte, 1312)...))
}

// ParseLine finds the key sshd finds, and none where sshd finds none.
func TestParseLine(t *testing.T) {
	edT, ed := testLine(t, "ed25519.pub")
	rsaT, rsa := testLine(t, "rsa2048.pub")
	_, p256 := testLine(t, "p256.pub")
	skT, sk := testLine(t, "p256-sk.pub")
	want := func(typ, b64 string) string {
		k, err := ParseKey(typ, b64)
		if err != nil {
			t.Fatal(err)
		}
		return k.Fingerprint
	}
	edFP, rsaFP, skFP := want(edT, ed), want(rsaT, rsa), want(skT, sk)
	for _, c := range []struct{ name, line, fp, comment string }{
		{"plain", edT + " " + ed + " me@host", edFP, "me@host"},
		{"tabs and leading blanks", " \t" + edT + "\t\t" + ed + "\tme", edFP, "me"},
		{"rsa-sha2-256", "rsa-sha2-256 " + rsa + " x", rsaFP, "x"},
		{"rsa-sha2-512", "rsa-sha2-512 " + rsa, rsaFP, ""},
		{"webauthn type name", "webauthn-sk-ecdsa-sha2-nistp256@openssh.com " + sk, skFP, ""},
		{"vertical tab in base64", edT + " " + ed[:20] + "\v" + ed[20:] + " x", edFP, "x"},
		{"form feed, CR in base64", edT + " " + ed[:5] + "\f\r" + ed[5:] + " x", edFP, "x"},
		{"carriage return at the end", edT + " " + ed + "\r", edFP, ""},
		{"comment over 64 KiB", edT + " " + ed + " " + strings.Repeat("c", 1<<17), edFP, strings.Repeat("c", 1<<17)},
		{"options", `no-pty,command="a b" ` + edT + " " + ed, edFP, ""},
		{"escaped quote in options", `command="a \" b" ` + edT + " " + ed, edFP, ""},
		{"escaped quote outside quotes", `a\"b ` + edT + " " + ed, edFP, ""},
		{"a key in the options' quotes", `command="` + rsaT + " " + rsa + `" ` + edT + " " + ed, edFP, ""},
		{"blob named rsa", rsaT + " " + reblob(t, rsa, renamed("rsa")), rsaFP, ""},
		{"blob named rsa-sha2-512", rsaT + " " + reblob(t, rsa, renamed("rsa-sha2-512")), rsaFP, ""},
		{"blob name with a NUL at its end", edT + " " + reblob(t, ed, renamed(edT+"\x00")), edFP, ""},
		{"a NUL ends the line", edT + " " + ed + "\x00" + rsaT + " " + rsa, edFP, ""},
		{"two keys: the first", edT + " " + ed + " " + rsaT + " " + rsa, edFP, rsaT + " " + rsa},
		{"known_hosts form, as options", "host.example " + edT + " " + ed, edFP, ""},
	} {
		k, comment, err := ParseLine([]byte(c.line))
		if err != nil || k == nil || k.Fingerprint != c.fp || comment != c.comment {
			t.Errorf("%s: key %v, comment %.40q, error %v; want %s, %.40q", c.name, k, comment, err, c.fp, c.comment)
		}
	}
	for _, c := range []struct{ name, line string }{
		{"short type name on the line", "ED25519 " + ed},
		{"type in capitals", "SSH-ED25519 " + ed},
		{"type names another key", "ecdsa-sha2-nistp384 " + p256},
		{"certificate type for a plain key", "ssh-ed25519-cert-v01@openssh.com " + ed},
		{"blob named ECDSA", "ecdsa-sha2-nistp256 " + reblob(t, p256, renamed("ECDSA"))},
		{"blob name with a NUL inside", edT + " " + reblob(t, ed, renamed("ssh-ed25519\x00x"))},
		{"bytes after the key", edT + " " + reblob(t, ed, func(b []byte) []byte { return append(b, 0) })},
		{"blank inside base64", edT + " " + ed[:20] + " " + ed[20:]},
		{"padding missing", "ecdsa-sha2-nistp256 " + strings.TrimRight(p256, "=")},
		{"text after padding", edT + " " + ed + "=A"},
		{"not base64", edT + " AAAAnot-base64 x"},
		{"unterminated quote", `command="abc ` + edT + " " + ed},
		{"no key after the type", edT + " "},
		{"type alone", edT},
		{"key cut short", edT + " " + ed[:40]},
		{"two blanks after options", "no-pty " + edT + " x"},
		{"ML-DSA key (sshd knows none; only a Go server reads it)", "ssh-mldsa-44 " + mldsaB64()},
	} {
		k, _, err := ParseLine([]byte(c.line))
		if k != nil || !errors.Is(err, ErrNoKey) || !strings.HasPrefix(err.Error(), "pkbf: ") {
			t.Errorf("%s: key %v, error %v; want ErrNoKey", c.name, k, err)
		}
	}
	for _, blank := range []string{"", "  ", "# ssh-ed25519 " + ed, "  \t# x", "\r", " \v\f\r", "\x00" + edT + " " + ed} {
		if k, _, err := ParseLine([]byte(blank)); k != nil || err != nil {
			t.Errorf("%q: key %v, error %v; want a blank line", blank, k, err)
		}
	}
}

// OpenSSH's base64: white space anywhere, padding rules, zero bits
// after the last byte.
func TestDecodeBase64(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"", ""},
		{"QUJD", "ABC"},
		{"QUI=", "AB"},
		{"QQ==", "A"},
		{"Q Q = \v=\r\n", "A"},
		{"\fQU\tJD", "ABC"},
		{"QUJD====", ""}, // '=' after a whole group: b64_pton refuses it below
	} {
		got, err := decodeBase64([]byte(c.in))
		if c.in == "QUJD====" {
			if err == nil {
				t.Errorf("%q: no error", c.in)
			}
			continue
		}
		if err != nil || string(got) != c.out {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.out)
		}
	}
	for _, bad := range []string{"QUJ", "QUI", "Q===", "QR==", "QUJ=A", "QUK=", "QUJD=", "QU-D", "QQ=", "QQ=A="} {
		if _, err := decodeBase64([]byte(bad)); !errors.Is(err, ErrNoKey) {
			t.Errorf("%q: %v, want ErrNoKey", bad, err)
		}
	}
}

// ParseKey reads sshd's %t %k; a certificate carries its CA key.
func TestParseKey(t *testing.T) {
	typ, b64 := testLine(t, "ed25519.pub")
	k, err := ParseKey(typ, b64)
	if err != nil || k.Type != "ssh-ed25519" || k.CA != nil || !strings.HasPrefix(k.Fingerprint, "SHA256:") {
		t.Fatalf("%v, %v", k, err)
	}
	rsaT, rsa := testLine(t, "rsa2048.pub")
	if k, err := ParseKey("rsa-sha2-512", rsa); err != nil || k.Type != rsaT {
		t.Errorf("rsa-sha2-512: %v, %v", k, err)
	}
	// The ML-DSA blob below is one a Go server reads.
	mldsa, _ := base64.StdEncoding.DecodeString(mldsaB64())
	if _, _, err := parseBlob(mldsa, false, false); err != nil {
		t.Fatalf("a Go server's reading refuses the ML-DSA blob: %v", err)
	}
	for name, args := range map[string][2]string{
		"unknown type":    {"ssh-foo", b64},
		"type of another": {"ssh-rsa", b64},
		"not base64":      {typ, "AAAA!"},
		"empty":           {typ, ""},
		"RSA under 1024":  {"ssh-rsa", base64.StdEncoding.EncodeToString(append(append(renamed("ssh-rsa")([]byte{0, 0, 0, 0}), 0, 0, 0, 1, 3), 0, 0, 0, 1, 0x7f))},
		"ML-DSA":          {"ssh-mldsa-44", mldsaB64()},
	} {
		if k, err := ParseKey(args[0], args[1]); k != nil || !errors.Is(err, ErrNoKey) {
			t.Errorf("%s: %v, %v", name, k, err)
		}
	}
}

// FuzzParseLine: no panic on any line; an error wraps ErrNoKey and
// carries the prefix; a key found is found again on its canonical line.
func FuzzParseLine(f *testing.F) {
	for _, name := range []string{"ed25519.pub", "p256.pub", "p384.pub", "p521.pub", "rsa2048.pub", "ed25519-sk.pub", "p256-sk.pub"} {
		typ, b64 := testLine(f, name)
		f.Add([]byte(typ + " " + b64 + " c"))
		f.Add([]byte(`command="x y" ` + typ + " " + b64[:10] + "\v" + b64[10:]))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		k, _, err := ParseLine(line)
		if err != nil {
			if k != nil || !errors.Is(err, ErrNoKey) || !strings.HasPrefix(err.Error(), "pkbf: ") {
				t.Fatalf("key %v with error %v", k, err)
			}
			return
		}
		if k != nil && len(k.SPKI) == 0 {
			t.Fatalf("a key without SPKI: %v", k)
		}
	})
}
