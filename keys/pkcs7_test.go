package keys

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/der"
	"github.com/pkbf/pkbf/internal/testkit"
)

// pkcs7Vector is the ROCA authors' PKCS#7 signature, BER with indefinite
// lengths as Windows writes it, beside the project.
const pkcs7Vector = "../../shared/vectors/weak/roca/pkcs701.p7s"

// p7Result is what a reader made of a PKCS#7 input: the SHA-256 of each
// certificate's SPKI it read, and whether it reported an error.
type p7Result struct {
	keys   []string
	failed bool
}

func (r p7Result) String() string {
	s := ""
	for _, k := range r.keys {
		s += k[:8] + " "
	}
	if r.failed {
		s += "(error)"
	}
	return "[" + s + "]"
}

// pkbfP7 reads in with a Scanner.
func pkbfP7(in []byte) p7Result {
	var r p7Result
	s := NewScanner(bytes.NewReader(in))
	for s.Scan() {
		k := s.Key()
		spki, err := k.SPKI()
		if err != nil {
			r.failed = true
			continue
		}
		sum := sha256.Sum256(spki)
		r.keys = append(r.keys, hex.EncodeToString(sum[:]))
	}
	if s.Err() != nil {
		r.failed = true
	}
	return r
}

// opensslP7 reads in with openssl pkcs7 -print_certs, and each
// certificate it prints with openssl x509 -pubkey (which reads BER
// certificates, as pkbf does not), the SPKI pkbf then hashes.
func opensslP7(t *testing.T, openssl string, in []byte, form string) p7Result {
	t.Helper()
	dir := t.TempDir()
	f := filepath.Join(dir, "in.p7")
	os.WriteFile(f, in, 0o644)
	out, err := exec.Command(openssl, "pkcs7", "-inform", form, "-in", f, "-print_certs").Output()
	if err != nil {
		return p7Result{failed: true}
	}
	var r p7Result
	for rest := out; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		cert := filepath.Join(dir, "cert.pem")
		os.WriteFile(cert, pem.EncodeToMemory(block), 0o644)
		pub, err := exec.Command(openssl, "x509", "-in", cert, "-noout", "-pubkey").Output()
		if err != nil {
			t.Fatalf("openssl x509 -pubkey of a certificate openssl pkcs7 printed: %v\n%s", err, out)
		}
		spki, err := SPKI(pub)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(spki)
		r.keys = append(r.keys, hex.EncodeToString(sum[:]))
	}
	return r
}

// asnNode is an element of a DER structure, to be written back with its
// framing changed: BER's indefinite length, or a length in more bytes
// than it needs.
type asnNode struct {
	raw         []byte // a leaf of indefinite length, as it is
	id          []byte // the identifier
	content     []byte // a leaf's content
	children    []*asnNode
	leaf        bool
	indefinite  bool
	lengthBytes int // > 0: the long form in this many bytes
}

// parseTree reads the element b to the given depth: deeper elements,
// primitive ones and those of indefinite length are leaves.
func parseTree(t *testing.T, b []byte, depth int) *asnNode {
	t.Helper()
	h, err := readBERHeader(b)
	if err == nil && h.indefinite {
		return &asnNode{raw: b, leaf: true}
	}
	if err != nil || h.headerLen+h.length != len(b) {
		t.Fatalf("parseTree: %x is not one element: %v", b, err)
	}
	n := &asnNode{id: b[:h.idLen], content: b[h.headerLen:], leaf: !h.constructed || depth == 0}
	for rest := n.content; !n.leaf && len(rest) > 0; {
		m, err := berLen(rest, 0)
		if err != nil {
			t.Fatal(err)
		}
		n.children = append(n.children, parseTree(t, rest[:m], depth-1))
		rest = rest[m:]
	}
	return n
}

// at is the node at the path of child indexes.
func (n *asnNode) at(path ...int) *asnNode {
	for _, i := range path {
		n = n.children[i]
	}
	return n
}

func (n *asnNode) encode() []byte {
	if n.raw != nil {
		return n.raw
	}
	content := n.content
	if !n.leaf {
		content = nil
		for _, c := range n.children {
			content = append(content, c.encode()...)
		}
	}
	out := bytes.Clone(n.id)
	switch {
	case n.indefinite:
		return append(append(append(out, 0x80), content...), 0, 0)
	case n.lengthBytes > 0:
		out = append(out, 0x80|byte(n.lengthBytes))
		for i := n.lengthBytes - 1; i >= 0; i-- {
			out = append(out, byte(len(content)>>(8*i)))
		}
		return append(out, content...)
	}
	return append(appendBERLength(out, len(content)), content...)
}

// Paths in a SignedData ContentInfo: the SignedData, its fields.
var (
	p7Signed      = []int{1, 0}
	p7Certs       = []int{1, 0, 3}
	p7SignerInfos = []int{1, 0, 4}
)

