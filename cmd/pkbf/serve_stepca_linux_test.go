package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
)

// stepCAVersion is the step-ca the end-to-end test runs
// (github.com/smallstep/certificates).
const stepCAVersion = "v0.30.2"

var stepCABuild struct {
	once sync.Once
	bin  string
	err  error
	out  string
}

// stepCABinary builds step-ca from the Go module proxy once, into the
// user's cache directory keyed by version (a cold build takes minutes, a
// warm one seconds). It skips when the build fails, unless
// PKBF_REQUIRE_STEPCA is set (as .ci/run sets it): there it fails.
func stepCABinary(t testing.TB) string {
	t.Helper()
	stepCABuild.once.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "pkbf-test", "step-ca-"+stepCAVersion)
		stepCABuild.bin = filepath.Join(dir, "step-ca")
		if _, err := os.Stat(stepCABuild.bin); err == nil {
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			stepCABuild.err = err
			return
		}
		// Without cgo: with it, step-ca needs the PC/SC smart-card library.
		build := exec.Command("go", "install", "github.com/smallstep/certificates/cmd/step-ca@"+stepCAVersion)
		build.Dir = dir
		// For this machine, whatever GOARCH the tests are built for.
		for _, v := range os.Environ() {
			if name, _, _ := strings.Cut(v, "="); name != "GOOS" && name != "GOARCH" && name != "GO386" {
				build.Env = append(build.Env, v)
			}
		}
		// -trimpath, as TestDocs builds docs/stepca.md's recipe (its
		// GOFLAGS): the two builds share Go's build cache. The last of a
		// name wins.
		build.Env = append(build.Env, "CGO_ENABLED=0", "GOBIN="+dir, "GOFLAGS=-trimpath")
		out, err := build.CombinedOutput()
		stepCABuild.err, stepCABuild.out = err, string(out)
	})
	if stepCABuild.err != nil {
		msg := fmt.Sprintf("building step-ca %s: %v\n%s", stepCAVersion, stepCABuild.err, stepCABuild.out)
		if os.Getenv("PKBF_REQUIRE_STEPCA") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return stepCABuild.bin
}

// stepCA is a step-ca on 127.0.0.1 whose JWK and ACME provisioners call
// pkbf serve's webhook, and a JWK provisioner that calls none.
type stepCA struct {
	url         string // https://127.0.0.1:PORT
	webhookURL  string // pkbf serve's https://127.0.0.1:PORT/v1/step-ca/authorize
	client      *http.Client
	jwk         map[string]*ecdsa.PrivateKey // JWK provisioner keys, by name
	recorded    chan recorded                // the calls of record-jwk's webhook
	acmeHTTP    *httptest.Server             // answers http-01 challenges
	tokens      sync.Map                     // challenge path -> key authorization
	serveLogs   *syncBuffer
	caLogs      *syncBuffer
	compromised map[string]crypto.Signer // keys the filter holds, by name
}

// newStepCA starts pkbf serve (over HTTPS, with --client-ca the CA's
// root, and serveArgs) on a filter holding the keys in compromised, then
// step-ca with the webhook pointed at it, and waits until both answer.
func newStepCA(t testing.TB, compromised map[string]crypto.Signer, serveArgs ...string) *stepCA {
	return newStepCAEdited(t, compromised, nil, serveArgs...)
}

