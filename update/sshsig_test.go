package update

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf/internal/testkit"
)

// sshKeygen returns the path of ssh-keygen, the oracle for SSH
// signatures. The test skips where it is missing, unless
// PKBF_REQUIRE_SSH_KEYGEN is set (as CI sets it).
func sshKeygen(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("ssh-keygen")
	if err != nil {
		if os.Getenv("PKBF_REQUIRE_SSH_KEYGEN") != "" {
			t.Fatalf("PKBF_REQUIRE_SSH_KEYGEN is set but: %v", err)
		}
		t.Skip("no ssh-keygen here:", err)
	}
	return p
}

// signer is a key ssh-keygen made, with its private key file.
type signer struct {
	file string
	pub  ssh.PublicKey
	line []byte // the .pub file
}

// newSigner makes a key with ssh-keygen -t typ in dir.
func newSigner(t *testing.T, dir, typ string, args ...string) signer {
	t.Helper()
	file := filepath.Join(dir, typ)
	out, err := exec.Command(sshKeygen(t), append([]string{"-q", "-t", typ, "-N", "", "-C", "pkbf test", "-f", file}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen -t %s: %v: %s", typ, err, out)
	}
	line := testkit.ReadFile(t, file+".pub")
	pub, _, _, _, err := ssh.ParseAuthorizedKey(line)
	if err != nil {
		t.Fatal(err)
	}
	return signer{file: file, pub: pub, line: line}
}

// sign signs msg with ssh-keygen -Y sign under namespace ns and returns
// the armored signature.
func (s signer) sign(t *testing.T, msg []byte, ns string, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "filter.pkbf")
	os.WriteFile(file, msg, 0o644)
	args = append([]string{"-Y", "sign", "-f", s.file, "-n", ns}, args...)
	out, err := exec.Command(sshKeygen(t), append(args, file)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v: %s", err, out)
	}
	return testkit.ReadFile(t, file+".sig")
}

// oracleVerifies reports whether ssh-keygen -Y verify accepts sig of msg
// by key under the pkbf namespace.
func oracleVerifies(t *testing.T, sig, msg []byte, key ssh.PublicKey) bool {
	t.Helper()
	return oracleVerifiesLine(t, sig, msg, append([]byte("publisher "), ssh.MarshalAuthorizedKey(key)...))
}

// oracleVerifiesLine is oracleVerifies with the allowed_signers line given.
func oracleVerifiesLine(t *testing.T, sig, msg, line []byte) bool {
	t.Helper()
	dir := t.TempDir()
	allowed, sigFile := filepath.Join(dir, "allowed_signers"), filepath.Join(dir, "sig")
	os.WriteFile(allowed, line, 0o644)
	os.WriteFile(sigFile, sig, 0o644)
	cmd := exec.Command(sshKeygen(t), "-Y", "verify", "-f", allowed, "-I", "publisher", "-n", SignatureNamespace, "-s", sigFile)
	cmd.Stdin = bytes.NewReader(msg)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	t.Logf("ssh-keygen -Y verify: %s", bytes.TrimSpace(out))
	return err == nil
}

// verifySig is what Update does with a signature and the bytes it has.
func verifySig(sig, msg []byte, keys []ssh.PublicKey) error {
	s, err := parseSSHSig(sig)
	if err != nil {
		return err
	}
	h := s.newHash()
	h.Write(msg)
	_, err = s.verify(h.Sum(nil), keys)
	return err
}

// sshsigBlob builds an SSHSIG signature of msg by key, with the fields
// given, signing with algorithm alg ("" for the key's default): for the
// signatures ssh-keygen will not make.
func sshsigBlob(t *testing.T, key ssh.AlgorithmSigner, alg, ns, reserved string, version uint32, msg []byte, trailing []byte) []byte {
	t.Helper()
	sig, err := key.SignWithAlgorithm(rand.Reader, sshsigSigned(ns, msg), alg)
	if err != nil {
		t.Fatal(err)
	}
	return sshsigArmor(key.PublicKey().Marshal(), ns, reserved, version, ssh.Marshal(sig), trailing)
}