// testP7Files makes PKCS#7 bundles with openssl, of a certificate of
// each kind of key: a signature as openssl cms -stream writes it (BER,
// indefinite lengths down to the content's OCTET STRING), and a bundle
// of certificates alone (crl2pkcs7: DER).
func testP7Files(t *testing.T, openssl string) (ber, derBundle []byte) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(openssl, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "rsa.key", "-out", "rsa.pem", "-subj", "/CN=pkbf BER test RSA", "-days", "2")
	run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ec.key", "-out", "ec.pem", "-subj", "/CN=pkbf BER test EC", "-days", "2")
	os.WriteFile(filepath.Join(dir, "msg.txt"), []byte("signed by a test\n"), 0o644)
	run("cms", "-sign", "-signer", "rsa.pem", "-inkey", "rsa.key", "-certfile", "ec.pem", "-in", "msg.txt", "-nodetach", "-stream", "-outform", "DER", "-out", "signed.p7s")
	run("crl2pkcs7", "-nocrl", "-certfile", "rsa.pem", "-certfile", "ec.pem", "-outform", "DER", "-out", "certs.p7b")
	return testkit.ReadFile(t, filepath.Join(dir, "signed.p7s")), testkit.ReadFile(t, filepath.Join(dir, "certs.p7b"))
}

// TestPKCS7AgainstOpenSSL reads PKCS#7 bundles, BER and DER, and hostile
// variations of them, with a Scanner and with openssl pkcs7 -print_certs,
// the oracle: both read the same certificates, or both fail, but for the
// named cases where pkbf is the stricter (it reports what openssl
// ignores, or refuses a certificate openssl reads, as it refuses it
// outside a container): never a certificate openssl does not read.
func TestPKCS7AgainstOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		if os.Getenv("PKBF_REQUIRE_TLS_PEERS") != "" {
			t.Fatal("openssl is not on PATH")
		}
		t.Skip("openssl is not on PATH: PKCS#7 is not compared with its reading")
	}
	berIn, derIn := testP7Files(t, openssl)
	converted, err := berToDER(berIn)
	if err != nil {
		t.Fatal(err)
	}
	tree := func(b []byte) *asnNode { return parseTree(t, b, 6) }
	variant := func(b []byte, edit func(n *asnNode)) []byte {
		n := tree(b)
		edit(n)
		return n.encode()
	}
	allIndefinite := func(n *asnNode) {
		n.indefinite = true
		n.at(1).indefinite = true
		for _, c := range append([]*asnNode{n.at(p7Signed...)}, n.at(p7Signed...).children...) {
			c.indefinite = !c.leaf
		}
	}
	// How pkbf may differ from openssl.
	const (
		agree       = ""
		stricter    = "pkbf also reports an error openssl ignores"
		refusesCert = "pkbf refuses a certificate openssl reads"
	)
	type p7Case struct {
		name, form string
		in         []byte
		differ     string
	}
	cases := []p7Case{
		{"openssl cms -stream (BER)", "DER", berIn, agree},
		{"openssl crl2pkcs7 (DER)", "DER", derIn, agree},
		{"the BER one made DER by pkbf", "DER", converted, agree},
		{"BER in PEM", "PEM", pemOf("PKCS7", berIn), agree},
		{"every container level indefinite", "DER", variant(derIn, allIndefinite), agree},
		{"long lengths at the container levels", "DER", variant(converted, func(n *asnNode) {
			allIndefinite(n)
			n.lengthBytes, n.indefinite = 4, false
			n.at(p7Signed...).lengthBytes, n.at(p7Signed...).indefinite = 3, false
			n.at(p7Signed...).at(0).lengthBytes = 2 // the version
		}), agree},
		{"the certificates' field indefinite", "DER", variant(derIn, func(n *asnNode) { n.at(p7Certs...).indefinite = true }), agree},
		{"without its last end-of-contents", "DER", berIn[:len(berIn)-2], agree},
		{"half its last end-of-contents", "DER", berIn[:len(berIn)-1], agree},
		{"a primitive of indefinite length", "DER", bytes.Replace(berIn, []byte{0x02, 0x01, 0x01}, []byte{0x02, 0x80, 0x01, 0x00, 0x00}, 1), agree},
		{"junk after it", "DER", append(bytes.Clone(berIn), "junk"...), stricter},
		{"an end-of-contents after it", "DER", append(bytes.Clone(berIn), 0, 0), stricter},
		{"a certificate in BER", "DER", variant(derIn, func(n *asnNode) { n.at(p7Certs...).at(0).indefinite = true }), refusesCert},
		{"a long length inside a certificate", "DER", variant(derIn, func(n *asnNode) { n.at(p7Certs...).at(1).at(0).lengthBytes = 3 }), refusesCert},
		{"no signer infos' end-of-contents", "DER", variant(converted, func(n *asnNode) {
			allIndefinite(n)
			n.at(p7SignerInfos...).leaf, n.at(p7SignerInfos...).content = true, []byte{0x30, 0x80, 0x02, 0x01, 0x01}
		}), agree},
	}
	for cut := 16; cut < len(berIn); cut += len(berIn) / 9 {
		cases = append(cases, p7Case{fmt.Sprintf("cut to %d bytes", cut), "DER", berIn[:cut], agree})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ours, theirs := pkbfP7(c.in), opensslP7(t, openssl, c.in, c.form)
			if !theirs.failed && len(theirs.keys) == 0 {
				t.Fatalf("openssl read no certificate: a case that tests nothing")
			}
			for _, k := range ours.keys {
				if !slices.Contains(theirs.keys, k) {
					t.Fatalf("pkbf %v, openssl %v: pkbf reads a certificate openssl does not", ours, theirs)
				}
			}
			var got string
			switch {
			case slices.Equal(ours.keys, theirs.keys) && ours.failed == theirs.failed:
				got = agree
			case slices.Equal(ours.keys, theirs.keys) && ours.failed:
				got = stricter
			case ours.failed && len(ours.keys) < len(theirs.keys):
				got = refusesCert
			default:
				got = "they disagree"
			}
			if got != c.differ {
				t.Fatalf("pkbf %v, openssl %v: %q, want %q", ours, theirs, got, c.differ)
			}
		})
	}
}