// newStepCAEdited is newStepCA with edit, when not nil, given ca.json
// before step-ca starts (ca's webhookURL and jwk set).
func newStepCAEdited(t testing.TB, compromised map[string]crypto.Signer, edit func(ca *stepCA, config map[string]any), serveArgs ...string) *stepCA {
	bin := stepCABinary(t)
	dir := t.TempDir()
	ca := &stepCA{compromised: compromised}
	f := writeCAFiles(t, dir)
	filter := writeFilterOf(t, dir, compromised)
	args := append([]string{"--tls-cert", f.serveCertPath, "--tls-key", f.serveKeyPath, "--client-ca", f.rootPath, "--client-name", stepCAName}, serveArgs...)
	_, serveAddr, serveLogs := startServe(t, append(args, filter)...)
	ca.serveLogs = serveLogs

	// ca.json: an SSH CA, JWK provisioners for X.509 and SSH certificates
	// (with the webhook for both, for X.509 only, and without it) and an
	// ACME provisioner with it.
	ca.jwk = map[string]*ecdsa.PrivateKey{}
	for _, name := range []string{"pkbf-jwk", "x509-jwk", "plain-jwk", "record-jwk"} {
		ca.jwk[name] = testkit.Signer(t, "P-256").(*ecdsa.PrivateKey)
	}
	// record-jwk's webhook records what step-ca sends, and allows.
	ca.recorded = make(chan recorded, 16)
	recorder := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ca.recorded <- recorded{body, r.Header.Get("X-Smallstep-Signature")}
		io.WriteString(w, `{"allow":true}`)
	}))
	recorder.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{f.serveCert.Raw}, PrivateKey: f.serveKey}}}
	recorder.StartTLS()
	t.Cleanup(recorder.Close)
	webhook := func(certType, url string) map[string]any {
		return map[string]any{"webhooks": []any{map[string]any{"id": "pkbf-webhook", "name": "pkbf", "url": url, "kind": "AUTHORIZING", "certType": certType}}}
	}
	pkbfURL := "https://" + serveAddr + "/v1/step-ca/authorize"
	ca.webhookURL = pkbfURL
	sshCA := map[string]any{"enableSSHCA": true}
	addr := freeAddr(t)
	config := map[string]any{
		"root": f.rootPath, "crt": f.interPath, "key": f.interKeyPath,
		"ssh":     map[string]any{"hostKey": f.write("ssh_host_ca_key", pkcs8PEM(t, testkit.Signer(t, "P-256"))), "userKey": f.write("ssh_user_ca_key", pkcs8PEM(t, testkit.Signer(t, "P-256")))},
		"address": addr, "dnsNames": []string{"127.0.0.1"}, "commonName": stepCAName,
		"logger": map[string]any{"format": "text"},
		"db":     map[string]any{"type": "badgerv2", "dataSource": filepath.Join(dir, "db")},
		// As docs/stepca.md asks: no renewal or rekey (step-ca calls no
		// webhook there), and no subscriber certificate with the name of
		// the CA's own (as a DNS name too: step-ca checks a denied common
		// name against the DNS rules as well, and with no DNS rule lets
		// it pass).
		"authority": map[string]any{
			"claims": map[string]any{"disableRenewal": true},
			"policy": map[string]any{"x509": map[string]any{"deny": map[string]any{"cn": []string{stepCAName}, "dns": []string{stepCAName}}}},
			"provisioners": []any{
				map[string]any{"type": "JWK", "name": "pkbf-jwk", "key": jwkPublic(ca.jwk["pkbf-jwk"]), "claims": sshCA, "options": webhook("ALL", pkbfURL)},
				map[string]any{"type": "JWK", "name": "x509-jwk", "key": jwkPublic(ca.jwk["x509-jwk"]), "claims": sshCA, "options": webhook("X509", pkbfURL)},
				map[string]any{"type": "JWK", "name": "plain-jwk", "key": jwkPublic(ca.jwk["plain-jwk"]), "claims": sshCA},
				map[string]any{"type": "JWK", "name": "record-jwk", "key": jwkPublic(ca.jwk["record-jwk"]), "options": webhook("X509", recorder.URL)},
				map[string]any{"type": "ACME", "name": "acme", "challenges": []string{"http-01"}, "options": webhook("X509", pkbfURL)},
			}},
	}
	if edit != nil {
		edit(ca, config)
	}
	b, _ := json.MarshalIndent(config, "", "  ")
	ca.start(t, bin, dir, addr, f.write("ca.json", b), f.root)
	return ca
}

// caFiles are a test CA's files: its root and intermediate, and pkbf
// serve's certificate from the root (step-ca's webhook client trusts its
// root).
type caFiles struct {
	t                                 testing.TB
	dir                               string
	root, serveCert                   *x509.Certificate
	serveKey                          crypto.Signer
	rootPath, interPath, interKeyPath string
	serveCertPath, serveKeyPath       string
}

func (f caFiles) write(name string, b []byte) string {
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pkcs8PEM(t testing.TB, k crypto.Signer) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf("PRIVATE KEY", der)
}

