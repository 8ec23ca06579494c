package update

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/retryafter"
)

// ErrNotAuthentic is wrapped by the error Update returns when the
// server's filter does not match the digest (Options.SHA256,
// Options.SHA256URL) or the signature (Options.SignatureURL) it is pinned
// to, or when the digest or signature cannot be read. Options.Force does
// not override it.
var ErrNotAuthentic = perr.New("the server's filter is not the one its digest or signature pins")

// maxSmallFile bounds a digest file or signature a server sends.
const maxSmallFile = 64 << 10

// pinned reports whether the filter must match a digest or a signature.
func (up *updater) pinned() bool {
	return up.opts.SHA256 != "" || up.opts.SHA256URL != "" || up.opts.SignatureURL != ""
}

// pinnedElsewhere reports whether a pin vouches for the filter that its
// server could not make up: a digest given, a signature, or a digest
// file from another source than the filter's bytes (one from the same
// source proves only the transfer; see sameSource).
func (up *updater) pinnedElsewhere() bool {
	if up.opts.SHA256 != "" || up.opts.SignatureURL != "" {
		return true
	}
	return up.opts.SHA256URL != "" && up.pins.fetched && !sameSource(up.pins.digestFrom, &up.from)
}

// pinID names the pins in force, for the state: an installed file that
// they verified needs no new download for their sake (its header, on the
// server, keeps it).
func (up *updater) pinID() string {
	h := sha256.New()
	fmt.Fprintf(h, "sha256 %s\nsha256-url %s\nsignature %s\n", strings.ToLower(up.opts.SHA256), up.opts.SHA256URL, up.opts.SignatureURL)
	for _, k := range up.opts.SignerKeys {
		fmt.Fprintf(h, "signer %s\n", ssh.FingerprintSHA256(k))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checkPinOptions checks the pins' options before any request.
func (up *updater) checkPinOptions() error {
	o := &up.opts
	if o.SHA256 != "" {
		if b, err := hex.DecodeString(o.SHA256); err != nil || len(b) != sha256.Size {
			return perr.Errorf("update: Options.SHA256 %q is not a SHA-256 digest (64 hex digits)", o.SHA256)
		}
	}
	switch {
	case o.SignatureURL != "" && len(o.SignerKeys) == 0:
		return perr.New("update: a signature URL needs the signer's public key to verify it with")
	case o.SignatureURL == "" && len(o.SignerKeys) > 0:
		return perr.New("update: signer keys are given, but no signature URL to verify")
	}
	for _, raw := range []string{o.SHA256URL, o.SignatureURL} {
		if raw == "" {
			continue
		}
		if _, err := up.checkURL(raw); err != nil {
			return err
		}
	}
	if o.SHA256URL != "" && !strings.HasPrefix(strings.ToLower(o.SHA256URL), "https:") {
		return perr.Kind(ErrPlainHTTP, perr.Errorf("update: the digest URL %s is plain http: a digest fetched over it is no pin (anyone on the path could replace it with the digest of their filter); give the digest itself, or a signature", redactURL(mustURL(o.SHA256URL))))
	}
	if o.AllowHTTP && o.SHA256 == "" && o.SignatureURL == "" {
		return perr.Kind(ErrPlainHTTP, perr.New("update: plain http is allowed only with a pin that does not travel with the filter: a SHA-256 digest given (not a digest URL) or a signature by a key given"))
	}
	return nil
}

// pins are a download's digest and signature, fetched once an Update.
type pins struct {
	fetched    bool
	sha256     []byte  // the digest the file must have, or nil
	sig        *sshSig // the signature it must have, or nil
	digestFrom *source // where the digest file came from
}

// fetchPins fetches the digest file and the signature, once.
func (up *updater) fetchPins(ctx context.Context) error {
	if up.pins.fetched || !up.pinned() {
		return nil
	}
	var p pins
	if up.opts.SHA256 != "" {
		p.sha256, _ = hex.DecodeString(up.opts.SHA256)
	}
	if raw := up.opts.SHA256URL; raw != "" {
		u, _ := up.checkURL(raw)
		p.digestFrom = new(source)
		b, err := up.fetchSmall(ctx, u, true, p.digestFrom)
		if err != nil {
			return err
		}
		d, err := parseDigestFile(b, path.Base(up.url.Path))
		if err != nil {
			return perr.Kind(ErrNotAuthentic, perr.Errorf("update: the digest file %s: %w", redactURL(u), err))
		}
		if p.sha256 != nil && !bytes.Equal(p.sha256, d) {
			return perr.Kind(ErrNotAuthentic, perr.Errorf("update: the digest file %s says %x, the SHA-256 given is %x", redactURL(u), d, p.sha256))
		}
		p.sha256 = d
	}
	if raw := up.opts.SignatureURL; raw != "" {
		u, _ := up.checkURL(raw)
		b, err := up.fetchSmall(ctx, u, false, new(source))
		if err != nil {
			return err
		}
		if p.sig, err = parseSSHSig(b); err != nil {
			return perr.Kind(ErrNotAuthentic, perr.Errorf("update: the signature %s: %w", redactURL(u), err))
		}
	}
	p.fetched = true
	up.pins = p
	return nil
}

// fetchSmall gets a small file (a digest, a signature) from u, with the
// client and the manners of the filter's own requests: credentials only to
// the filter's host over https, 429 and 5xx retried, and a file not whole
// within Options.Stall retried. With httpsOnly, a redirect to plain http
// is refused whatever Options.AllowHTTP says. Where the file came from
// goes to from.
func (up *updater) fetchSmall(ctx context.Context, u *url.URL, httpsOnly bool, from *source) ([]byte, error) {
	where := redactURL(u)
	// A few KiB: all of it within Options.Stall, or it is retried.
	ctx, cancel := context.WithTimeoutCause(ctx, up.opts.Stall, errSmallSlow)
	defer cancel()
	from.addURL(u)
	b, err := up.fetchSmallWithin(traceSource(ctx, from), u, where, httpsOnly, from)
	if context.Cause(ctx) == errSmallSlow { // with an error, or a body cut off as if whole
		return nil, retry(perr.Errorf("update from %s: not whole within %s (the stall limit): too slow", where, up.opts.Stall))
	}
	return b, err
}

// errSmallSlow is the cause of a small file's context that ran out.
var errSmallSlow = errors.New("small file too slow")

func (up *updater) fetchSmallWithin(ctx context.Context, u *url.URL, where string, httpsOnly bool, from *source) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, perr.Errorf("update from %s: %v", where, err)
	}
	if u.Scheme == "https" && u.Host == up.url.Host {
		up.addHeader(req)
	}
	req.Header.Set("User-Agent", "pkbf-update")
	resp, err := up.opts.Client.Do(req)
	if err != nil {
		return nil, up.clientError(where, err)
	}
	defer resp.Body.Close()
	from.addChain(resp.Request)
	if httpsOnly && resp.Request.URL.Scheme != "https" {
		return nil, perr.Kind(ErrPlainHTTP, perr.Errorf("update from %s: redirected to %s, plain http: refused (a digest fetched over it is no pin)", where, redactURL(resp.Request.URL)))
	}
	switch code := resp.StatusCode; {
	case code == http.StatusOK:
	case code == http.StatusTooManyRequests || code >= 500:
		return nil, &retryError{err: perr.Errorf("update from %s: %s", where, resp.Status), after: retryafter.Parse(resp.Header.Get("Retry-After"), maxRetryAfter)}
	default:
		return nil, perr.Kind(ErrNotAuthentic, perr.Errorf("update from %s: %s", where, resp.Status))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxSmallFile+1))
	switch {
	case err != nil:
		return nil, retry(perr.Errorf("update from %s: the body broke off: %v", where, redact(err)))
	case len(b) > maxSmallFile:
		return nil, perr.Kind(ErrNotAuthentic, perr.Errorf("update from %s: more than %d bytes: not a digest or signature", where, maxSmallFile))
	}
	return b, nil
}

