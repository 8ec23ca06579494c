package keys

import (
	"bytes"
	"encoding/hex"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gpgKey is a key as gpg --with-key-data lists it: its algorithm, and an
// RSA key's n and e in hex.
type gpgKey struct{ algorithm, n, e string }

// gpgRead lists the keys of in as gpg imports them (without keeping
// them), or fails.
func gpgRead(t *testing.T, gpg string, in []byte) ([]gpgKey, bool) {
	t.Helper()
	dir := t.TempDir()
	f := filepath.Join(dir, "key.asc")
	os.WriteFile(f, in, 0o644)
	cmd := exec.Command(gpg, "--batch", "--with-key-data", "--with-colons", "--import-options", "show-only", "--import", f)
	cmd.Env = append(os.Environ(), "GNUPGHOME="+dir)
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	var keys []gpgKey
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, ":")
		switch {
		case len(f) > 3 && (f[0] == "pub" || f[0] == "sub"):
			keys = append(keys, gpgKey{algorithm: f[3]})
		case len(f) > 3 && f[0] == "pkd" && len(keys) > 0 && f[1] == "0":
			keys[len(keys)-1].n = strings.ToLower(f[3])
		case len(f) > 3 && f[0] == "pkd" && len(keys) > 0 && f[1] == "1":
			keys[len(keys)-1].e = strings.ToLower(f[3])
		}
	}
	return keys, true
}

// pkbfPGP lists the keys of in as a Scanner reads them, in gpg's terms:
// an RSA key's n and e, or "?" for a key pkbf reports an error for.
func pkbfPGP(t *testing.T, in []byte) (keys []gpgKey, failed bool) {
	s := NewScanner(bytes.NewReader(in))
	for s.Scan() {
		k := s.Key()
		spki, err := k.SPKI()
		if k.Part == "" {
			return nil, true // the armor or packets: no key at all
		}
		if err != nil {
			keys = append(keys, gpgKey{algorithm: "?"})
			continue
		}
		info, err := parseSPKI(spki)
		if err != nil {
			t.Fatal(err)
		}
		n, e := new(big.Int).SetBytes(info.n), new(big.Int).SetBytes(info.e)
		keys = append(keys, gpgKey{"1", hex.EncodeToString(n.Bytes()), hex.EncodeToString(e.Bytes())})
	}
	return keys, false
}