func writeCAFiles(t testing.TB, dir string) caFiles {
	rootKey, root := testkit.Cert(t, "pkbf test root", nil, nil, func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid, c.KeyUsage = true, true, x509.KeyUsageCertSign|x509.KeyUsageCRLSign
	})
	interKey, inter := testkit.Cert(t, "pkbf test intermediate", root, rootKey, func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid, c.KeyUsage, c.MaxPathLenZero = true, true, x509.KeyUsageCertSign|x509.KeyUsageCRLSign, true
	})
	serveKey, serveCert := testkit.Cert(t, "pkbf serve", root, rootKey, func(c *x509.Certificate) {
		c.IPAddresses, c.KeyUsage = []net.IP{net.IPv4(127, 0, 0, 1)}, x509.KeyUsageDigitalSignature
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
	f := caFiles{t: t, dir: dir, root: root, serveCert: serveCert, serveKey: serveKey}
	f.rootPath = f.write("root_ca.crt", pemOf("CERTIFICATE", root.Raw))
	f.interPath = f.write("intermediate_ca.crt", pemOf("CERTIFICATE", inter.Raw))
	f.interKeyPath = f.write("intermediate_ca_key", pkcs8PEM(t, interKey))
	f.serveCertPath = f.write("serve.crt", pemOf("CERTIFICATE", serveCert.Raw))
	f.serveKeyPath = f.write("serve.key", pkcs8PEM(t, serveKey))
	return f
}

// writeFilterOf writes dir/pwned.pkbf, holding the keys of compromised
// under every encoding.
func writeFilterOf(t testing.TB, dir string, compromised map[string]crypto.Signer) string {
	w, err := pkbf.New(8, 20)
	if err != nil {
		t.Fatal(err)
	}
	for name, k := range compromised {
		der, err := x509.MarshalPKIXPublicKey(k.Public())
		if err != nil {
			t.Fatal(name, err)
		}
		if _, err := keycheck.AddKey(w, der); err != nil {
			t.Fatal(name, err)
		}
	}
	filter := filepath.Join(dir, "pwned.pkbf")
	if err := w.WriteFile(filter); err != nil {
		t.Fatal(err)
	}
	return filter
}

// start runs step-ca with caJSON, listening on addr, its http-01
// challenges answered from ca.tokens, and waits until it is healthy.
func (ca *stepCA) start(t testing.TB, bin, dir, addr, caJSON string, root *x509.Certificate) {
	ca.url = "https://" + addr
	ca.acmeHTTP = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v, ok := ca.tokens.Load(r.URL.Path); ok {
			io.WriteString(w, v.(string))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(ca.acmeHTTP.Close)
	_, acmePort, _ := net.SplitHostPort(strings.TrimPrefix(ca.acmeHTTP.URL, "http://"))
	cmd := exec.Command(bin, "--insecure", "--acme-http-port", acmePort, caJSON)
	cmd.Env = append(os.Environ(), "STEPPATH="+filepath.Join(dir, "step"))
	ca.caLogs = &syncBuffer{}
	cmd.Stdout, cmd.Stderr = ca.caLogs, ca.caLogs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	pool := x509.NewCertPool()
	pool.AddCert(root)
	ca.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for i := 0; ; i++ {
		resp, err := ca.client.Get(ca.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if i == 300 {
			t.Fatalf("step-ca is not healthy after 30 s: %v\n%s", err, ca.caLogs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stepCAName is the common name of step-ca's own certificate, which it
// presents to pkbf serve (ca.json's commonName, --client-name).
const stepCAName = "step-ca.pkbf.test"

// freeAddr returns a free 127.0.0.1 address for a server the test starts.
func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// recorded is a webhook call as step-ca made it.
type recorded struct {
	body      []byte
	signature string
}

// jwkKid is a provisioner key's kid: its RFC 7638 thumbprint.
func jwkKid(k *ecdsa.PrivateKey) string {
	x, y := coords(&k.PublicKey)
	sum := sha256.Sum256([]byte(`{"crv":"P-256","kty":"EC","x":"` + x + `","y":"` + y + `"}`))
	return b64url(sum[:])
}

// coords are a P-256 public key's coordinates, base64url.
func coords(pub *ecdsa.PublicKey) (x, y string) {
	point, _ := pub.Bytes() // 0x04 || X || Y
	return b64url(point[1:33]), b64url(point[33:])
}

func jwkPublic(k *ecdsa.PrivateKey) map[string]string {
	x, y := coords(&k.PublicKey)
	return map[string]string{"kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": jwkKid(k), "use": "sig", "alg": "ES256"}
}

// ott is a one-time token for the endpoint at path (/1.0/sign or
// /1.0/ssh/sign) through a JWK provisioner: an ES256 JWS made by hand,
// with claims added to the usual ones.
func (ca *stepCA) ott(t testing.TB, provisioner, path, subject string, claims map[string]any) string {
	key := ca.jwk[provisioner]
	kid := jwkKid(key)
	header, _ := json.Marshal(map[string]string{"alg": "ES256", "kid": kid, "typ": "JWT"})
	jti := make([]byte, 16)
	rand.Read(jti)
	now := time.Now().Unix()
	all := map[string]any{"iss": provisioner, "sub": subject, "aud": ca.url + path, "nbf": now - 60, "iat": now, "exp": now + 300, "jti": hex.EncodeToString(jti)}
	for k, v := range claims {
		all[k] = v
	}
	payload, _ := json.Marshal(all)
	input := b64url(header) + "." + b64url(payload)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + b64url(sig)
}

// post sends body as JSON to step-ca and returns the status and answer.
func (ca *stepCA) post(t testing.TB, path string, body any) (int, string) {
	b, _ := json.Marshal(body)
	resp, err := ca.client.Post(ca.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}

// sign asks step-ca's /1.0/sign for a certificate for name and key,
// through a JWK provisioner, and returns the status and body.
func (ca *stepCA) sign(t testing.TB, key crypto.Signer, name, provisioner string) (int, string) {
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name}, DNSNames: []string{name}}, key)
	if err != nil {
		t.Fatal(err)
	}
	token := ca.ott(t, provisioner, "/1.0/sign", name, map[string]any{"sans": []string{name}})
	return ca.post(t, "/1.0/sign", map[string]string{"csr": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csr})), "ott": token})
}

// sshSign asks step-ca's /1.0/ssh/sign for a user certificate for key,
// through a JWK provisioner.
func (ca *stepCA) sshSign(t testing.TB, key crypto.Signer, provisioner string) (int, string) {
	pub, err := ssh.NewPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	opts := map[string]any{"certType": "user", "keyID": "alice", "principals": []string{"alice"}}
	token := ca.ott(t, provisioner, "/1.0/ssh/sign", "alice", map[string]any{"step": map[string]any{"ssh": opts}})
	return ca.post(t, "/1.0/ssh/sign", map[string]any{"publicKey": pub.Marshal(), "ott": token, "certType": "user", "keyID": "alice", "principals": []string{"alice"}})
}

// acmeCertificate orders a certificate for the IP address 127.0.0.1 with
// key through the ACME provisioner, as an ACME client does: account,
// order, http-01 challenge, finalize. It returns the chain (DER, leaf
// first).
func (ca *stepCA) acmeCertificate(t testing.TB, key crypto.Signer) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	account, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	client := &acme.Client{Key: account, DirectoryURL: ca.url + "/acme/acme/directory", HTTPClient: ca.client}
	if _, err := client.Register(ctx, &acme.Account{}, acme.AcceptTOS); err != nil {
		t.Fatalf("ACME account: %v", err)
	}
	order, err := client.AuthorizeOrder(ctx, []acme.AuthzID{{Type: "ip", Value: "127.0.0.1"}})
	if err != nil {
		t.Fatalf("ACME order: %v", err)
	}
	for _, u := range order.AuthzURLs {
		z, err := client.GetAuthorization(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if z.Status == acme.StatusValid {
			continue
		}
		var chal *acme.Challenge
		for _, c := range z.Challenges {
			if c.Type == "http-01" {
				chal = c
			}
		}
		if chal == nil {
			t.Fatalf("no http-01 challenge in %+v", z)
		}
		answer, err := client.HTTP01ChallengeResponse(chal.Token)
		if err != nil {
			t.Fatal(err)
		}
		ca.tokens.Store(client.HTTP01ChallengePath(chal.Token), answer)
		if _, err := client.Accept(ctx, chal); err != nil {
			t.Fatalf("ACME challenge: %v", err)
		}
		if _, err := client.WaitAuthorization(ctx, z.URI); err != nil {
			t.Fatalf("ACME authorization: %v\n%s", err, ca.caLogs.String())
		}
	}
	if order, err = client.WaitOrder(ctx, order.URI); err != nil {
		t.Fatalf("ACME order: %v", err)
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}, key)
	if err != nil {
		t.Fatal(err)
	}
	chain, _, err := client.CreateOrderCert(ctx, order.FinalizeURL, csr, true)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(chain[0])
	if err != nil {
		t.Fatal(err)
	}
	spki, _ := x509.MarshalPKIXPublicKey(key.Public())
	if !bytes.Equal(leaf.RawSubjectPublicKeyInfo, spki) {
		t.Errorf("the ACME certificate is not for the key asked")
	}
	return chain, nil
}

// serveLogged reports whether pkbf serve logs text, waiting up to 10 s
// for its log to be read: pkbf writes it before it answers step-ca, but
// the test reads it from a pipe.
func (ca *stepCA) serveLogged(text string) bool {
	for range 100 {
		if strings.Contains(ca.serveLogs.String(), text) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func fingerprintOf(t testing.TB, k crypto.Signer) string {
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return keys.Fingerprint(der)
}

// A real step-ca (built from the module proxy) with pkbf serve as its
// AUTHORIZING webhook, over HTTPS with the CA's client certificate: a CSR
// with a clean key is signed, one with a compromised key refused, through
// /1.0/sign with a JWK provisioner (RSA, P-256, Ed25519) and through ACME
// (golang.org/x/crypto/acme, http-01 on 127.0.0.1), where the client sees
// pkbf's reason.
func TestServeStepCA(t *testing.T) {
	start := time.Now()
	compromised := map[string]crypto.Signer{"RSA": testkit.Signer(t, "RSA"), "P-256": testkit.Signer(t, "P-256"), "Ed25519": testkit.Signer(t, "Ed25519")}
	ca := newStepCA(t, compromised)
	t.Logf("step-ca and pkbf serve ready in %v", time.Since(start))
	start = time.Now()
	defer func() { t.Logf("signing and ACME took %v", time.Since(start)) }()

	// X.509 and SSH user certificates, for which the key reaches the
	// webhook in the SSH wire format.
	for _, endpoint := range []struct {
		path, what string
		sign       func(key crypto.Signer, provisioner string) (int, string)
	}{
		{"/1.0/sign", "certificate", func(k crypto.Signer, p string) (int, string) { return ca.sign(t, k, "host.pkbf.test", p) }},
		{"/1.0/ssh/sign", "SSH certificate", func(k crypto.Signer, p string) (int, string) { return ca.sshSign(t, k, p) }},
	} {
		for _, kind := range []string{"RSA", "P-256", "Ed25519"} {
			if code, body := endpoint.sign(testkit.Signer(t, kind), "pkbf-jwk"); code != http.StatusCreated {
				t.Errorf("%s, clean %s key: %d %s\nstep-ca:\n%s", endpoint.path, kind, code, body, ca.caLogs.String())
			}
			code, body := endpoint.sign(compromised[kind], "pkbf-jwk")
			if code != http.StatusForbidden {
				t.Errorf("%s, compromised %s key: %d %s, want 403", endpoint.path, kind, code, body)
			} else if kind == "P-256" {
				t.Logf("%s answers a compromised key: %d %s", endpoint.path, code, body)
			}
			// The refusal was pkbf's, for this key.
			fp := fingerprintOf(t, compromised[kind])
			if !ca.serveLogged("the " + endpoint.what + "'s public key is reported as compromised (pwnedkeys fingerprint " + fp) {
				t.Errorf("pkbf serve did not log refusing the compromised %s key %s for %s:\n%s", kind, fp, endpoint.path, ca.serveLogs.String())
			}
			// step-ca's answer does not say why; its log does.
			if !waitFor(func() bool {
				return strings.Contains(ca.caLogs.String(), "pkbf: the "+endpoint.what+"'s public key is reported as compromised (pwnedkeys fingerprint "+fp)
			}) {
				t.Errorf("step-ca did not log pkbf's reason for refusing the compromised %s key %s for %s:\n%s", kind, fp, endpoint.path, ca.caLogs.String())
			}
			// The provisioner without the webhook signs it: the webhook refused.
			if code, body := endpoint.sign(compromised[kind], "plain-jwk"); code != http.StatusCreated {
				t.Errorf("%s without the webhook, compromised %s key: %d %s", endpoint.path, kind, code, body)
			}
		}
	}
	// A security key (sk-ssh-ed25519) whose key is a compromised Ed25519
	// key: step-ca signs it as it is, and pkbf reads the key inside.
	sk := ssh.Marshal(struct{ Name, Key, App string }{"sk-ssh-ed25519@openssh.com", string(compromised["Ed25519"].Public().(ed25519.PublicKey)), "ssh:"})
	for provisioner, want := range map[string]int{"pkbf-jwk": http.StatusForbidden, "plain-jwk": http.StatusCreated} {
		opts := map[string]any{"certType": "user", "keyID": "alice", "principals": []string{"alice"}}
		token := ca.ott(t, provisioner, "/1.0/ssh/sign", "alice", map[string]any{"step": map[string]any{"ssh": opts}})
		if code, body := ca.post(t, "/1.0/ssh/sign", map[string]any{"publicKey": sk, "ott": token, "certType": "user", "keyID": "alice", "principals": []string{"alice"}}); code != want {
			t.Errorf("/1.0/ssh/sign through %s, a security key of a compromised Ed25519 key: %d %.200s, want %d", provisioner, code, body, want)
		}
	}
	// Logged twice: the plain key above, and the security key.
	if fp := fingerprintOf(t, compromised["Ed25519"]); !waitFor(func() bool {
		return strings.Count(ca.serveLogs.String(), "the SSH certificate's public key is reported as compromised (pwnedkeys fingerprint "+fp) == 2
	}) {
		t.Errorf("pkbf serve did not log refusing the security key of %s:\n%s", fp, ca.serveLogs.String())
	}
	// Issue 48, item 11: a webhook with "certType": "X509", as
	// docs/stepca.md once showed it for every provisioner, is not called
	// for SSH certificates: step-ca signs one for a compromised key.
	if code, body := ca.sshSign(t, compromised["P-256"], "x509-jwk"); code != http.StatusCreated {
		t.Errorf(`/1.0/ssh/sign through a webhook of "certType": "X509", compromised key: %d %s; step-ca now calls it for SSH certificates: update docs/stepca.md`, code, body)
	}

	// step-ca's signature of a call, without a secret set (ca.json cannot
	// set one): the hex HMAC-SHA256 of the body under the empty key, the
	// scheme stepca.Options.Secret checks.
	if code, body := ca.sign(t, testkit.Signer(t, "P-256"), "recorded.pkbf.test", "record-jwk"); code != http.StatusCreated {
		t.Errorf("/1.0/sign through the recording webhook: %d %s", code, body)
	}
	select {
	case call := <-ca.recorded:
		mac := hmac.New(sha256.New, nil)
		mac.Write(call.body)
		if want := hex.EncodeToString(mac.Sum(nil)); call.signature != want {
			t.Errorf("step-ca signed a call %q, want the HMAC under the empty key %s", call.signature, want)
		}
	default:
		t.Errorf("step-ca did not call the recording webhook")
	}

	if _, err := ca.acmeCertificate(t, testkit.Signer(t, "P-256")); err != nil {
		t.Errorf("ACME, clean key: %v\nstep-ca:\n%s", err, ca.caLogs.String())
	}
	_, err := ca.acmeCertificate(t, compromised["P-256"])
	var problem *acme.Error
	fp := fingerprintOf(t, compromised["P-256"])
	if !errors.As(err, &problem) || problem.ProblemType != "urn:ietf:params:acme:error:unauthorized" ||
		!strings.Contains(problem.Detail, "pkbf: the certificate's public key is reported as compromised (pwnedkeys fingerprint "+fp+")") {
		t.Errorf("ACME, compromised key: %v; want unauthorized with pkbf's reason", err)
	} else {
		t.Logf("the ACME client sees: %v", err)
	}
}

// jwkChain signs key through the JWK provisioner with the webhook and
// returns the chain (DER, leaf first).
func (ca *stepCA) jwkChain(t testing.TB, key crypto.Signer) [][]byte {
	code, body := ca.sign(t, key, "host.pkbf.test", "pkbf-jwk")
	if code != http.StatusCreated {
		t.Fatalf("/1.0/sign, clean key: %d %s", code, body)
	}
	var answer struct {
		CertChain []string `json:"certChain"`
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil {
		t.Fatal(err)
	}
	var chain [][]byte
	for _, p := range answer.CertChain {
		b, _ := pem.Decode([]byte(p))
		if b == nil {
			t.Fatalf("/1.0/sign answered a chain that is not PEM: %s", body)
		}
		chain = append(chain, b.Bytes)
	}
	return chain
}

// mtls is an HTTPS client that trusts the CA's root and presents the
// certificate chain with key.
func (ca *stepCA) mtls(chain [][]byte, key crypto.Signer) *http.Client {
	tr := ca.client.Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = []tls.Certificate{{Certificate: chain, PrivateKey: key}}
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}
}

// subscriberChains are certificates step-ca signed for a subscriber's
// clean key, through JWK and ACME, with that key.
func (ca *stepCA) subscriberChains(t *testing.T) map[string]tls.Certificate {
	jwkKey, acmeKey := testkit.Signer(t, "P-256"), testkit.Signer(t, "P-256")
	acmeChain, err := ca.acmeCertificate(t, acmeKey)
	if err != nil {
		t.Fatalf("ACME, clean key: %v", err)
	}
	return map[string]tls.Certificate{
		"JWK":  {Certificate: ca.jwkChain(t, jwkKey), PrivateKey: jwkKey},
		"ACME": {Certificate: acmeChain, PrivateKey: acmeKey},
	}
}

// Item 1 of the step-ca review: step-ca signs on /1.0/rekey and
// /1.0/renew without calling any webhook, so a subscriber could have a
// compromised key signed there. With disableRenewal, as docs/stepca.md
// configures ca.json, both are refused for JWK and ACME certificates.
func TestServeStepCARekeyRefused(t *testing.T) {
	bad := testkit.Signer(t, "P-256")
	ca := newStepCA(t, map[string]crypto.Signer{"P-256": bad})
	badSPKI, err := x509.MarshalPKIXPublicKey(bad.Public())
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "host.pkbf.test"}, DNSNames: []string{"host.pkbf.test"}}, bad)
	if err != nil {
		t.Fatal(err)
	}
	rekey, _ := json.Marshal(map[string]string{"csr": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csr}))})
	for name, pair := range ca.subscriberChains(t) {
		for _, call := range []struct {
			path string
			body []byte
		}{{"/1.0/rekey", rekey}, {"/1.0/renew", nil}} {
			resp, err := ca.mtls(pair.Certificate, pair.PrivateKey.(crypto.Signer)).Post(ca.url+call.path, "application/json", bytes.NewReader(call.body))
			if err != nil {
				t.Fatalf("%s %s: %v", name, call.path, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s certificate, %s: %d %.200s, want 401 (renewal disabled)", name, call.path, resp.StatusCode, b)
			}
			if bytes.Contains(b, []byte("BEGIN CERTIFICATE")) {
				var answer struct {
					Crt string `json:"crt"`
				}
				json.Unmarshal(b, &answer)
				if blk, _ := pem.Decode([]byte(answer.Crt)); blk != nil {
					if leaf, err := x509.ParseCertificate(blk.Bytes); err == nil && bytes.Equal(leaf.RawSubjectPublicKeyInfo, badSPKI) {
						t.Errorf("%s certificate, %s: step-ca signed the compromised key", name, call.path)
					}
				}
			}
		}
	}
}

