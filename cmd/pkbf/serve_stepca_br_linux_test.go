package main

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/asn1"
	"encoding/binary"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf/internal/doctest"
	"github.com/pkbf/pkbf/keys"
)

// TestServeStepCABRVectors: every weak-key vector's key through a real
// step-ca whose webhook is pkbf serve --br: the vectors' certificate
// requests through /1.0/sign as they are, and every key of every other
// vector (RSA, P-256, Ed25519; a bare modulus is no key, and has none)
// as the publicKey of an SSH user certificate through /1.0/ssh/sign
// (no proof of possession there; the webhook is certType ALL). A key the
// README or its notes call weak is refused: by pkbf's webhook, with each
// finding's rule in the reason step-ca logs, or by step-ca itself before
// the webhook (logged with its stage); the clean controls are signed.
func TestServeStepCABRVectors(t *testing.T) {
	rows := weakVectors(t)
	debian := weakDebianFile(t)
	// The vectors' requests are for names such as
	// dwk_amd64_rnd_2048_1.test.invalid, which step-ca's name policy
	// cannot parse (an underscore): this CA has no policy.
	ca := newStepCAEdited(t, map[string]crypto.Signer{}, func(_ *stepCA, config map[string]any) {
		delete(config["authority"].(map[string]any), "policy")
	}, "--br", "--debian", debian)
	type request struct {
		what, path string
		spki       []byte
		sign       func() (int, string)
	}
	signed, refusedByPKBF, refusedByStepCA := 0, 0, 0
	csrs := map[bool]int{} // /1.0/sign's answers: signed or not
	for _, v := range rows {
		path := filepath.Join(weakVectorsDir, v.file)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var reqs []request
		s := keys.NewScanner(bytes.NewReader(data))
		for s.Scan() {
			k := s.Key()
			if _, ok := k.Modulus(); ok {
				t.Logf("%s: a bare modulus, no key step-ca could sign: checked by pkbf check alone", v.file)
				continue
			}
			spki, err := k.SPKI()
			if err != nil {
				t.Fatalf("%s: %v", v.file, err)
			}
			where := v.file + ": " + k.Source()
			if blk, _ := pem.Decode(k.Raw); blk != nil && blk.Type == "CERTIFICATE REQUEST" {
				csr := k.Raw
				reqs = append(reqs, request{where + " (CSR)", "/1.0/sign", spki, func() (int, string) { return ca.signCSR(t, csr) }})
			}
			reqs = append(reqs, request{where + " (SSH)", "/1.0/ssh/sign", spki, func() (int, string) { return ca.sshSignWire(t, sshWire(t, spki)) }})
		}
		if s.Err() != nil {
			t.Fatal(s.Err())
		}
		for _, r := range reqs {
			want := wantVectorRules(t, v, r.what)
			fp := keys.Fingerprint(canonicalOf(r.spki))
			code, body := r.sign()
			if r.path == "/1.0/sign" {
				csrs[code == http.StatusCreated]++
			}
			reason := "the " + map[string]string{"/1.0/sign": "certificate", "/1.0/ssh/sign": "SSH certificate"}[r.path] + "'s public key is refused (pwnedkeys fingerprint " + fp + "): "
			// step-ca answers 403 for a webhook's refusal (pkbf logs it
			// before it answers), and other codes for its own.
			byPKBF := code == http.StatusForbidden && ca.serveLogged(reason)
			switch {
			case len(want) == 0 && code == http.StatusCreated:
				signed++
			case len(want) == 0:
				t.Errorf("%s, a clean control: %d %.300s", r.what, code, body)
			case code == http.StatusCreated:
				t.Errorf("%s, weak (%v): step-ca signed it", r.what, want)
			case byPKBF:
				refusedByPKBF++
				// step-ca logs pkbf's reason, with every finding.
				if !waitFor(func() bool { return strings.Contains(ca.caLogs.String(), "pkbf: "+reason) }) {
					t.Errorf("%s: step-ca did not log pkbf's reason %q", r.what, reason)
				}
				line := logLine(ca.serveLogs.String(), reason)
				for _, rule := range want {
					if !strings.Contains(line, rule+": ") {
						t.Errorf("%s: pkbf's reason lacks %s: %s", r.what, rule, line)
					}
				}
			default:
				refusedByStepCA++
				t.Logf("%s, weak (%v): refused by step-ca itself, before the webhook: %d %.200s", r.what, want, code, strings.TrimSpace(body))
			}
		}
	}
	t.Logf("%d keys signed (clean controls), %d refused by pkbf's webhook, %d by step-ca before it", signed, refusedByPKBF, refusedByStepCA)
	// docs/stepca.md shows one of step-ca's lines.
	shown := docBlocks(t, "stepca.md", 1, "level=warning", "(pkbf-weak-key)")[0]
	pattern := regexp.MustCompile(`time="[^"]*"`).ReplaceAllString(shown.Text[0], `time="…"`)
	pattern = regexp.MustCompile(`fingerprint [0-9a-f]{8}…`).ReplaceAllString(pattern, "fingerprint …")
	if !slices.ContainsFunc(strings.Split(ca.caLogs.String(), "\n"), func(l string) bool { return doctest.Match([]string{pattern}, []string{l}) }) {
		t.Errorf("step-ca logged no line as %s shows it (%s)", shown.Where(), pattern)
	}
	if signed < 10 || refusedByPKBF < 30 || csrs[true] < 1 || csrs[false] < 6 {
		t.Errorf("%d signed, %d refused by pkbf, requests %v: the test does not discriminate", signed, refusedByPKBF, csrs)
	}
}

