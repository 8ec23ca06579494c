package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf/internal/testkit"
)

// sshSignAddUser asks step-ca's /1.0/ssh/sign, through a JWK provisioner,
// for a user certificate of key for root, with addUser as its
// addUserPublicKey, and returns the status, the body and the certificates
// signed: the user certificate and the add-user one (nil when absent).
func (ca *stepCA) sshSignAddUser(t *testing.T, provisioner string, key, addUser crypto.Signer) (code int, body string, crt, addUserCrt *ssh.Certificate) {
	t.Helper()
	pub, addPub := sshPublic(t, key), sshPublic(t, addUser)
	opts := map[string]any{"certType": "user", "keyID": "root", "principals": []string{"root"}}
	token := ca.ott(t, provisioner, "/1.0/ssh/sign", "root", map[string]any{"step": map[string]any{"ssh": opts}})
	code, body = ca.post(t, "/1.0/ssh/sign", map[string]any{"publicKey": pub.Marshal(), "addUserPublicKey": addPub.Marshal(),
		"ott": token, "certType": "user", "keyID": "root", "principals": []string{"root"}})
	var answer struct {
		Crt        string `json:"crt"`
		AddUserCrt string `json:"addUserCrt"`
	}
	json.Unmarshal([]byte(body), &answer)
	parse := func(b64 string) *ssh.Certificate {
		if b64 == "" {
			return nil
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatalf("/1.0/ssh/sign answered a certificate that is not base64: %.300s", body)
		}
		k, err := ssh.ParsePublicKey(raw)
		if err != nil {
			t.Fatalf("/1.0/ssh/sign answered %v: %.300s", err, body)
		}
		c, ok := k.(*ssh.Certificate)
		if !ok {
			t.Fatalf("/1.0/ssh/sign answered a %s, not a certificate", k.Type())
		}
		return c
	}
	return code, body, parse(answer.Crt), parse(answer.AddUserCrt)
}