// Item 2 of the step-ca review: the CA's root, which pkbf serve's
// --client-ca trusts, also signs subscribers' certificates, with
// clientAuth. pkbf serve answers only step-ca's own certificate
// (--client-name): a subscriber's from JWK or ACME gets 403, while
// step-ca's calls are answered (a clean key is signed through the
// webhook). The policy docs/stepca.md sets keeps a subscriber from
// getting a certificate with the CA's name.
func TestServeStepCASubscriberRefused(t *testing.T) {
	ca := newStepCA(t, map[string]crypto.Signer{"P-256": testkit.Signer(t, "P-256")})
	spki, err := x509.MarshalPKIXPublicKey(testkit.Signer(t, "P-256").Public())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"x509Certificate": map[string]any{"publicKey": spki}})
	for name, pair := range ca.subscriberChains(t) {
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
			t.Errorf("%s certificate: step-ca no longer gives subscribers clientAuth (%v): update docs/stepca.md", name, leaf.ExtKeyUsage)
		}
		resp, err := ca.mtls(pair.Certificate, pair.PrivateKey.(crypto.Signer)).Post(ca.webhookURL, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s certificate: %v", name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), `"code":"pkbf-unauthenticated"`) || !strings.Contains(string(b), "are not the CA's") {
			t.Errorf("%s certificate to the webhook: %d %s, want 403 pkbf-unauthenticated", name, resp.StatusCode, b)
		}
	}
	// step-ca's own call is answered.
	if code, body := ca.sign(t, testkit.Signer(t, "P-256"), "host.pkbf.test", "pkbf-jwk"); code != http.StatusCreated {
		t.Errorf("/1.0/sign through the webhook, clean key: %d %s", code, body)
	}
	// No subscriber gets the name of the CA's certificate, as its common
	// name (with another name as its SAN) or as a SAN.
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: stepCAName}, DNSNames: []string{"host.pkbf.test"}}, testkit.Signer(t, "P-256"))
	if err != nil {
		t.Fatal(err)
	}
	token := ca.ott(t, "plain-jwk", "/1.0/sign", stepCAName, map[string]any{"sans": []string{"host.pkbf.test"}})
	if code, body := ca.post(t, "/1.0/sign", map[string]string{"csr": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csr})), "ott": token}); code == http.StatusCreated {
		t.Errorf("/1.0/sign with the common name %s, the CA's own: %d %s, want refused by the policy", stepCAName, code, body)
	}
	if code, body := ca.sign(t, testkit.Signer(t, "P-256"), stepCAName, "plain-jwk"); code == http.StatusCreated {
		t.Errorf("/1.0/sign for the SAN %s, the CA's own name: %d %s, want refused by the policy", stepCAName, code, body)
	}
}