// sshsigSigned is the data an SSHSIG signature of msg signs (SHA-512).
func sshsigSigned(ns string, msg []byte) []byte {
	digest := sha512.Sum512(msg)
	signed := cryptobyte.NewBuilder(nil)
	signed.AddBytes([]byte("SSHSIG"))
	for _, v := range [][]byte{[]byte(ns), nil, []byte("sha512"), digest[:]} {
		signed.AddUint32LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(v) })
	}
	return signed.BytesOrPanic()
}

// sshsigArmor builds and armors an SSHSIG blob from its fields, with
// trailing bytes after it.
func sshsigArmor(pub []byte, ns, reserved string, version uint32, sig, trailing []byte) []byte {
	blob := cryptobyte.NewBuilder(nil)
	blob.AddBytes([]byte("SSHSIG"))
	blob.AddUint32(version)
	for _, v := range [][]byte{pub, []byte(ns), []byte(reserved), []byte("sha512"), sig} {
		blob.AddUint32LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(v) })
	}
	blob.AddBytes(trailing)
	return armor(blob.BytesOrPanic())
}

// skSig signs msg as a FIDO security key with an Ed25519 key would
// (PROTOCOL.u2f: the key signs SHA-256 of the application, the flags, a
// counter and SHA-256 of the signed data), with the flags given. It
// returns the signature and the sk-ssh-ed25519 public key.
func skSig(t *testing.T, msg []byte, flags byte) ([]byte, ssh.PublicKey) {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	const app = "ssh:"
	wire := ssh.Marshal(struct{ Type, Key, App string }{"sk-ssh-ed25519@openssh.com", string(pub), app})
	key, err := ssh.ParsePublicKey(wire)
	if err != nil {
		t.Fatal(err)
	}
	appHash, dataHash := sha256.Sum256([]byte(app)), sha256.Sum256(sshsigSigned("pkbf", msg))
	tbs := append(append(appHash[:], flags, 0, 0, 0, 7), dataHash[:]...)
	sig := ssh.Marshal(struct {
		Format, Blob string
		Flags        byte
		Counter      uint32
	}{"sk-ssh-ed25519@openssh.com", string(ed25519.Sign(priv, tbs)), flags, 7})
	return sshsigArmor(wire, "pkbf", "", 1, sig, nil), key
}

// armor wraps a blob as ssh-keygen does.
func armor(blob []byte) []byte {
	b64 := base64.StdEncoding.EncodeToString(blob)
	var out strings.Builder
	out.WriteString("-----BEGIN SSH SIGNATURE-----\n")
	for len(b64) > 70 {
		out.WriteString(b64[:70] + "\n")
		b64 = b64[70:]
	}
	out.WriteString(b64 + "\n-----END SSH SIGNATURE-----\n")
	return []byte(out.String())
}

// privateKey reads a key file ssh-keygen wrote, as a signer.
func privateKey(t *testing.T, s signer) ssh.AlgorithmSigner {
	t.Helper()
	k, err := ssh.ParsePrivateKey(testkit.ReadFile(t, s.file))
	if err != nil {
		t.Fatal(err)
	}
	return k.(ssh.AlgorithmSigner)
}

