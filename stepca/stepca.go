// Package stepca answers smallstep step-ca's AUTHORIZING webhook with a
// pkbf filter, so that a certificate authority refuses to sign a key
// reported as compromised (CA/Browser Forum Baseline Requirements
// 6.1.1.3) for every provisioner that calls webhooks: JWK, ACME, OIDC,
// X5C and others.
//
// Mount a [Handler] on an HTTPS server whose tls.Config verifies client
// certificates against the CA's root (step-ca presents its own certificate
// on webhook calls), name the CA's certificate in [Options.ClientName]
// (the root also signs subscribers' certificates), and point every
// provisioner's webhook at it, with "certType": "ALL" (a webhook for
// "X509" is not called for the SSH certificates a provisioner of an SSH
// CA signs):
//
//	h := stepca.NewHandler(keycheck.New(live, keycheck.Options{}), stepca.Options{ClientName: "Step Online CA", Logger: logger})
//	mux.Handle("/v1/step-ca/authorize", h)
//
// # What it answers
//
// step-ca posts the certificate it is about to sign: for X.509 the
// subject's public key as a DER SubjectPublicKeyInfo, for SSH the key in
// the SSH wire format. The handler asks its [keycheck.KeyChecker] (a
// [keycheck.Checker] over a filter: every encoding of the key) and answers
// {"allow": true} only for a key it finds clean. Everything else is {"allow": false} with an
// error object, whose message step-ca passes to ACME clients: a key the
// filter holds (code [CodeCompromised]), a key the weak-key checks refuse
// (a Checker with keycheck.Options.Weak: code [CodeWeak], the message
// giving every finding), a request that is not
// authenticated as step-ca's own, a body it cannot parse or that carries
// no key, a key it cannot read, and a filter whose file failed (answered
// 503, so that step-ca tries once more a second later).
package stepca

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
)

// Error codes of a refusal, in the error object's "code".
const (
	// CodeCompromised: the filter holds the key (probably: a filter can
	// answer yes for a key it does not hold, at its false-positive rate).
	CodeCompromised = "pkbf-compromised-key"
	// CodeWeak: the weak-key checks (keycheck.Options.Weak) found a
	// reason to refuse the key, which the message gives (and the filter
	// does not hold it: that is CodeCompromised, with those reasons too).
	CodeWeak = "pkbf-weak-key"
	// CodeInvalidKey: the key in the request cannot be read.
	CodeInvalidKey = "pkbf-invalid-key"
	// CodeBadRequest: the request is not a webhook call the handler can
	// read: not a POST, not JSON of step-ca's form, too large, or with no
	// public key.
	CodeBadRequest = "pkbf-bad-request"
	// CodeUnauthenticated: no verified client certificate, one not named
	// Options.ClientName, or a missing or wrong X-Smallstep-Signature.
	CodeUnauthenticated = "pkbf-unauthenticated"
	// CodeFilterError: the filter's file failed while in use (a
	// *pkbf.Filter from Open whose file was cut short under it). A
	// [pkbf.Live] answers from its own validated copy of the file, which
	// no change to the file can make fail.
	CodeFilterError = "pkbf-filter-error"
	// CodeDisabled: the server does not answer the webhook ([Disabled]).
	CodeDisabled = "pkbf-webhook-disabled"
)

// DefaultMaxBody bounds a request body when Options.MaxBody is 0. A
// webhook call is a few kilobytes: the certificate step-ca is about to
// sign, as JSON.
const DefaultMaxBody = 1 << 20

// SignatureHeader is the header step-ca sends the hex HMAC-SHA256 of the
// request body in.
const SignatureHeader = "X-Smallstep-Signature"

// Options configure a [Handler].
type Options struct {
	// Secret is the webhook's signing key, decoded: step-ca holds it
	// base64-encoded (what "step ca provisioner webhook add" prints). When
	// it is not empty, every request must carry its HMAC-SHA256 of the
	// body in X-Smallstep-Signature. Only a webhook added through
	// step-ca's remote management has a secret: step-ca ignores one in
	// ca.json and signs the calls of a ca.json webhook with an empty key,
	// so with Secret set every one of them is refused (the refusal says
	// so). The client certificate authenticates step-ca either way.
	Secret []byte
	// ClientName is the subject common name of step-ca's own
	// certificate, which it presents on webhook calls: ca.json's
	// "commonName" ("Step Online CA" when unset). The root that
	// verifies it also signs every subscriber's certificate, and those
	// carry clientAuth too, so a verified chain alone does not show the
	// caller is the CA: a call is answered only when the verified leaf's
	// subject has exactly one common name and it is ClientName. step-ca
	// makes that certificate with a new key at each start and each
	// renewal (daily), so its name is what stays the same. Required
	// unless Unauthenticated: when empty, every call is refused.
	ClientName string
	// Unauthenticated accepts requests without a verified client
	// certificate. For local tests only: without it, a request is refused
	// unless the server's TLS layer verified a client certificate
	// (tls.Config.ClientAuth VerifyClientCertIfGiven or
	// RequireAndVerifyClientCert, with ClientCAs the CA's root).
	Unauthenticated bool
	// MaxBody bounds a request body; 0 means DefaultMaxBody.
	MaxBody int64
	// Logger, if not nil, logs every refusal, with the fingerprint of a
	// refused key.
	Logger *log.Logger
}