// Issue 48, item 11: a webhook of ca.json has no secret (step-ca ignores
// one there) and step-ca signs its calls with the empty key, so pkbf serve
// with --webhook-secret-file refuses every certificate, clean keys' too,
// and its log says why.
func TestServeStepCAWebhookSecretCAJSON(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(base64.StdEncoding.EncodeToString([]byte("a secret step-ca never heard of"))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := newStepCA(t, map[string]crypto.Signer{"P-256": testkit.Signer(t, "P-256")}, "--webhook-secret-file", secretFile)
	if code, body := ca.sign(t, testkit.Signer(t, "P-256"), "host.pkbf.test", "pkbf-jwk"); code != http.StatusForbidden {
		t.Errorf("/1.0/sign, clean key, with --webhook-secret-file: %d %s, want 403", code, body)
	}
	if !ca.serveLogged("step-ca: refused (pkbf-unauthenticated): pkbf: the webhook call's X-Smallstep-Signature is an HMAC under the empty key, not the webhook secret: step-ca has no secret for this webhook (it ignores a secret in ca.json") {
		t.Errorf("pkbf serve did not log why:\n%s", ca.serveLogs.String())
	}
}

// BenchmarkServeStepCASign measures step-ca's /1.0/sign of a P-256 CSR,
// one request at a time, through the JWK provisioner with pkbf serve's
// webhook and through the one without: the difference is what the webhook
// call costs (docs/stepca.md).
func BenchmarkServeStepCASign(b *testing.B) {
	ca := newStepCA(b, map[string]crypto.Signer{"P-256": testkit.Signer(b, "P-256")})
	key := testkit.Signer(b, "P-256")
	for _, bc := range []struct{ name, provisioner string }{{"webhook", "pkbf-jwk"}, {"no webhook", "plain-jwk"}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if code, body := ca.sign(b, key, "bench.pkbf.test", bc.provisioner); code != http.StatusCreated {
					b.Fatalf("%d %s", code, body)
				}
			}
		})
	}
}