// Signatures made by the real ssh-keygen -Y sign (Ed25519, ECDSA, RSA;
// SHA-512 and SHA-256) verify; every hostile one is refused with an
// error saying why, and ssh-keygen -Y verify, the oracle, agrees on each
// (the named disagreements, where pkbf is stricter: OpenSSH takes version
// 0, and a security key's signature made without a touch).
func TestSSHSignatureDifferential(t *testing.T) {
	dir := t.TempDir()
	ed, ec, rsa := newSigner(t, dir, "ed25519"), newSigner(t, dir, "ecdsa", "-b", "256"), newSigner(t, dir, "rsa", "-b", "2048")
	msg := makeFilter(t, 1, 1e9, 12, "signed")
	other := makeFilter(t, 2, 1e9, 12, "signed", "more")
	edSig := ed.sign(t, msg, "pkbf")
	edSigner := privateKey(t, ed)
	plain, err := edSigner.Sign(rand.Reader, sshsigSigned("pkbf", msg))
	if err != nil {
		t.Fatal(err)
	}
	plain.Rest = []byte("junk")
	junkSig := sshsigArmor(ed.pub.Marshal(), "pkbf", "", 1, ssh.Marshal(plain), nil)
	skTouched, skTouchedKey := skSig(t, msg, 1)
	skUntouched, skUntouchedKey := skSig(t, msg, 0)
	type sigCase struct {
		name   string
		sig    []byte
		msg    []byte
		key    ssh.PublicKey
		want   string // "" when it verifies
		oracle bool   // what ssh-keygen -Y verify says
	}
	cases := []sigCase{
		{"ed25519", edSig, msg, ed.pub, "", true},
		{"ecdsa", ec.sign(t, msg, "pkbf"), msg, ec.pub, "", true},
		{"rsa", rsa.sign(t, msg, "pkbf"), msg, rsa.pub, "", true},
		{"ed25519 sha256", ed.sign(t, msg, "pkbf", "-O", "hashalg=sha256"), msg, ed.pub, "", true},
		{"rsa sha256", rsa.sign(t, msg, "pkbf", "-O", "hashalg=sha256"), msg, rsa.pub, "", true},
		{"wrong namespace", ed.sign(t, msg, "git"), msg, ed.pub, `the signature is for namespace "git", not "pkbf"`, false},
		{"wrong key", ec.sign(t, msg, "pkbf"), msg, ed.pub, "not by a signer key given", false},
		{"tampered filter", edSig, other, ed.pub, "does not verify: the filter is not the one signed", false},
		{"one bit flipped", edSig, flipBit(msg, 8*len(msg)-1), ed.pub, "does not verify", false},
		{"truncated", edSig[:len(edSig)/2], msg, ed.pub, "no line -----END SSH SIGNATURE-----", false},
		{"truncated blob", cutBlob(t, edSig, 10), msg, ed.pub, "cut short", false},
		{"garbage", []byte("hello, this is not a signature\n"), msg, ed.pub, "does not start with the line -----BEGIN SSH SIGNATURE-----", false},
		{"empty", nil, msg, ed.pub, "does not start with the line", false},
		{"broken base64", bytes.Replace(edSig, []byte("\n"), []byte("\n!!"), 2), msg, ed.pub, "base64 is broken", false},
		{"an SSH public key", ed.line, msg, ed.pub, "does not start with the line", false},
		{"trailing data", sshsigBlob(t, privateKey(t, ed), "", "pkbf", "", 1, msg, []byte{0}), msg, ed.pub, "1 bytes after its end", false},
		{"rsa with SHA-1", sshsigBlob(t, privateKey(t, rsa), ssh.KeyAlgoRSA, "pkbf", "", 1, msg, nil), msg, rsa.pub, `RSA algorithm is "ssh-rsa"`, false},
		{"rsa-sha2-256 made by hand", sshsigBlob(t, privateKey(t, rsa), ssh.KeyAlgoRSASHA256, "pkbf", "", 1, msg, nil), msg, rsa.pub, "", true},
		{"reserved field set", sshsigBlob(t, privateKey(t, ed), "", "pkbf", "x", 1, msg, nil), msg, ed.pub, "", true},
		{"version 2", sshsigBlob(t, privateKey(t, ed), "", "pkbf", "", 2, msg, nil), msg, ed.pub, "version 2", false},
		{"version 0 (OpenSSH takes it)", sshsigBlob(t, privateKey(t, ed), "", "pkbf", "", 0, msg, nil), msg, ed.pub, "version 0", true},
		// Red-team finding 10.
		{"junk after the signature in its field", junkSig, msg, ed.pub, "4 bytes after the signature", false},
		{"security key, touched", skTouched, msg, skTouchedKey, "", true},
		{"security key, not touched (OpenSSH takes it)", skUntouched, msg, skUntouchedKey, "made without a touch", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := verifySig(c.sig, c.msg, []ssh.PublicKey{c.key})
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "pkbf: ")):
				t.Errorf("%v, want an error with %q", err, c.want)
			}
			if got := oracleVerifies(t, c.sig, c.msg, c.key); got != c.oracle {
				t.Errorf("ssh-keygen -Y verify says %v, the test expects %v", got, c.oracle)
			}
		})
	}
	// Several signer keys: any of them.
	if err := verifySig(edSig, msg, []ssh.PublicKey{rsa.pub, ed.pub}); err != nil {
		t.Errorf("with two signer keys: %v", err)
	}
}