func sshPublic(t *testing.T, k crypto.Signer) ssh.PublicKey {
	t.Helper()
	pub, err := ssh.NewPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// sshIdentity writes key as dir/name, an OpenSSH private key, with cert
// beside it as name-cert.pub (ssh offers it with the key), and returns
// the key's path.
func sshIdentity(t *testing.T, dir, name string, key crypto.Signer, cert *ssh.Certificate) string {
	t.Helper()
	block, err := ssh.MarshalPrivateKey(key, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+"-cert.pub", ssh.MarshalAuthorizedKey(cert), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// F1 of red-team round 1: step-ca v0.30.2 signs, beside the user
// certificate /1.0/ssh/sign asks for, an add-user certificate for the
// request's addUserPublicKey without calling any webhook, so a
// compromised key gets an SSH certificate through a provisioner whose
// webhook is pkbf serve. docs/stepca.md states that limit and what holds.
// Here step-ca's ssh.addUserPrincipal is root (the worst case) and its
// ssh.addUserCommand internal-sftp (so that the test's sftp login runs no
// shell): step-ca signs the compromised key's add-user certificate, and
// an sshd trusting step-ca's user CA (from /1.0/ssh/roots) with
// TrustedUserCAKeys alone lets it in as root; through docs/sshd.md's
// lines (pkbf authorized-principals) it is refused, while a clean key's
// add-user certificate gets in. A provisioner with docs/stepca.md's SSH
// template signs the user certificate, which gets in through the same
// lines, and no add-user certificate. A compromised key as identityCSR
// fails the whole request.
func TestServeStepCAAddUserKey(t *testing.T) {
	s := newSSHDTest(t)
	bad := testkit.Signer(t, "Ed25519")
	template := docBlocks(t, "stepca.md", 1, "concat .Principals .Principals .Principals")[0]
	templateFile := filepath.Join(t.TempDir(), "ssh-user.tpl")
	if err := os.WriteFile(templateFile, []byte(strings.Join(template.Text, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ca := newStepCAEdited(t, map[string]crypto.Signer{"Ed25519": bad}, func(ca *stepCA, config map[string]any) {
		sshSection := config["ssh"].(map[string]any)
		sshSection["addUserPrincipal"], sshSection["addUserCommand"] = "root", "internal-sftp"
		authority := config["authority"].(map[string]any)
		ca.jwk["template-jwk"] = testkit.Signer(t, "P-256").(*ecdsa.PrivateKey)
		authority["provisioners"] = append(authority["provisioners"].([]any), map[string]any{
			"type": "JWK", "name": "template-jwk", "key": jwkPublic(ca.jwk["template-jwk"]), "claims": map[string]any{"enableSSHCA": true},
			"options": map[string]any{
				"webhooks": []any{map[string]any{"id": "pkbf-webhook", "name": "pkbf", "url": ca.webhookURL, "kind": "AUTHORIZING", "certType": "ALL"}},
				"ssh":      map[string]any{"templateFile": templateFile},
			},
		})
	})
	clean, cleanAddUser := testkit.Signer(t, "Ed25519"), testkit.Signer(t, "Ed25519")

	code, body, _, badCert := ca.sshSignAddUser(t, "pkbf-jwk", clean, bad)
	if code != http.StatusCreated || badCert == nil {
		t.Fatalf("/1.0/ssh/sign, clean publicKey, compromised addUserPublicKey: %d %.300s: step-ca no longer signs it: update docs/stepca.md", code, body)
	}
	if string(badCert.Key.Marshal()) != string(sshPublic(t, bad).Marshal()) || !slices.Equal(badCert.ValidPrincipals, []string{"root"}) {
		t.Fatalf("the add-user certificate is for %s, principals %q", ssh.FingerprintSHA256(badCert.Key), badCert.ValidPrincipals)
	}
	code, body, _, cleanCert := ca.sshSignAddUser(t, "pkbf-jwk", clean, cleanAddUser)
	if code != http.StatusCreated || cleanCert == nil {
		t.Fatalf("/1.0/ssh/sign, clean addUserPublicKey: %d %.300s", code, body)
	}
	code, body, templated, none := ca.sshSignAddUser(t, "template-jwk", clean, bad)
	if code != http.StatusCreated || templated == nil || none != nil {
		t.Errorf("/1.0/ssh/sign through the template's provisioner, compromised addUserPublicKey: %d %.300s; want the user certificate alone", code, body)
	}
	if templated != nil && !slices.Equal(templated.ValidPrincipals, []string{"root", "root", "root"}) {
		t.Errorf("the template's user certificate has principals %q, want root three times", templated.ValidPrincipals)
	}

	// A compromised key as identityCSR: refused, and so is the request.
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "root"}}, bad)
	if err != nil {
		t.Fatal(err)
	}
	opts := map[string]any{"certType": "user", "keyID": "root", "principals": []string{"root"}}
	token := ca.ott(t, "pkbf-jwk", "/1.0/ssh/sign", "root", map[string]any{"step": map[string]any{"ssh": opts}})
	if code, body := ca.post(t, "/1.0/ssh/sign", map[string]any{"publicKey": sshPublic(t, clean).Marshal(), "ott": token, "certType": "user", "keyID": "root",
		"principals": []string{"root"}, "identityCSR": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csr}))}); code != http.StatusForbidden {
		t.Errorf("/1.0/ssh/sign, compromised identityCSR: %d %.300s, want 403", code, body)
	}

	// sshd trusts step-ca's user CA, as /1.0/ssh/roots gives it.
	resp, err := ca.client.Get(ca.url + "/1.0/ssh/roots")
	if err != nil {
		t.Fatal(err)
	}
	var roots struct {
		UserKey []string `json:"userKey"`
	}
	err = json.NewDecoder(resp.Body).Decode(&roots)
	resp.Body.Close()
	if err != nil || len(roots.UserKey) != 1 {
		t.Fatalf("/1.0/ssh/roots: %v, %d user keys", err, len(roots.UserKey))
	}
	raw, _ := base64.StdEncoding.DecodeString(roots.UserKey[0])
	userCA, err := ssh.ParsePublicKey(raw)
	if err != nil {
		t.Fatalf("/1.0/ssh/roots: %v", err)
	}
	if string(userCA.Marshal()) != string(badCert.SignatureKey.Marshal()) {
		t.Fatalf("/1.0/ssh/roots gives user CA %s, the add-user certificate is signed by %s", ssh.FingerprintSHA256(userCA), ssh.FingerprintSHA256(badCert.SignatureKey))
	}
	cas := filepath.Join(s.dir, "user_ca.pub")
	os.WriteFile(cas, ssh.MarshalAuthorizedKey(userCA), 0o644)
	filter := filepath.Join(s.dir, "compromised.pkbf")
	s.run(s.pkbf, "create", "--hashes", "4", "--length", "16", filter)
	badLine := filepath.Join(s.dir, "compromised.pub")
	os.WriteFile(badLine, ssh.MarshalAuthorizedKey(sshPublic(t, bad)), 0o644)
	s.run(s.pkbf, "add", filter, badLine)
	os.Chmod(filter, 0o644)
	badID := sshIdentity(t, s.dir, "compromised", bad, badCert)
	cleanID := sshIdentity(t, s.dir, "clean-add-user", cleanAddUser, cleanCert)
	var templatedID string
	if templated != nil {
		templatedID = sshIdentity(t, s.dir, "templated", clean, templated)
	}
	empty := filepath.Join(s.dir, "authorized_keys")
	os.WriteFile(empty, nil, 0o644)

	// The control: TrustedUserCAKeys alone, no principals command.
	port, log := s.start("authorized-keys --syslog off --file "+empty+" "+filter+" -- %u %t %k", "TrustedUserCAKeys "+cas)
	if in, out := s.login(port, badID); !in {
		t.Fatalf("control: the compromised key's add-user certificate did not log in without pkbf authorized-principals:\n%s\nsshd's log:\n%s", out, log.String())
	}

	ours := strings.NewReplacer("/usr/local/bin/pkbf", s.pkbf, "/var/lib/pkbf/pwnedkeys.pkbf", filter, "/etc/ssh/user_ca.pub", cas,
		"authorized-keys ", "authorized-keys --syslog off --file "+empty+" ", "authorized-principals ", "authorized-principals --syslog off ")
	var documented []string
	for _, l := range sshdConfigBlock(t).Text {
		documented = append(documented, ours.Replace(l))
	}
	port, log = s.startConfig(documented...)
	if in, _ := s.login(port, badID); in {
		t.Errorf("docs/sshd.md's lines let in the compromised key's add-user certificate:\n%s", log.String())
	}
	if !waitFor(func() bool {
		return strings.Contains(log.String(), "certificate "+ssh.FingerprintSHA256(badCert.Key)+": probably compromised")
	}) {
		t.Errorf("sshd's log does not say pkbf refused the add-user certificate as compromised:\n%s", log.String())
	}
	if in, out := s.login(port, cleanID); !in {
		t.Errorf("docs/sshd.md's lines refuse a clean key's add-user certificate:\n%s\nsshd's log:\n%s", out, log.String())
	}
	if templatedID != "" {
		if in, out := s.login(port, templatedID); !in {
			t.Errorf("docs/sshd.md's lines refuse the template's user certificate (principals %q):\n%s\nsshd's log:\n%s", templated.ValidPrincipals, out, log.String())
		}
	}
}