// pkbf serve --tls-cert --tls-key --client-ca --client-name: a client
// without a certificate chained to the CA cannot connect; one with it gets
// every endpoint, and the webhook answers only the one named
// --client-name. With --webhook-insecure on plain HTTP
// the webhook answers without one.
func TestServeClientCA(t *testing.T) {
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string { return testkit.WritePEM(t, dir, name, typ, der) }
	pkcs8 := func(k crypto.Signer) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	isCA := func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid, c.KeyUsage = true, true, x509.KeyUsageCertSign
	}
	rootKey, root := testkit.Cert(t, "root", nil, nil, isCA)
	otherKey, other := testkit.Cert(t, "other root", nil, nil, isCA)
	serveKey, serveCert := testkit.Cert(t, "pkbf serve", root, rootKey, func(c *x509.Certificate) {
		c.IPAddresses, c.ExtKeyUsage = []net.IP{net.IPv4(127, 0, 0, 1)}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
	client := func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth} }
	caKey, caCert := testkit.Cert(t, "step-ca", root, rootKey, client)
	strangerKey, strangerCert := testkit.Cert(t, "stranger", other, otherKey, client)
	subscriberKey, subscriberCert := testkit.Cert(t, "host.pkbf.test", root, rootKey, client)
	serving, addr, logs := startServe(t, "--tls-cert", write("serve.crt", "CERTIFICATE", serveCert.Raw), "--tls-key", write("serve.key", "PRIVATE KEY", pkcs8(serveKey)),
		"--client-ca", write("root.crt", "CERTIFICATE", root.Raw), "--client-name", "step-ca", exampleFilter)

	pool := x509.NewCertPool()
	pool.AddCert(root)
	clean := []byte(`{"x509Certificate":{"publicKey":"` + base64.StdEncoding.EncodeToString(testkit.ReadFile(t, key("p384.spki.der"))) + `"}}`)
	for _, tc := range []struct {
		name string
		cert *x509.Certificate
		key  crypto.Signer
		err  string
	}{
		{"the CA's certificate", caCert, caKey, ""},
		{"a subscriber's certificate", subscriberCert, subscriberKey, ""},
		{"no certificate", nil, nil, "certificate required"},
		{"another CA's certificate", strangerCert, strangerKey, "unknown certificate authority"},
	} {
		config := &tls.Config{RootCAs: pool}
		if tc.cert != nil {
			pair := &tls.Certificate{Certificate: [][]byte{tc.cert.Raw}, PrivateKey: tc.key}
			config.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return pair, nil }
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: config}}
		for _, path := range []string{"/v1/step-ca/authorize", "/v1/check"} {
			resp, err := c.Post("https://"+addr+path, "application/json", bytes.NewReader(clean))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("%s, %s: %v, want %q", tc.name, path, err, tc.err)
				}
				if err == nil {
					resp.Body.Close()
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s, %s: %v", tc.name, path, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case path != "/v1/step-ca/authorize":
			case tc.cert == caCert && string(b) != `{"allow":true}`+"\n":
				t.Errorf("%s: %d %s, want allowed", tc.name, resp.StatusCode, b)
			case tc.cert != caCert && (resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "are not the CA's")):
				t.Errorf("%s: %d %s, want 403: not the CA's certificate", tc.name, resp.StatusCode, b)
			}
		}
	}

	// SIGHUP reads the certificate files again: a certificate that cannot
	// be read is logged and the one in use kept; a new one is served.
	served := func() *big.Int {
		pair := &tls.Certificate{Certificate: [][]byte{caCert.Raw}, PrivateKey: caKey}
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{*pair}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber
	}
	hup := func(want string) {
		serving.Process.Signal(syscall.SIGHUP)
		for range 100 {
			if strings.Contains(logs.String(), want) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("after SIGHUP the log lacks %q:\n%s", want, logs.String())
	}
	keyFile := write("serve.key", "PRIVATE KEY", []byte("not a key"))
	// The error names the flags, not pkbfhttp's "certificate X, key Y".
	hup("SIGHUP: keeping the certificate in use: --tls-cert " + filepath.Join(filepath.Dir(keyFile), "serve.crt") + ", --tls-key " + keyFile + ": tls: ")
	if served().Cmp(serveCert.SerialNumber) != 0 {
		t.Errorf("a certificate that cannot be read replaced the one in use")
	}
	newKey, newCert := testkit.Cert(t, "pkbf serve", root, rootKey, func(c *x509.Certificate) {
		c.IPAddresses, c.ExtKeyUsage = []net.IP{net.IPv4(127, 0, 0, 1)}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
	write("serve.crt", "CERTIFICATE", newCert.Raw)
	write("serve.key", "PRIVATE KEY", pkcs8(newKey))
	hup("serve.crt reloaded")
	if served().Cmp(newCert.SerialNumber) != 0 {
		t.Errorf("after SIGHUP the old certificate is served")
	}

	_, plain, _ := startServe(t, "--webhook-insecure", exampleFilter)
	code, out := testkit.Post(t, "http://"+plain+"/v1/step-ca/authorize", clean)
	if code != 200 || out != `{"allow":true}`+"\n" {
		t.Errorf("--webhook-insecure over plain HTTP: %d %s, want allowed", code, out)
	}
}
