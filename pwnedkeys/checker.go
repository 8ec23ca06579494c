package pwnedkeys

import (
	"context"
	"sync"

	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/keys"
)

// Checker puts a filter in front of a Client: the API is asked only about
// keys the filter says are probably compromised, with at most MaxInFlight
// requests at a time, so a pipeline pays the network only for hits. Set
// its fields before the first Check; from then on it is safe for
// concurrent use.
type Checker struct {
	// Filter is asked first, about every key: a keycheck.Checker over a
	// filter (a *pkbf.Live follows a filter path as new files replace it).
	Filter keycheck.KeyChecker
	Client *Client // nil: a zero Client
	// MaxInFlight caps concurrent requests; 0 means 4.
	MaxInFlight int

	once sync.Once
	sem  chan struct{}
}

// Check reports whether the filter probably holds the key of spki, under
// any of its encodings (keycheck.Checker.CheckKey), and when it does, what
// the API says of its canonical encoding (keys.Canonical; spki itself when
// it cannot be re-encoded), as Client.Check: a verified attestation, a 404
// (a false positive of the filter) or an error. When the filter says no,
// Check makes no request and returns probably false; when it cannot
// answer (a key it cannot read, a filter file cut short), Check returns
// its error. The Result's Fingerprint is the canonical encoding's. For
// many keys, keycheck.Checker.Check with Options.Confirm set to this
// Checker's Confirm does the same in batches.
func (c *Checker) Check(ctx context.Context, spki []byte) (probably bool, res Result, err error) {
	canonical, err := keys.Canonical(spki)
	if err != nil {
		canonical = spki
	}
	res.Fingerprint = keys.Fingerprint(canonical)
	switch v := c.Filter.CheckKey(spki); {
	case v.Err != nil:
		return false, res, v.Err
	case !v.Probably:
		return false, res, nil
	}
	res, err = c.Confirm(ctx, canonical)
	return true, res, err
}

// Confirm asks the API about canonical, the canonical encoding
// (keys.Canonical) of a key the caller has already found probably in the
// filter, as Check does once the filter says yes: within MaxInFlight
// requests at a time. It is for callers that query the filter
// themselves, in batches: keycheck.Options.Confirm.
func (c *Checker) Confirm(ctx context.Context, canonical []byte) (Result, error) {
	c.once.Do(func() {
		n := c.MaxInFlight
		if n <= 0 {
			n = 4
		}
		c.sem = make(chan struct{}, n)
	})
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return Result{Fingerprint: keys.Fingerprint(canonical)}, ctx.Err()
	}
	defer func() { <-c.sem }()
	client := c.Client
	if client == nil {
		client = &Client{}
	}
	return client.Check(ctx, canonical)
}
