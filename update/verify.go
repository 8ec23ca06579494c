package update

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/pkbf/pkbf/internal/headertext"
	"hash"
	"io"
	"math"
	"math/bits"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/retryafter"
)

// ErrNotAuthentic is wrapped by the error Update returns when the
// server's filter does not match the digest (Options.SHA256,
// Options.SHA256URL) or the signature (Options.SignatureURL) it is pinned
// to, or when the digest or signature cannot be read. Options.Force does
// not override it.
var ErrNotAuthentic = perr.New("the server's filter is not the one its digest or signature pins")

// ErrImplausibleFill is wrapped by the error Update returns when the
// server's filter has far more or far fewer bits set than its header's
// entry count gives a filter of its parameters: an empty filter claiming
// thousands of keys, say. Options.Force does not override it.
var ErrImplausibleFill = perr.New("the server's filter has not the bits set that its entry count implies")

// ErrDropsBits is wrapped by the error Update returns when the server's
// filter has the installed one's hash count and length but lacks bits
// the installed one has set, so that keys it reports would stop being
// reported, and Options.Force is not set.
var ErrDropsBits = perr.New("the server's filter lacks bits the installed one has set")

// ErrWeaker is wrapped by the error Update returns when the server's
// filter has fewer hashes (k), a shorter hash length (L) or a lower entry
// count than the installed one, and Options.Force is not set. Such a
// filter cannot be checked against the installed one's bits (its first
// k' probes are a subset of the installed k, and its positions mod 2^L'
// merge the installed ones), and a genuine newer filter never has it.
var ErrWeaker = perr.New("the server's filter is weaker than the installed one")

// ErrUnverifiable is wrapped by the error Update returns when the
// server's filter has more hashes or a longer hash length than the
// installed one, no pin its server could not make up proves it
// (Options.SHA256, SignatureURL, or SHA256URL on another host), and
// Options.Force is not set: the installed bits check only part of each
// key's new probes, so a server could leave a key out.
var ErrUnverifiable = perr.New("the server's filter cannot be checked against the installed one")

// checkWeaker refuses a filter h with fewer hashes, a shorter hash length
// or fewer entries than the installed filter old.
func (up *updater) checkWeaker(old, h pkbf.Header) error {
	var what []string
	if h.HashCount < old.HashCount {
		what = append(what, fmt.Sprintf("hash count %d -> %d", old.HashCount, h.HashCount))
	}
	if h.HashLength < old.HashLength {
		what = append(what, fmt.Sprintf("hash length %d -> %d", old.HashLength, h.HashLength))
	}
	if h.EntryCount < old.EntryCount {
		what = append(what, fmt.Sprintf("entry count %d -> %d", old.EntryCount, h.EntryCount))
	}
	if len(what) == 0 {
		if up.pinnedElsewhere() || h.HashCount == old.HashCount && h.HashLength == old.HashLength {
			return nil
		}
		// More hashes or a longer length: the installed bits vouch only for
		// the new filter's first probes of each key, folded; a server that
		// knows the keys can leave a later probe clear and pass every check.
		return perr.Kind(ErrUnverifiable, up.errorf("the filter has other parameters than the installed filter %s (hash count %d -> %d, hash length %d -> %d): its bits cannot all be checked against the installed ones; pin it (a signature, or a digest from another source) or force it; not replaced",
			up.path, old.HashCount, h.HashCount, old.HashLength, h.HashLength))
	}
	return perr.Kind(ErrWeaker, up.errorf("the filter is weaker than the installed filter %s (revision %d -> %d): %s; a genuine newer filter has as many hashes, bits and entries, and fewer cannot be checked against the installed bits; not replaced (force installs it)",
		up.path, old.Revision, h.Revision, strings.Join(what, ", ")))
}

// ErrLockIn is wrapped by the error Update returns when the server's
// filter has an update time in the future (beyond MaxClockSkew) or a
// revision that no publisher reaches by counting (MaxRevision, or more
// than MaxRevisionJump above the installed one), and Options.Force is
// not set: installed, it would make every later genuine filter look
// older ([ErrOlder]).
var ErrLockIn = perr.New("the server's filter has a revision or time no later filter could follow")