// ParseSecret decodes a webhook secret as step-ca holds it, base64 (what
// "step ca provisioner webhook add" prints), around white space, for
// [Options.Secret]. It refuses text that is not base64, and an empty
// secret, which would authenticate nothing.
func ParseSecret(text []byte) ([]byte, error) {
	secret, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(text)))
	switch {
	case err != nil:
		return nil, perr.Errorf("not the base64 secret step-ca holds: %v", err)
	case len(secret) == 0:
		return nil, perr.Errorf("the webhook secret is empty")
	}
	return secret, nil
}

// A Handler answers step-ca's AUTHORIZING webhook calls from a
// [keycheck.KeyChecker]. It is safe for concurrent use.
type Handler struct {
	keys     keycheck.KeyChecker
	opts     Options
	disabled *refusal // Disabled's refusal, or nil

	allowed, refused, compromised, weak, failed atomic.Int64
}

// Stats counts a Handler's answers.
type Stats struct {
	Allowed     int64 // {"allow": true}
	Refused     int64 // {"allow": false}, for any reason
	Compromised int64 // of Refused, for a key the filter holds
	Weak        int64 // of Refused, for a weak key the filter does not hold
	FilterErrs  int64 // of Refused, because the filter's file failed
}

// NewHandler returns a Handler answering from kc: a [keycheck.Checker]
// over a [pkbf.Live], which follows the filter file as new ones are
// renamed over it. It panics if kc is nil: a webhook that checks no key
// must not start.
func NewHandler(kc keycheck.KeyChecker, opts Options) *Handler {
	if c, ok := kc.(*keycheck.Checker); kc == nil || ok && c == nil {
		panic("stepca: NewHandler without a KeyChecker")
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	return &Handler{keys: kc, opts: opts}
}

// Disabled returns a Handler that refuses every call (403, [CodeDisabled])
// with message, which should say how to enable the webhook, for a server
// not set up to authenticate step-ca. Its Stats count the refusals.
func Disabled(message string) *Handler {
	if message == "" {
		message = "the webhook is not enabled on this server"
	}
	return &Handler{disabled: refuse(http.StatusForbidden, CodeDisabled, "%s", message)}
}

// Stats returns the counts of the handler's answers so far.
func (h *Handler) Stats() Stats {
	return Stats{Allowed: h.allowed.Load(), Refused: h.refused.Load(), Compromised: h.compromised.Load(), Weak: h.weak.Load(), FilterErrs: h.failed.Load()}
}

// request is what the handler reads of step-ca's webhook request body
// (webhook.RequestBody in smallstep/certificates): the public key of the
// one certificate or request it holds. encoding/json decodes base64 into
// []byte.
type request struct {
	X509Certificate        *publicKey `json:"x509Certificate"`
	X509CertificateRequest *publicKey `json:"x509CertificateRequest"`
	SSHCertificate         *publicKey `json:"sshCertificate"`
	SSHCertificateRequest  *publicKey `json:"sshCertificateRequest"`
}

type publicKey struct {
	PublicKey []byte `json:"publicKey"`
}

// fieldNames are the JSON names the handler reads. encoding/json matches
// a name case-insensitively and keeps the last of duplicated keys, so a
// body could show one key to a reader that takes the first or the exact
// spelling and another to the handler: [checkKeys] refuses such bodies.
var fieldNames = []string{"x509Certificate", "x509CertificateRequest", "sshCertificate", "sshCertificateRequest", "publicKey"}

// checkKeys refuses a JSON body in which an object has a key twice, or a
// key that is one of fieldNames spelled in another case. step-ca writes
// its bodies with encoding/json, which does neither, nested a few levels
// deep: a body nested deeper than maxDepth is refused too. A body that is
// not JSON is left for the decoder to report.
func checkKeys(body []byte) *refusal {
	type object struct {
		seen    map[string]bool
		wantKey bool
	}
	var stack []*object // nil for an array
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if n := len(stack); n > 0 && stack[n-1] != nil && stack[n-1].wantKey {
			if k, ok := tok.(string); ok {
				o := stack[n-1]
				if o.seen[k] {
					return refuse(http.StatusBadRequest, CodeBadRequest, "the request body has the key %q twice in one object", k)
				}
				for _, name := range fieldNames {
					if k != name && strings.EqualFold(k, name) {
						return refuse(http.StatusBadRequest, CodeBadRequest, "the request body has the key %q, not spelled %q", k, name)
					}
				}
				o.seen[k], o.wantKey = true, false
				continue
			}
		}
		if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') && len(stack) == maxDepth {
			return refuse(http.StatusBadRequest, CodeBadRequest, "the request body is nested deeper than %d levels", maxDepth)
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &object{seen: map[string]bool{}, wantKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, nil)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the object holding it expects a key next.
		if n := len(stack); n > 0 && stack[n-1] != nil {
			stack[n-1].wantKey = true
		}
	}
}

