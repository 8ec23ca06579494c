// Package pwnedkeys asks the pwnedkeys.com API whether a key is compromised
// and verifies the proof it answers with.
//
// A pkbf filter only says "probably". The API says for sure: 404 for a key
// it does not know, and for a compromised key a JSON Web Signature made
// with that very key, stating "key is pwned". [Client.Check] reports a key
// as pwned only when that signature verifies against the key asked about;
// anything else is an error, never a "yes". [Checker] puts a filter in
// front, so only the filter's "probably" answers cost a request.
package pwnedkeys

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/retryafter"
)

// DefaultBaseURL is the pwnedkeys API endpoint a zero Client uses.
const DefaultBaseURL = "https://v1.pwnedkeys.com"

// Limits on what the client accepts and how long it tries.
const (
	// maxBody bounds a response body: a valid attestation has a payload of
	// at most 1024 bytes and a signature of at most a few kilobytes.
	maxBody = 64 << 10
	// maxPayload is the largest payload an attestation may have.
	maxPayload = 1024
	// attempts is how many times a request is made when the server
	// answers 429 or 5xx.
	attempts = 4
	// maxRetryAfter caps how long a Retry-After header can make us wait.
	maxRetryAfter = time.Minute
)

// ErrBadAttestation is wrapped by the error Check returns when the server
// says a key is compromised but its proof does not hold: a signature that
// does not verify against the key, the wrong kid or alg, a payload without
// "key is pwned", a malformed or oversized answer. Such a key must not be
// treated as compromised, nor as safe.
var ErrBadAttestation = errors.New("pwnedkeys: bad attestation")

// defaultHTTPClient is used by a Client with no HTTPClient.
var defaultHTTPClient = &http.Client{Timeout: 30 * time.Second}

// Client asks the pwnedkeys API about keys. The zero value asks the public
// endpoint with an HTTP client that times out after 30 seconds. A Client is
// safe for concurrent use, and must not be copied after first use.
//
// When the server answers 429 or 5xx, the pause before the next try (its
// Retry-After, or a jittered backoff) holds for every request of the
// Client, not only the one that got the answer: a struggling server gets
// one pause, not one request per key in flight.
type Client struct {
	// BaseURL is the API endpoint; empty means DefaultBaseURL.
	BaseURL string
	// HTTPClient makes the requests; nil means one with sane timeouts.
	HTTPClient *http.Client

	// pausedUntil is the Unix time in nanoseconds before which no request
	// is made: shared by all the Client's requests.
	pausedUntil atomic.Int64
}

// Result is what the API said of a key.
type Result struct {
	// Pwned is true only when the API returned an attestation that verified
	// against the key: right alg, kid equal to the fingerprint, a valid
	// signature by the key itself and a payload saying "key is pwned".
	Pwned bool
	// Fingerprint is the key's pwnedkeys fingerprint: the lowercase hex
	// SHA-256 of its DER SubjectPublicKeyInfo.
	Fingerprint string
	// Payload is the attestation's decoded payload, when Pwned.
	Payload []byte
}

// Check asks the API about spki, a DER SubjectPublicKeyInfo (EC keys may
// have either point encoding). A 404 gives Pwned false and no error. A 200
// gives Pwned true only if its attestation verifies; otherwise an error
// wrapping ErrBadAttestation. Any other status (after retrying 429 and 5xx
// a few times, honouring Retry-After, within ctx's deadline), a broken
// connection or a timeout is an error: a failure to answer, not a "no".
func (c *Client) Check(ctx context.Context, spki []byte) (Result, error) {
	res := Result{Fingerprint: keys.Fingerprint(spki)}
	key, err := parseKey(spki)
	if err != nil {
		return res, err
	}
	body, err := c.fetch(ctx, res.Fingerprint)
	if err != nil || body == nil {
		return res, err
	}
	payload, err := verify(body, key, res.Fingerprint)
	if err != nil {
		return res, err
	}
	res.Pwned, res.Payload = true, payload
	return res, nil
}

func (c *Client) baseURL() string {
	if c.BaseURL == "" {
		return DefaultBaseURL
	}
	return strings.TrimSuffix(c.BaseURL, "/")
}

func (c *Client) httpClient() *http.Client {
	if c.HTTPClient == nil {
		return defaultHTTPClient
	}
	return c.HTTPClient
}

// fetch returns the body of a 200 answer, or nil for a 404.
func (c *Client) fetch(ctx context.Context, fingerprint string) ([]byte, error) {
	url := c.baseURL() + "/" + fingerprint
	backoff := 500 * time.Millisecond
	var last error // the last answer worth retrying
	for attempt := 1; ; attempt++ {
		if err := c.waitPause(ctx, last); err != nil {
			return nil, err
		}
		body, retryAfter, err := c.get(ctx, url)
		if err == nil || retryAfter < 0 || attempt == attempts {
			return body, err
		}
		// A 429 or 5xx: pause every request of the Client, as the server
		// asks or with jittered backoff.
		wait := retryAfter
		if wait == 0 {
			wait = backoff/2 + rand.N(backoff/2+1)
			backoff *= 2
		}
		c.pause(wait)
		last = err
	}
}

// pause makes the Client's requests wait d from now, unless they wait
// longer already.
func (c *Client) pause(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		old := c.pausedUntil.Load()
		if old >= until || c.pausedUntil.CompareAndSwap(old, until) {
			return
		}
	}
}

// waitPause waits out the Client's pause. If that would pass ctx's
// deadline it returns at once with an error; cause is the answer that
// asked for the pause, when this request got it.
func (c *Client) waitPause(ctx context.Context, cause error) error {
	until := time.Unix(0, c.pausedUntil.Load())
	wait := time.Until(until)
	if wait <= 0 {
		return nil
	}
	if cause == nil {
		cause = errors.New("pwnedkeys: the server asked for a pause (429 or 5xx)")
	}
	if deadline, ok := ctx.Deadline(); ok && until.After(deadline) {
		return fmt.Errorf("%w (no time left to retry before the deadline, in %s)", cause, time.Until(deadline).Round(time.Millisecond))
	}
	if err := retryafter.Sleep(ctx, wait); err != nil {
		return fmt.Errorf("%w (then %w)", cause, err)
	}
	return nil
}

// get makes one request. For an answer worth retrying (429, 5xx) it
// returns an error and retryAfter >= 0 (0: no Retry-After); for a final
// error, retryAfter < 0.
func (c *Client) get(ctx context.Context, url string) (body []byte, retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, -1, fmt.Errorf("pwnedkeys: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, -1, fmt.Errorf("pwnedkeys: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, -1, nil
	case resp.StatusCode == http.StatusOK:
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
		if err != nil {
			return nil, -1, fmt.Errorf("pwnedkeys: reading the answer for %s: %w", url, err)
		}
		if len(body) > maxBody {
			return nil, -1, fmt.Errorf("%w: answer is larger than %d bytes", ErrBadAttestation, maxBody)
		}
		return body, -1, nil
	}
	err = fmt.Errorf("pwnedkeys: %s answered %s", url, resp.Status)
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		return nil, retryafter.Parse(resp.Header.Get("Retry-After"), maxRetryAfter), err
	}
	return nil, -1, err
}