// TestOpenPGPAgainstGPG reads keys GnuPG made (an RSA primary key, Ed25519,
// P-256 and RSA subkeys) and hostile variations of them with a Scanner
// and with gpg, the oracle: both read the same keys in the same order (a
// key pkbf does not read, of another algorithm, as an error), or both
// fail, but for the named cases: gpg drops a subkey whose binding
// signature is missing or wrong, which pkbf reads (it checks keys, not
// signatures: one more key checked); pkbf refuses a key packet with
// bytes after its exponent, and armor without its END line (which may be
// cut short), which gpg reads; gpg 2.2 cannot read armor without its
// checksum (which RFC 9580 makes optional) when its base64 has no
// padding.
func TestOpenPGPAgainstGPG(t *testing.T) {
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		if os.Getenv("PKBF_REQUIRE_GPG") != "" {
			t.Fatal("gpg is not on PATH (PKBF_REQUIRE_GPG is set)")
		}
		t.Skip("gpg is not on PATH: OpenPGP keys are not compared with GnuPG's reading")
	}
	home := t.TempDir()
	gpgRun := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(gpg, append([]string{"--batch", "--passphrase", ""}, args...)...)
		cmd.Env = append(os.Environ(), "GNUPGHOME="+home)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gpg %v: %v", args, err)
		}
		return out
	}
	gpgRun("--quick-gen-key", "pkbf test <test@example.invalid>", "rsa2048", "default", "never")
	fpr := ""
	for _, line := range strings.Split(string(gpgRun("--with-colons", "--list-keys")), "\n") {
		if f := strings.Split(line, ":"); f[0] == "fpr" && fpr == "" {
			fpr = f[9]
		}
	}
	for _, algo := range []string{"ed25519", "nistp256", "rsa2048"} {
		gpgRun("--quick-add-key", fpr, algo, "default", "never")
	}
	exported := gpgRun("--armor", "--export")
	packets, err := pgpDearmor(exported)
	if err != nil {
		t.Fatal(err)
	}
	type packet struct {
		tag  byte
		body []byte
	}
	var list []packet
	for rest := packets; len(rest) > 0; {
		tag, body, r, err := pgpPacket(rest)
		if err != nil {
			t.Fatal(err)
		}
		list, rest = append(list, packet{tag, body}), r
	}
	// rebuilt writes the packets back, edit changing them (nil: drop).
	rebuilt := func(edit func(i int, p packet) []byte) []byte {
		var out []byte
		for i, p := range list {
			body := bytes.Clone(p.body)
			if edit != nil {
				body = edit(i, packet{p.tag, body})
			}
			if body != nil {
				out = append(out, pgpNewPacket(p.tag, body, 5)...)
			}
		}
		return pgpArmor(out, true)
	}
	last := len(list) - 2 // the RSA subkey, before its binding signature
	if list[last].tag != pgpTagPublicSubkey || list[0].tag != pgpTagPublicKey {
		t.Fatalf("gpg's key has packets %v: not primary ... RSA subkey, signature", list)
	}
	const (
		agree      = ""
		gpgDrops   = "gpg drops a subkey pkbf reads"
		pkbfStrict = "pkbf refuses a key gpg reads"
		noCRC      = "gpg 2.2 cannot read armor without its checksum"
		noEnd      = "pkbf refuses armor gpg reads"
	)
	cases := []struct {
		name   string
		in     []byte
		differ string
	}{
		{"as gpg exports it", exported, agree},
		{"rebuilt, five-byte lengths", rebuilt(nil), agree},
		{"text around the armor", append(append([]byte("a key:\n"), exported...), "that was it\n"...), agree},
		{"the checksum wrong", bytes.Replace(exported, []byte("\n="), []byte("\n=AAAA\n="), 1), agree},
		{"cut packets", pgpArmor(packets[:len(packets)-10], true), agree},
		{"without its checksum, base64 padded", pgpArmor(withUserID(packets, 1), false), agree},
		{"without its checksum, base64 not padded", pgpArmor(withUserID(packets, 0), false), noCRC},
		{"no END line", exported[:bytes.Index(exported, []byte(pgpArmorEnd))], noEnd},
		{"the last subkey's binding signature dropped", rebuilt(func(i int, p packet) []byte {
			if i == last+1 {
				return nil
			}
			return p.body
		}), gpgDrops},
		{"the last subkey's modulus changed", rebuilt(func(i int, p packet) []byte {
			if i == last {
				p.body[20] ^= 1
			}
			return p.body
		}), gpgDrops},
		{"a byte after the last subkey's exponent", rebuilt(func(i int, p packet) []byte {
			if i == last {
				return append(p.body, 0)
			}
			return p.body
		}), pkbfStrict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			theirs, ok := gpgRead(t, gpg, c.in)
			ours, failed := pkbfPGP(t, c.in)
			if ok && len(theirs) == 0 {
				t.Fatal("gpg read no key: a case that tests nothing")
			}
			for i, k := range theirs { // in pkbf's terms
				if k.algorithm != "1" && k.algorithm != "2" && k.algorithm != "3" {
					theirs[i] = gpgKey{algorithm: "?"}
				}
			}
			var got string
			switch {
			case !ok && failed, ok && slices.Equal(ours, theirs):
				got = agree
			case !ok && len(ours) > 0:
				got = noCRC
			case ok && failed && len(ours) == 0:
				got = noEnd
			case ok && len(ours) > len(theirs) && isSubsequence(theirs, ours):
				got = gpgDrops
			case ok && len(ours) == len(theirs) && slices.Contains(ours, gpgKey{algorithm: "?"}):
				got = pkbfStrict
				for i := range ours {
					if ours[i] != theirs[i] && ours[i].algorithm != "?" {
						got = "they disagree"
					}
				}
			default:
				got = "they disagree"
			}
			if got != c.differ {
				t.Fatalf("pkbf %v (failed %v), gpg %v (ok %v): %q, want %q", ours, failed, theirs, ok, got, c.differ)
			}
		})
	}
}

// withUserID appends a user ID to packets, of a length that makes their
// size rem modulo 3: 0 leaves no padding at the end of their base64.
func withUserID(packets []byte, rem int) []byte {
	id := []byte("x")
	for (len(packets)+2+len(id))%3 != rem {
		id = append(id, 'x')
	}
	return append(bytes.Clone(packets), pgpNewPacket(13, id, 1)...)
}

// isSubsequence reports whether a's elements are in b, in order.
func isSubsequence(a, b []gpgKey) bool {
	for _, x := range b {
		if len(a) > 0 && a[0] == x {
			a = a[1:]
		}
	}
	return len(a) == 0
}