// maxDepth bounds the nesting of a request body: step-ca's are a few
// levels deep.
const maxDepth = 32

// refusal is a refused call: its HTTP status and the error object step-ca
// reads.
type refusal struct {
	status int
	Code   string `json:"code"`
	// Message is a pkbf error's text, prefix included.
	Message string `json:"message"`
}

func refuse(status int, code, format string, args ...any) *refusal {
	return &refusal{status: status, Code: code, Message: perr.Errorf(format, args...).Error()}
}

// ServeHTTP answers one webhook call.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ref := h.authorize(w, r)
	if ref == nil {
		h.allowed.Add(1)
		writeJSON(w, http.StatusOK, allowBody)
		return
	}
	h.refused.Add(1)
	switch ref.Code {
	case CodeCompromised:
		h.compromised.Add(1)
	case CodeWeak:
		h.weak.Add(1)
	case CodeFilterError:
		h.failed.Add(1)
	}
	if h.opts.Logger != nil {
		who := r.RemoteAddr
		if id := r.Header.Get("X-Smallstep-Webhook-Id"); id != "" {
			who += " webhook " + strconv.Quote(id)
		}
		if id := r.Header.Get("X-Request-Id"); id != "" {
			who += " request " + strconv.Quote(id)
		}
		h.opts.Logger.Printf("step-ca: refused (%s): %s (%s)", ref.Code, ref.Message, who)
	}
	if ref.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodPost)
	}
	body, _ := json.Marshal(struct {
		Allow bool     `json:"allow"`
		Error *refusal `json:"error"`
	}{false, ref})
	writeJSON(w, ref.status, append(body, '\n'))
}

var allowBody = []byte(`{"allow":true}` + "\n")

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// authorize returns nil for a call to allow, else why it is refused.
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request) *refusal {
	if h.disabled != nil {
		return h.disabled
	}
	if r.Method != http.MethodPost {
		return refuse(http.StatusMethodNotAllowed, CodeBadRequest, "step-ca webhook calls are POST requests, not %s", r.Method)
	}
	if !h.opts.Unauthenticated {
		if ref := h.checkClient(r.TLS); ref != nil {
			return ref
		}
	}
	if r.ContentLength > h.opts.MaxBody {
		return refuse(http.StatusRequestEntityTooLarge, CodeBadRequest, "the request body of %d bytes is larger than %d bytes", r.ContentLength, h.opts.MaxBody)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return refuse(http.StatusRequestEntityTooLarge, CodeBadRequest, "the request body is larger than %d bytes", h.opts.MaxBody)
	case err != nil:
		return refuse(http.StatusBadRequest, CodeBadRequest, "reading the request body: %v", err)
	}
	if len(h.opts.Secret) > 0 {
		if ref := h.checkSignature(r.Header.Get(SignatureHeader), body); ref != nil {
			return ref
		}
	}
	der, what, ref := publicKeyOf(body)
	if ref != nil {
		return ref
	}
	v := h.keys.CheckKey(der)
	switch {
	case errors.Is(v.Err, pkbf.ErrFileChanged):
		return refuse(http.StatusServiceUnavailable, CodeFilterError, "the compromised-key filter cannot answer: %v", v.Err)
	case v.Probably && len(v.Findings) == 0:
		return refuse(http.StatusOK, CodeCompromised, "the %s's public key is reported as compromised (pwnedkeys fingerprint %s): make a new key", what, v.Key.Fingerprint)
	case v.Refuse():
		code := CodeWeak
		if v.Probably {
			code = CodeCompromised
		}
		return refuse(http.StatusOK, code, "the %s's public key is refused (pwnedkeys fingerprint %s): %s: make a new key", what, v.Key.Fingerprint, v.Reason())
	case v.Err != nil:
		return refuse(http.StatusOK, CodeInvalidKey, "the %s's public key cannot be checked: %v", what, v.Err)
	}
	return nil
}

