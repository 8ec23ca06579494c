package pwnedkeys

import (
	"context"
	"sync"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keys"
)

// Filter is what a Checker asks first: a *pkbf.Filter, or a *pkbf.Live
// that follows a filter path as new files replace it.
type Filter interface {
	// Contains reports whether the filter probably holds the key of spki
	// under any of its encodings.
	Contains(spki []byte) bool
}

var (
	_ Filter = (*pkbf.Filter)(nil)
	_ Filter = (*pkbf.Live)(nil)
)

// Checker puts a filter in front of a Client: the API is asked only about
// keys the filter says are probably compromised, with at most MaxInFlight
// requests at a time, so a pipeline pays the network only for hits. Set
// its fields before the first Check; from then on it is safe for
// concurrent use.
type Checker struct {
	Filter Filter
	Client *Client // nil: a zero Client
	// MaxInFlight caps concurrent requests; 0 means 4.
	MaxInFlight int

	once sync.Once
	sem  chan struct{}
}

// Check reports whether the filter probably holds the key of spki, under
// any of its encodings (pkbf.Filter.Contains), and when it does, what the
// API says of its canonical encoding (keys.Canonical; spki itself when it
// cannot be re-encoded), as Client.Check: a verified attestation, a 404
// (a false positive of the filter) or an error. When the filter says no,
// Check makes no request and returns probably false. The Result's
// Fingerprint is the canonical encoding's. For many keys, pkbf.Filter.Check
// with Confirm set to this Checker's Confirm does the same in batches.
func (c *Checker) Check(ctx context.Context, spki []byte) (probably bool, res Result, err error) {
	canonical, err := keys.Canonical(spki)
	if err != nil {
		canonical = spki
	}
	if !c.Filter.Contains(spki) {
		return false, Result{Fingerprint: keys.Fingerprint(canonical)}, nil
	}
	res, err = c.Confirm(ctx, canonical)
	return true, res, err
}

// Confirm asks the API about canonical, the canonical encoding
// (keys.Canonical) of a key the caller has already found probably in the
// filter, as Check does once the filter says yes: within MaxInFlight
// requests at a time. It is for callers that query the filter
// themselves, in batches: pkbf.Filter.Check's CheckOptions.Confirm.
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