func flipBit(b []byte, bit int) []byte {
	c := bytes.Clone(b)
	c[bit/8] ^= 0x80 >> (bit % 8)
	return c
}

// cutBlob removes the last n bytes of an armored signature's blob.
func cutBlob(t *testing.T, armored []byte, n int) []byte {
	t.Helper()
	s, _ := strings.CutPrefix(string(armored), sshsigBegin)
	b64, _, _ := strings.Cut(s, sshsigEnd)
	blob, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(b64), ""))
	if err != nil {
		t.Fatal(err)
	}
	return armor(blob[:len(blob)-n])
}

// Update with a signature: the signed filter installs and says who signed
// it; a refused signature (wrong namespace, wrong key, another filter,
// garbage, missing) leaves the installed filter alone, whatever Force says.
func TestUpdateSignature(t *testing.T) {
	keyDir, dir := t.TempDir(), t.TempDir()
	ed, ec := newSigner(t, keyDir, "ed25519"), newSigner(t, keyDir, "ecdsa", "-b", "256")
	v1 := makeFilter(t, 1, 1e9, 14, "a")
	v2 := makeFilter(t, 2, 1e9+1, 14, "a", "b")
	var mu sync.Mutex
	files := map[string][]byte{}
	serve := func(name string, b []byte) { mu.Lock(); files[name] = b; mu.Unlock() }
	s, ts := newServer(t, v1)
	s.handler = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b, ok := files[r.URL.Path]
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}
	path := filepath.Join(dir, "filter.pkbf")
	opts := fastOpts(nil)
	opts.SignatureURL, opts.SignerKeys = ts.URL+"/filter.pkbf.sig", []ssh.PublicKey{ed.pub}
	serve("/filter.pkbf", v1)
	serve("/filter.pkbf.sig", ed.sign(t, v1, "pkbf"))
	res, err := Update(context.Background(), ts.URL+"/filter.pkbf", path, opts)
	if err != nil || !res.Updated || res.SignedBy == nil || ssh.FingerprintSHA256(res.SignedBy) != ssh.FingerprintSHA256(ed.pub) {
		t.Fatalf("a signed filter: %+v, %v", res, err)
	}
	serve("/filter.pkbf", v2)
	opts.Force = true
	for _, c := range []struct {
		name string
		sig  []byte
		want string
	}{
		{"wrong namespace", ed.sign(t, v2, "file"), `namespace "file"`},
		{"wrong key", ec.sign(t, v2, "pkbf"), "not by a signer key given"},
		{"another filter's", ed.sign(t, v1, "pkbf"), "does not verify"},
		{"garbage", []byte("<html>404</html>"), "not an SSH signature"},
		{"missing", nil, "404 Not Found"},
	} {
		if c.sig == nil {
			mu.Lock()
			delete(files, "/filter.pkbf.sig")
			mu.Unlock()
		} else {
			serve("/filter.pkbf.sig", c.sig)
		}
		checkNotAuthentic(t, c.name, ts.URL+"/filter.pkbf", path, opts, c.want, v1)
	}
	serve("/filter.pkbf.sig", ed.sign(t, v2, "pkbf"))
	opts.Force = false
	if res, err := Update(context.Background(), ts.URL+"/filter.pkbf", path, opts); err != nil || !res.Updated || !bytes.Equal(testkit.ReadFile(t, path), v2) {
		t.Fatalf("the next signed revision: %+v, %v", res, err)
	}
}