// checkClient refuses a call without a verified client certificate, or
// whose leaf certificate is not named Options.ClientName.
func (h *Handler) checkClient(state *tls.ConnectionState) *refusal {
	if state == nil || len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return refuse(http.StatusForbidden, CodeUnauthenticated, "the webhook call has no verified client certificate: step-ca presents one, which pkbf serve verifies with --client-ca")
	}
	if h.opts.ClientName == "" {
		return refuse(http.StatusForbidden, CodeUnauthenticated, "no client name is set (pkbf serve --client-name, stepca.Options.ClientName): any certificate the CA's root verifies could be a subscriber's")
	}
	leaf := state.VerifiedChains[0][0]
	var names []string
	for _, a := range leaf.Subject.Names {
		if a.Type.Equal(oidCommonName) {
			s, _ := a.Value.(string)
			names = append(names, s)
		}
	}
	if len(names) != 1 || names[0] != h.opts.ClientName {
		return refuse(http.StatusForbidden, CodeUnauthenticated, "the client certificate's subject common names %q are not the CA's %q: only step-ca itself may call the webhook", names, h.opts.ClientName)
	}
	return nil
}

var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

// checkSignature checks the hex HMAC-SHA256 of body under the secret, in
// constant time.
func (h *Handler) checkSignature(sig string, body []byte) *refusal {
	if sig == "" {
		return refuse(http.StatusForbidden, CodeUnauthenticated, "the webhook call has no %s header, and a webhook secret is set", SignatureHeader)
	}
	got, err := hex.DecodeString(sig)
	if err == nil && hmac.Equal(got, hmacOf(h.opts.Secret, body)) {
		return nil
	}
	if err == nil && hmac.Equal(got, hmacOf(nil, body)) {
		// What step-ca sends for a webhook of ca.json: it has no secret
		// there, so every call would be refused; say so.
		return refuse(http.StatusForbidden, CodeUnauthenticated, "the webhook call's %s is an HMAC under the empty key, not the webhook secret: step-ca has no secret for this webhook (it ignores a secret in ca.json; only a webhook added through its remote management has one), so drop the secret (pkbf serve --webhook-secret-file) and let step-ca's client certificate authenticate it", SignatureHeader)
	}
	return refuse(http.StatusForbidden, CodeUnauthenticated, "the webhook call's %s does not match the webhook secret", SignatureHeader)
}

// hmacOf is the HMAC-SHA256 of body under key.
func hmacOf(key, body []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return mac.Sum(nil)
}

// publicKeyOf returns the DER SPKI of the one public key in a webhook
// request body, and what it is the key of.
func publicKeyOf(body []byte) (der []byte, what string, ref *refusal) {
	if ref := checkKeys(body); ref != nil {
		return nil, "", ref
	}
	var req request
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return nil, "", refuse(http.StatusBadRequest, CodeBadRequest, "the request body is not a step-ca webhook request: %v", err)
	}
	if dec.More() {
		return nil, "", refuse(http.StatusBadRequest, CodeBadRequest, "the request body has more after its JSON object")
	}
	var found []string
	var pk *publicKey
	ssh := false
	for _, c := range []struct {
		name string
		pk   *publicKey
		ssh  bool
	}{
		{"x509Certificate", req.X509Certificate, false},
		{"x509CertificateRequest", req.X509CertificateRequest, false},
		{"sshCertificate", req.SSHCertificate, true},
		{"sshCertificateRequest", req.SSHCertificateRequest, true},
	} {
		if c.pk != nil {
			found, pk, ssh = append(found, c.name), c.pk, c.ssh
		}
	}
	switch {
	case len(found) == 0:
		return nil, "", refuse(http.StatusBadRequest, CodeBadRequest, "the request body has no x509Certificate, sshCertificate or certificate request")
	case len(found) > 1:
		return nil, "", refuse(http.StatusBadRequest, CodeBadRequest, "the request body has more than one certificate or request: %v", found)
	case len(pk.PublicKey) == 0:
		return nil, "", refuse(http.StatusBadRequest, CodeBadRequest, "the request body's %s has no publicKey", found[0])
	}
	what = "certificate"
	if found[0] == "x509CertificateRequest" || found[0] == "sshCertificateRequest" {
		what = "certificate request"
	}
	if !ssh {
		if pk.PublicKey[0] != 0x30 {
			return nil, "", refuse(http.StatusOK, CodeInvalidKey, "the %s's publicKey is not a DER SubjectPublicKeyInfo", what)
		}
		return pk.PublicKey, what, nil
	}
	what = "SSH " + what
	der, err := keys.SSHPublicKeySPKI(pk.PublicKey)
	if err != nil {
		return nil, "", refuse(http.StatusOK, CodeInvalidKey, "the %s's public key cannot be checked: %v", what, err)
	}
	return der, what, nil
}