// The bounds of ErrLockIn.
const (
	MaxClockSkew    = 24 * time.Hour
	MaxRevision     = 1<<31 - 1
	MaxRevisionJump = 1 << 16
)

// checkLockIn refuses a header that would lock later filters out.
func (up *updater) checkLockIn(old *pkbf.Header, h pkbf.Header) error {
	var what string
	switch now := time.Now(); {
	case unixTime(h) > uint64(now.Add(MaxClockSkew).Unix()):
		what = fmt.Sprintf("its update time %s is more than %s after this machine's clock (%s)", headertext.Updated(h.Updated), MaxClockSkew, now.UTC().Format(time.RFC3339))
	case h.Revision > MaxRevision:
		what = fmt.Sprintf("its revision %d is above %d", h.Revision, MaxRevision)
	case old != nil && h.Revision > old.Revision && h.Revision-old.Revision > MaxRevisionJump:
		what = fmt.Sprintf("its revision %d is more than %d above the installed %d", h.Revision, MaxRevisionJump, old.Revision)
	default:
		return nil
	}
	return perr.Kind(ErrLockIn, up.errorf("%s: installed, it would make every later filter look older; not installed (force installs it)", what))
}

// ErrStale is wrapped by the error Update returns when the server's
// filter was last updated more than Options.MaxAge ago.
var ErrStale = perr.New("the server's filter is older than the maximum age")

// checkAge refuses a header updated more than Options.MaxAge ago; what
// names the filter.
func (up *updater) checkAge(h pkbf.Header, what string) error {
	if up.opts.MaxAge == 0 {
		return nil
	}
	age := time.Since(h.Updated)
	if unixTime(h) <= uint64(time.Now().Unix()) && age > up.opts.MaxAge {
		ago := age.Round(time.Second).String()
		if age >= 48*time.Hour {
			ago = fmt.Sprintf("%d days", age/(24*time.Hour))
		}
		return perr.Kind(ErrStale, up.errorf("%s was updated %s (revision %d), %s ago, more than the maximum age of %s: the publisher has stopped, or the server keeps an old filter", what, headertext.Updated(h.Updated), h.Revision, ago, up.opts.MaxAge))
	}
	return nil
}

// ErrSaturated is wrapped by the error Update returns when the server's
// filter answers "probably" for more than MaxFalseYes of the keys it does
// not hold (its fill ratio to the power of its hash count), and
// Options.Force is not set: every gate that reads it would refuse nearly
// every key. An all-ones filter claiming 2^32-1 entries passes the fill
// check; this refuses it.
var ErrSaturated = perr.New("the server's filter answers yes for most keys")

// MaxFalseYes is the highest false-positive rate Update installs without
// Options.Force.
const MaxFalseYes = 0.5

// checkSaturated refuses a filter whose false-positive rate, with set of
// its bits set, is above MaxFalseYes.
func (up *updater) checkSaturated(h pkbf.Header, set uint64) error {
	rate := math.Pow(float64(set)/float64(h.Bits()), float64(h.HashCount))
	if rate <= MaxFalseYes {
		return nil
	}
	return perr.Kind(ErrSaturated, up.errorf("the filter has %d of %d bits set: with %d hashes it answers \"probably\" for %.0f%% of the keys it does not hold, above %.0f%%; not installed (force installs it)",
		set, h.Bits(), h.HashCount, 100*rate, 100*MaxFalseYes))
}

// maxSmallFile bounds a digest file or signature a server sends.
const maxSmallFile = 64 << 10

// pinned reports whether the filter must match a digest or a signature.
func (up *updater) pinned() bool {
	return up.opts.SHA256 != "" || up.opts.SHA256URL != "" || up.opts.SignatureURL != ""
}

// pinnedElsewhere reports whether a pin vouches for the filter that its
// server could not make up: a digest given, a signature, or a digest
// file from another host (one beside the filter proves only the
// transfer).
func (up *updater) pinnedElsewhere() bool {
	if up.opts.SHA256 != "" || up.opts.SignatureURL != "" {
		return true
	}
	u, err := url.Parse(up.opts.SHA256URL)
	return up.opts.SHA256URL != "" && err == nil && !strings.EqualFold(u.Host, up.url.Host)
}