// Red-team finding 10: a signer line "cert-authority KEY" was read as
// KEY, so a plain signature by the CA key verified; ssh-keygen -Y verify
// takes only certificates such a key signed. The line is refused now.
func TestSignerCertAuthorityRefused(t *testing.T) {
	ed := newSigner(t, t.TempDir(), "ed25519")
	msg := makeFilter(t, 1, 1e9, 12, "signed")
	sig := ed.sign(t, msg, "pkbf")
	line := append([]byte("cert-authority "), ed.line...)
	if oracleVerifiesLine(t, sig, msg, append([]byte("publisher "), line...)) {
		t.Error("ssh-keygen -Y verify takes a plain signature by a cert-authority key; the test expects it not to")
	}
	if _, err := ParseSignerKeys(line); err == nil || !strings.Contains(err.Error(), "line 1 is a certificate authority (cert-authority)") {
		t.Errorf("ParseSignerKeys: %v, want the cert-authority line refused", err)
	}
	// Nor is a certificate taken as its key, whatever its validity and
	// principals (found on review).
	_, caKey, _ := ed25519.GenerateKey(rand.Reader)
	_, subject, _ := ed25519.GenerateKey(rand.Reader)
	ca, _ := ssh.NewSignerFromKey(caKey)
	pub, _ := ssh.NewPublicKey(subject.Public())
	cert := &ssh.Certificate{Key: pub, CertType: ssh.UserCert, ValidBefore: 1}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseSignerKeys(ssh.MarshalAuthorizedKey(cert)); err == nil || !strings.Contains(err.Error(), "line 1 is a certificate (ssh-ed25519-cert-v01@openssh.com)") {
		t.Errorf("ParseSignerKeys of a certificate: %v, want it refused", err)
	}
}

func TestSignerKeysAndOptions(t *testing.T) {
	ed := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl test"
	keys, err := ParseSignerKeys([]byte("# the publisher's keys\n\n" + ed + "\n" + ed + "\n"))
	if err != nil || len(keys) != 2 {
		t.Fatalf("%d keys, %v", len(keys), err)
	}
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", "no SSH public key in it"},
		{"comments only", "# nothing\n", "no SSH public key in it"},
		{"private key", "-----BEGIN OPENSSH PRIVATE KEY-----\n", "line 1 is not an SSH public key"},
		{"second line broken", ed + "\nssh-ed25519 AAAA\n", "line 2 is not an SSH public key"},
	} {
		if _, err := ParseSignerKeys([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "filter.pkbf")
	for _, c := range []struct {
		name string
		opts Options
		want string
	}{
		{"signature without keys", Options{SignatureURL: "https://example.com/f.sig"}, "needs the signer's public key"},
		{"keys without signature", Options{SignerKeys: keys}, "no signature URL"},
		{"short digest", Options{SHA256: "abcd"}, "is not a SHA-256 digest"},
		{"digest URL not http", Options{SHA256URL: "file:///etc/passwd"}, "is not an http or https URL"},
		{"signature over http", Options{SignatureURL: "http://example.com/f.sig", SignerKeys: keys}, "is plain http"},
	} {
		if _, err := Update(context.Background(), "https://example.com/f", path, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// The signature and digest readers take whatever a server sends: they
// never panic, and every error carries the package prefix.
func FuzzParseSSHSig(f *testing.F) {
	f.Add([]byte("-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAQ==\n-----END SSH SIGNATURE-----\n"))
	f.Add([]byte("-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----"))
	f.Add([]byte("not a signature"))
	f.Add(armor([]byte("SSHSIG\x00\x00\x00\x01\x00\x00\x00\x00")))
	key, _, _, _, _ := ssh.ParseAuthorizedKey([]byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := verifySig(b, []byte("message"), []ssh.PublicKey{key})
		if err == nil {
			t.Fatal("a fuzzed signature verified")
		}
		if !strings.HasPrefix(err.Error(), "pkbf: ") {
			t.Fatalf("error without the prefix: %v", err)
		}
		if _, err := parseDigestFile(b, "f.pkbf"); err != nil && !strings.HasPrefix(err.Error(), "pkbf: ") {
			t.Fatalf("digest error without the prefix: %v", err)
		}
	})
}