// parseDigestFile reads a SHA-256 digest file: a bare digest, or lines as
// sha256sum prints them ("HEX  NAME", "HEX *NAME") or as BSD tools do
// ("SHA256 (NAME) = HEX"). With one line its name does not matter; with
// several, the line for name (the filter URL's last element) is used.
func parseDigestFile(b []byte, name string) ([]byte, error) {
	type entry struct{ name, hex string }
	var entries []entry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var e entry
		if rest, ok := strings.CutPrefix(line, "SHA256 ("); ok {
			file, digest, ok := strings.Cut(rest, ") = ")
			if !ok {
				return nil, perr.Errorf("line %d is not a SHA-256 digest line", n)
			}
			e = entry{file, digest}
		} else {
			f := strings.Fields(line)
			e.hex = f[0]
			if len(f) > 1 {
				e.name = strings.TrimPrefix(strings.Join(f[1:], " "), "*")
			}
		}
		if d, err := hex.DecodeString(e.hex); err != nil || len(d) != sha256.Size {
			return nil, perr.Errorf("line %d does not start with a SHA-256 digest (64 hex digits)", n)
		}
		entries = append(entries, e)
	}
	switch {
	case len(entries) == 0:
		return nil, perr.New("no SHA-256 digest in it")
	case len(entries) == 1:
		d, _ := hex.DecodeString(entries[0].hex)
		return d, nil
	}
	for _, e := range entries {
		if e.name == name || path.Base(e.name) == name {
			d, _ := hex.DecodeString(e.hex)
			return d, nil
		}
	}
	return nil, perr.Errorf("%d digests, none for %s", len(entries), name)
}

// checkPins checks the scanned download against its digest and signature.
// It returns the signer, if signed.
func (up *updater) checkPins(s scanned) (ssh.PublicKey, error) {
	if want := up.pins.sha256; want != nil && subtle.ConstantTimeCompare(want, s.sha256) != 1 {
		return nil, perr.Kind(ErrNotAuthentic, up.errorf("the filter's SHA-256 is %x, its pin says %x", s.sha256, want))
	}
	if up.pins.sig == nil {
		return nil, nil
	}
	signer, err := up.pins.sig.verify(s.sigHash, up.opts.SignerKeys)
	if err != nil {
		return nil, perr.Kind(ErrNotAuthentic, up.errorf("%s: %w", redactURL(mustURL(up.opts.SignatureURL)), err))
	}
	return signer, nil
}

// mustURL parses a URL that checkPinOptions already parsed.
func mustURL(raw string) *url.URL {
	u, _ := url.Parse(raw)
	return u
}