// pinID names the pins in force, for the state: an installed file that
// they verified needs no new download for their sake (a 304 keeps it).
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
	fetched bool
	sha256  []byte  // the digest the file must have, or nil
	sig     *sshSig // the signature it must have, or nil
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
		b, err := up.fetchSmall(ctx, u, true)
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
		b, err := up.fetchSmall(ctx, u, false)
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
// is refused whatever Options.AllowHTTP says.
func (up *updater) fetchSmall(ctx context.Context, u *url.URL, httpsOnly bool) ([]byte, error) {
	where := redactURL(u)
	// A few KiB: all of it within Options.Stall, or it is retried.
	ctx, cancel := context.WithTimeoutCause(ctx, up.opts.Stall, errSmallSlow)
	defer cancel()
	b, err := up.fetchSmallWithin(ctx, u, where, httpsOnly)
	if context.Cause(ctx) == errSmallSlow { // with an error, or a body cut off as if whole
		return nil, retry(perr.Errorf("update from %s: not whole within %s (the stall limit): too slow", where, up.opts.Stall))
	}
	return b, err
}

// errSmallSlow is the cause of a small file's context that ran out.
var errSmallSlow = errors.New("small file too slow")

func (up *updater) fetchSmallWithin(ctx context.Context, u *url.URL, where string, httpsOnly bool) ([]byte, error) {
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

// scanned is what one reading of a complete download found.
type scanned struct {
	set      uint64 // bits set in its data
	folded   uint64 // bits set in its data folded onto hash length foldedTo
	foldedTo uint8  // the installed hash length, if shorter; else 0
	compared bool   // whether dropped was counted
	dropped  uint64 // bits set in the installed filter and not in it
	sha256   []byte // its SHA-256, if pinned to one
	sigHash  []byte // its hash as the signature needs it, if signed
}

// scanChunk is how much of each file the scan reads at a time.
const scanChunk = 1 << 20

// scan reads the download once: its hashes where pins need them, the
// bits set in its data and, when compare, the bits set in the installed
// filter (of the same parameters) that it lacks.
func (up *updater) scan(h pkbf.Header, compare bool) (scanned, error) {
	var s scanned
	var hashes []hash.Hash
	var sum256, sumSig hash.Hash
	if up.pins.sha256 != nil {
		sum256 = sha256.New()
		hashes = append(hashes, sum256)
	}
	if up.pins.sig != nil {
		sumSig = up.pins.sig.newHash()
		hashes = append(hashes, sumSig)
	}
	nf, err := os.Open(up.download)
	if err != nil {
		return s, perr.Errorf("update: %w", err)
	}
	defer nf.Close()
	// With the installed hash length the bits compare in place; with a
	// longer one, foldDropped compares them after this pass.
	fold := compare && h.HashLength != up.old.HashLength
	compare = compare && !fold
	var of *os.File
	if compare {
		if of, err = os.Open(up.path); err != nil {
			return s, perr.Errorf("update: %w", err)
		}
		defer of.Close()
		if _, err := of.Seek(pkbf.HeaderSize, io.SeekStart); err != nil {
			return s, perr.Errorf("update: %w", err)
		}
	}
	hdr := make([]byte, pkbf.HeaderSize)
	if _, err := io.ReadFull(nf, hdr); err != nil {
		return s, perr.Errorf("update: reading %s: %w", up.download, err)
	}
	for _, hh := range hashes {
		hh.Write(hdr)
	}
	nb, ob := make([]byte, min(scanChunk, h.DataSize())), []byte(nil)
	if compare {
		ob = make([]byte, len(nb))
	}
	for left := h.DataSize(); left > 0; {
		n := min(left, uint64(len(nb)))
		if _, err := io.ReadFull(nf, nb[:n]); err != nil {
			return s, perr.Errorf("update: reading %s: %w", up.download, err)
		}
		if compare {
			if _, err := io.ReadFull(of, ob[:n]); err != nil {
				return s, perr.Errorf("update: reading %s: %w", up.path, err)
			}
		}
		for _, hh := range hashes {
			hh.Write(nb[:n])
		}
		set, dropped := countBits(nb[:n], ob[:min(n, uint64(len(ob)))])
		s.set += set
		s.dropped += dropped
		left -= n
	}
	s.compared = compare
	if fold {
		if s.dropped, s.folded, err = up.foldDropped(h.DataSize(), up.old.DataSize()); err != nil {
			return s, err
		}
		s.foldedTo = up.old.HashLength
		s.compared = true
	}
	if sum256 != nil {
		s.sha256 = sum256.Sum(nil)
	}
	if sumSig != nil {
		s.sigHash = sumSig.Sum(nil)
	}
	return s, nil
}

// foldDropped counts the bits set in the installed filter that the
// download, of a longer hash length, lacks once folded onto it. A probe
// at bit p of the download is at bit p mod 2^L of the installed filter
// (hash length L ≥ 3): both put bit p in byte p/8 under mask 0x80>>(p%8),
// so byte i of the download's data answers for byte i mod oldSize of the
// installed data, and the installed byte must be covered by the OR of
// the download's bytes that fold onto it. It also returns the bits set in
// the folded data: what a filter of the download's keys at the installed
// length has set. newSize and oldSize are the data sizes, powers of two
// with oldSize < newSize.
func (up *updater) foldDropped(newSize, oldSize uint64) (dropped, folded uint64, err error) {
	nf, err := os.Open(up.download)
	if err != nil {
		return 0, 0, perr.Errorf("update: %w", err)
	}
	defer nf.Close()
	of, err := os.Open(up.path)
	if err != nil {
		return 0, 0, perr.Errorf("update: %w", err)
	}
	defer of.Close()
	n := min(scanChunk, oldSize)
	nb, ob, acc := make([]byte, n), make([]byte, n), make([]byte, n)
	for off := uint64(0); off < oldSize; off += n {
		clear(acc)
		for slice := off; slice < newSize; slice += oldSize {
			if _, err := nf.ReadAt(nb, int64(pkbf.HeaderSize+slice)); err != nil {
				return 0, 0, perr.Errorf("update: reading %s: %w", up.download, err)
			}
			for i := range acc {
				acc[i] |= nb[i]
			}
		}
		if _, err := of.ReadAt(ob, int64(pkbf.HeaderSize+off)); err != nil {
			return 0, 0, perr.Errorf("update: reading %s: %w", up.path, err)
		}
		set, d := countBits(acc, ob)
		folded += set
		dropped += d
	}
	return dropped, folded, nil
}

// countBits returns the bits set in b and, if old is as long as b, the
// bits set in old that b lacks (old &^ b), a 64-bit word at a time.
func countBits(b, old []byte) (set, dropped uint64) {
	cmp := len(old) == len(b)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		set += uint64(bits.OnesCount64(w))
		if cmp {
			dropped += uint64(bits.OnesCount64(binary.LittleEndian.Uint64(old[i:]) &^ w))
		}
	}
	for ; i < len(b); i++ {
		set += uint64(bits.OnesCount8(b[i]))
		if cmp {
			dropped += uint64(bits.OnesCount8(old[i] &^ b[i]))
		}
	}
	return set, dropped
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

// The fill check. A filter of m bits into which n distinct keys were
// added with k probes each has about E = m·(1 - e^(-kn/m)) bits set,
// exactly m·(1 - (1-1/m)^(kn)) for random probes: the classic model, in
// which every add counts. The reference implementation (and pkbf's Add)
// counts only adds that set a new bit, so a filter it made has more set
// than that for its count: each counted add sets μ(x) = k(1-x)/(1-x^k) new
// bits on average at fill x, and integrating, n counted adds reach the
// fill x where (m/k)·Σ_{j=1..k} x^j/j = n (the classic model's -(m/k)·
// ln(1-x) is the same series without end). A genuine filter's expected
// fill lies between the two.
//
// How far from its expectation may it be? Each model gets a tail bound
// whose false-refusal probability is 2^-41 a side:
//
//   - Classic: the bits left clear are a sum of negatively associated
//     indicators (balls in bins), so their variance is at most
//     σ² = m·p·(1-p), p the fraction left clear, and Bernstein's
//     inequality holds: P(|X - E| ≥ t) ≤ 2·exp(-t²/(2σ² + 2t/3)).
//   - Counted adds: X minus the sum of the μ of each add is a martingale
//     whose steps are at most k and whose variance adds up to at most
//     Σ k·x(1-x) over the adds, ≤ m·x²/2 by the integral above; Freedman's
//     inequality bounds it as Bernstein's does, with 2kt/3 for 2t/3. A
//     fill above the mean-field path makes later adds set fewer new bits,
//     so the path pulls X back: its deviation is at most the martingale's.
//     Near a full filter this bound is the wider one.
//
// Solving for t: t = bc/3 + sqrt(b²c²/9 + 2cσ²), c = 41·ln 2, b = 1 or
// k, about 7.5σ for large filters plus an absolute slack (19 bits, or
// 19k) that dominates for small ones. The bounds are the widest of the
// two models; two hard facts narrow them further: each counted add sets
// at most k bits, so at most k·n are set (unless the count stopped at
// 2^32-1), and none are set beyond m.
//
// What this catches is a header that lies about the data: an empty or
// thinned-out filter claiming many keys, a full one claiming few. It does
// not catch keys removed from a filter within the tolerance: with other
// parameters than the installed filter's only pinning (a digest or a
// signature) proves a filter is the publisher's.
const fillTailBits = 41 // each side's false-refusal probability is 2^-fillTailBits

// fillBounds returns the fewest and most bits a genuine filter with
// header h may have set.
func fillBounds(h pkbf.Header) (lo, hi uint64) {
	m, k, n := float64(h.Bits()), float64(h.HashCount), float64(h.EntryCount)
	c := fillTailBits * math.Ln2
	tol := func(b, variance float64) float64 { return b*c/3 + math.Sqrt(b*b*c*c/9+2*c*variance) }
	// The classic model: every add counts.
	clear := math.Exp(k * n * math.Log1p(-1/m))
	eC, tC := m*(1-clear), tol(1, m*clear*(1-clear))
	// Counting only adds that set a bit.
	x := countedFill(h.HashCount, k*n/m)
	eA, tA := m*x, tol(k, m*x*x/2)
	lo = uint64(max(0, math.Floor(min(eC-tC, eA-tA))))
	hi = uint64(min(m, math.Ceil(max(eC+tC, eA+tA))))
	if h.EntryCount < math.MaxUint32 {
		hi = min(hi, uint64(h.HashCount)*uint64(h.EntryCount))
	}
	return lo, hi
}

// countedFill solves Σ_{j=1..k} x^j/j = r for x in [0, 1]: the fill of a
// filter whose count counts only adds that set a new bit, at r = kn/m.
func countedFill(k uint8, r float64) float64 {
	g := func(x float64) float64 {
		s, p := 0.0, 1.0
		for j := 1; j <= int(k); j++ {
			p *= x
			s += p / float64(j)
		}
		return s
	}
	if r >= g(1) {
		return 1
	}
	lo, hi := 0.0, 1.0
	for range 64 {
		mid := (lo + hi) / 2
		if g(mid) < r {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// checkFill refuses a filter whose bits set do not fit its entry count.
// For a filter longer than the installed one, its data folded onto the
// installed length must fit too: folded, a genuine filter is the filter
// of the same keys at that length, while one made by writing the
// installed data twice (and claiming twice the entries, to pass the first
// check) folds back to the installed data alone.
func (up *updater) checkFill(h pkbf.Header, s scanned) error {
	if err := up.checkFillOf(h, s.set, ""); err != nil {
		return err
	}
	if s.foldedTo == 0 {
		return nil
	}
	short := h
	short.HashLength = s.foldedTo
	return up.checkFillOf(short, s.folded, fmt.Sprintf(" folded onto the installed hash length %d", short.HashLength))
}

// checkFillOf refuses set bits that do not fit the entry count of h; how
// says how the data was read.
func (up *updater) checkFillOf(h pkbf.Header, set uint64, how string) error {
	lo, hi := fillBounds(h)
	if set >= lo && set <= hi {
		return nil
	}
	return perr.Kind(ErrImplausibleFill, up.errorf("the filter%s has %d of %d bits set, where %d entries with %d hashes each set %d to %d: its header does not describe its data (an empty or altered filter?); not installed",
		how, set, h.Bits(), h.EntryCount, h.HashCount, lo, hi))
}