// logLine returns the line of log holding text.
func logLine(log, text string) string {
	for l := range strings.Lines(log) {
		if strings.Contains(l, text) {
			return l
		}
	}
	return ""
}

// canonicalOf is an SPKI's canonical encoding, as pkbf fingerprints it.
func canonicalOf(spki []byte) []byte {
	if c, err := keys.Canonical(spki); err == nil {
		return c
	}
	return spki
}

// signCSR asks step-ca's /1.0/sign for a certificate for the CSR in PEM,
// as it is, through the JWK provisioner with the webhook: the token's
// subject is the CSR's common name.
func (ca *stepCA) signCSR(t *testing.T, csrPEM []byte) (int, string) {
	blk, _ := pem.Decode(csrPEM)
	csr, err := x509.ParseCertificateRequest(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	cn := csr.Subject.CommonName
	token := ca.ott(t, "pkbf-jwk", "/1.0/sign", cn, map[string]any{"sans": []string{cn}})
	return ca.post(t, "/1.0/sign", map[string]string{"csr": string(csrPEM), "ott": token})
}

// sshSignWire asks step-ca's /1.0/ssh/sign for a user certificate of the
// key in SSH wire format, through the JWK provisioner with the webhook.
func (ca *stepCA) sshSignWire(t *testing.T, wire []byte) (int, string) {
	opts := map[string]any{"certType": "user", "keyID": "alice", "principals": []string{"alice"}}
	token := ca.ott(t, "pkbf-jwk", "/1.0/ssh/sign", "alice", map[string]any{"step": map[string]any{"ssh": opts}})
	return ca.post(t, "/1.0/ssh/sign", map[string]any{"publicKey": wire, "ott": token, "certType": "user", "keyID": "alice", "principals": []string{"alice"}})
}

// sshWire is the SSH wire format of the key of an SPKI: RSA written by
// hand (Go refuses some of the vectors' exponents), others through
// x/crypto/ssh.
func sshWire(t *testing.T, spki []byte) []byte {
	var info struct {
		Algorithm struct{ Algorithm asn1.ObjectIdentifier }
		Key       asn1.BitString
	}
	if _, err := asn1.Unmarshal(spki, &info); err != nil {
		t.Fatal(err)
	}
	if info.Algorithm.Algorithm.Equal(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}) {
		var rsaKey struct{ N, E *big.Int }
		if _, err := asn1.Unmarshal(info.Key.Bytes, &rsaKey); err != nil {
			t.Fatal(err)
		}
		var b []byte
		for _, f := range [][]byte{[]byte("ssh-rsa"), mpint(rsaKey.E), mpint(rsaKey.N)} {
			b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
			b = append(b, f...)
		}
		return b
	}
	pub, err := x509.ParsePKIXPublicKey(spki)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k.Marshal()
}

// mpint is a positive integer as SSH's mpint holds it: big-endian, with a
// zero byte before a high bit.
func mpint(n *big.Int) []byte {
	b := n.Bytes()
	if len(b) > 0 && b[0]&0x80 != 0 {
		b = slices.Insert(b, 0, 0)
	}
	return b
}