// pemOf is der in a PEM block of the type given.
func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// TestScannerPKCS7BER: a Scanner reads each certificate of a PKCS#7
// bundle in BER, in DER and PEM streams, and the objects after it, at
// their places; SPKI reads a bundle of one.
func TestScannerPKCS7BER(t *testing.T) {
	p256 := testkit.ReadFile(t, "../testdata/keys/p256.cert.der")
	ed := testkit.ReadFile(t, "../testdata/keys/ed25519.cert.der")
	bundle := testSignedData([][]byte{p256, ed}, berElem(der.TagContext0, true, berElem(0x24, true, berPrim(der.TagOctetString, []byte("hi")))), [4]bool{true, true, true, true})
	want := []string{mustSPKIHex(t, p256), mustSPKIHex(t, ed), mustSPKIHex(t, p256)}
	for _, tc := range []struct {
		name    string
		in      []byte
		sources []string
	}{
		{"DER", append(bytes.Clone(bundle), p256...), []string{
			"object 1 (byte 0), certificate 1", "object 2 (byte 0), certificate 2", fmt.Sprintf("object 3 (byte %d)", len(bundle))}},
		{"PEM", append(pemOf("PKCS7", bundle), pemOf("CERTIFICATE", p256)...), []string{
			"block 1 (line 1), certificate 1", "block 1 (line 1), certificate 2", fmt.Sprintf("block 2 (line %d)", bytes.Count(pemOf("PKCS7", bundle), []byte("\n"))+1)}},
	} {
		s := NewScanner(bytes.NewReader(tc.in))
		var got, sources []string
		for s.Scan() {
			k := s.Key()
			spki, err := k.SPKI()
			if err != nil {
				t.Fatalf("%s: %s: %v", tc.name, k.Source(), err)
			}
			got, sources = append(got, hex.EncodeToString(spki)), append(sources, k.Source())
		}
		if s.Err() != nil || !slices.Equal(got, want) || !slices.Equal(sources, tc.sources) {
			t.Errorf("%s: keys from %q, %v; want %q", tc.name, sources, s.Err(), tc.sources)
		}
	}
	one := testSignedData([][]byte{p256}, nil, [4]bool{true, true, true, true})
	for _, in := range [][]byte{one, pemOf("PKCS7", one)} {
		if spki, err := SPKI(in); err != nil || hex.EncodeToString(spki) != want[0] {
			t.Errorf("SPKI of a BER bundle of one certificate: %x, %v", spki, err)
		}
	}
	if _, err := SPKI(bundle); err == nil || !strings.Contains(err.Error(), "read them with Scanner") {
		t.Errorf("SPKI of a BER bundle of two keys: %v, want an error sending to Scanner", err)
	}
	if _, err := SPKI([]byte("\x30\x80\x30\x00\x00\x00")); err == nil || !strings.Contains(err.Error(), "only in a PKCS#7 container") {
		t.Errorf("SPKI of BER that is no PKCS#7: %v", err)
	}
}

func mustSPKIHex(t *testing.T, der []byte) string {
	t.Helper()
	spki, err := SPKI(der)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(spki)
}

// TestPKCS7Vector reads the ROCA authors' BER signature (pkcs701.p7s, as
// Windows wrote it) as openssl does.
func TestPKCS7Vector(t *testing.T) {
	in, err := os.ReadFile(pkcs7Vector)
	if err != nil {
		t.Skipf("the vector %s is absent (it lives beside the project, in shared/): %v", pkcs7Vector, err)
	}
	ours := pkbfP7(in)
	if ours.failed || len(ours.keys) != 1 {
		t.Fatalf("pkbf reads %v, want one certificate", ours)
	}
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not on PATH: the vector is not compared with its reading")
	}
	if theirs := opensslP7(t, openssl, in, "PEM"); !slices.Equal(ours.keys, theirs.keys) || theirs.failed {
		t.Fatalf("pkbf reads %v, openssl %v", ours, theirs)
	}
}
