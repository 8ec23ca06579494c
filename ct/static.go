package ct

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"iter"
	"strings"

	"filippo.io/sunlight"
	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/tlog"
)

// staticLog is a Static CT log (c2sp.org/static-ct-api), read with the
// Sunlight client: every tile it reads is authenticated against the
// checkpoint's root hash.
type staticLog struct {
	prefix string
	key    crypto.PublicKey
	c      *sunlight.Client
}

// newStatic returns the Static CT log at monitoringPrefix: an http(s)
// URL, or file:// (gzip+file:// when the data tiles are stored gzipped,
// as a Sunlight log's local directory has them).
func newStatic(monitoringPrefix string, opts Options) (Log, error) {
	c, err := sunlight.NewClient(&sunlight.ClientConfig{
		MonitoringPrefix: monitoringPrefix,
		PublicKey:        opts.Key,
		HTTPClient:       opts.HTTPClient,
		UserAgent:        opts.UserAgent,
		ConcurrencyLimit: opts.Parallel,
	})
	if err != nil {
		return nil, fmt.Errorf("static CT log %s: %w", monitoringPrefix, err)
	}
	return &staticLog{prefix: monitoringPrefix, key: opts.Key, c: c}, nil
}

func (l *staticLog) URL() string { return l.prefix }

func (l *staticLog) Kind() Kind { return Static }

func (l *staticLog) Head(ctx context.Context) (Head, error) {
	read, limited, release := abortOnLimit(ctx)
	defer release()
	if l.key != nil {
		cp, _, err := l.c.Checkpoint(read)
		if err = limited(err); err != nil {
			return Head{}, stopped(ctx, fmt.Errorf("%s: %w", l.prefix, err))
		}
		return Head{Size: cp.N, Root: cp.Hash[:], Verified: true}, nil
	}
	b, err := l.c.TileReader().ReadEndpoint(read, "checkpoint")
	if err = limited(err); err != nil {
		return Head{}, stopped(ctx, fmt.Errorf("%s: reading the checkpoint: %w", l.prefix, err))
	}
	cp, err := parseCheckpoint(b)
	if err != nil {
		return Head{}, fmt.Errorf("%s: %w", l.prefix, err)
	}
	return Head{Size: cp.N, Root: cp.Hash[:]}, nil
}

// parseCheckpoint reads the checkpoint of a signed note, its signatures
// unread.
func parseCheckpoint(b []byte) (torchwood.Checkpoint, error) {
	text, _, ok := strings.Cut(string(b), "\n\n")
	if !ok {
		return torchwood.Checkpoint{}, errors.New("the checkpoint is not a signed note")
	}
	return torchwood.ParseCheckpoint(text + "\n")
}

func tree(h Head) (tlog.Tree, error) {
	var t tlog.Tree
	if len(h.Root) != len(t.Hash) {
		return t, errors.New("the tree head has no root hash")
	}
	t.N = h.Size
	copy(t.Hash[:], h.Root)
	return t, nil
}

func (l *staticLog) Entries(ctx context.Context, head Head, start int64, _ []byte) (iter.Seq2[Entry, error], func() ([]byte, error)) {
	return func(yield func(Entry, error) bool) {
		t, err := tree(head)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		// Entries stops at the last full tile, and before a partial one
		// unless it starts there: called again until the head's size.
		read, limited, release := abortOnLimit(ctx)
		defer release()
		for start < head.Size {
			before := start
			for i, e := range l.c.Entries(read, t, start) {
				if !yield(Entry{Index: i, Timestamp: e.Timestamp, Precert: e.IsPrecert, Leaf: e.Certificate}, nil) {
					return
				}
				start = i + 1
			}
			if err := limited(l.c.Err()); err != nil {
				at := start
				if start == before { // a fetch of tiles failed, not an entry
					if terr := l.unreadable(ctx, t, start); terr != nil {
						at, err = terr.at, terr.err
					}
				}
				yield(Entry{}, stopped(ctx, fmt.Errorf("%s: entry %d: %w", l.prefix, at, err)))
				return
			}
			if err := ctx.Err(); err != nil {
				yield(Entry{}, err)
				return
			}
			if start == before {
				yield(Entry{}, fmt.Errorf("%s: no entry from %d on, but the checkpoint has %d", l.prefix, start, head.Size))
				return
			}
		}
	}, nil // tiles are checked against each head: nothing to keep
}

func (l *staticLog) proveTree(ctx context.Context, old, next Head) error {
	ot, err := tree(old)
	if err != nil {
		return err
	}
	nt, err := tree(next)
	if err != nil {
		return err
	}
	read, limited, release := abortOnLimit(ctx)
	defer release()
	p, err := tlog.ProveTree(nt.N, ot.N, torchwood.TileHashReaderWithContext(read, nt, l.c.TileReader()))
	if err = limited(err); err != nil {
		return stopped(ctx, fmt.Errorf("%s: proving the tree of size %d a prefix of the checkpoint's: %w", l.prefix, ot.N, err))
	}
	if err := tlog.CheckTree(p, nt.N, nt.Hash, ot.N, ot.Hash); err != nil {
		return fmt.Errorf("%w: %v", errForked, err)
	}
	return nil
}

// A tileError is a data tile that could not be read: the first entry of
// it a scan wanted, and why.
type tileError struct {
	at  int64
	err error
}

// unreadable finds, when the client failed before yielding the entry at
// start, the first of the data tiles it was fetching that cannot be read,
// one tile at a time: the client fetches up to 50 tiles at once, fails
// them all for one, and names only its path. It returns nil when each can
// be read (the failure was elsewhere: a hash tile, an entry).
func (l *staticLog) unreadable(ctx context.Context, t tlog.Tree, start int64) *tileError {
	const window = 50 // the tiles the client fetches at once
	// The client fetches full tiles only, or the partial one alone.
	first, end := start/sunlight.TileWidth, t.N/sunlight.TileWidth
	if end == first {
		end++
	}
	for n := first; n < min(first+window, end) && ctx.Err() == nil; n++ {
		tile := tlog.Tile{H: sunlight.TileHeight, L: -1, N: n, W: int(min(sunlight.TileWidth, t.N-n*sunlight.TileWidth))}
		read, limited, release := abortOnLimit(ctx)
		_, err := l.c.TileReader().ReadTiles(read, []tlog.Tile{tile})
		release()
		if err != nil {
			return &tileError{max(start, n*sunlight.TileWidth), limited(err)}
		}
	}
	return nil
}
