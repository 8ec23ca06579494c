package ct

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sort"
	"sync"

	ct "github.com/google/certificate-transparency-go"
	"github.com/google/certificate-transparency-go/client"
	"github.com/google/certificate-transparency-go/jsonclient"
	cttls "github.com/google/certificate-transparency-go/tls"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// rfc6962Log is an RFC 6962 log, read with certificate-transparency-go's
// client. get-entries proves nothing by itself: the entries are hashed
// into a compact Merkle range as they are read (kept in the state between
// runs), and when the scan reaches the tree head's size, the range's root
// must be the signed tree head's.
type rfc6962Log struct {
	url      string
	c        *client.LogClient
	verified bool
	batch    int64
	parallel int
}

// newRFC6962 returns the RFC 6962 log at url (its prefix, before
// /ct/v1/).
func newRFC6962(url string, opts Options) (Log, error) {
	jo := jsonclient.Options{UserAgent: opts.UserAgent, Logger: quietLogger{}}
	if opts.Key != nil {
		der, err := x509.MarshalPKIXPublicKey(opts.Key)
		if err != nil {
			return nil, fmt.Errorf("RFC 6962 log %s: its key: %w", url, err)
		}
		jo.PublicKeyDER = der
	}
	c, err := client.New(url, opts.HTTPClient, jo)
	if err != nil {
		return nil, fmt.Errorf("RFC 6962 log %s: %w", url, err)
	}
	return &rfc6962Log{url: url, c: c, verified: opts.Key != nil, batch: int64(opts.Batch), parallel: opts.Parallel}, nil
}

// quietLogger drops jsonclient's log lines: errors come back as errors.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

func (l *rfc6962Log) URL() string { return l.url }

func (l *rfc6962Log) Kind() Kind { return RFC6962 }

func (l *rfc6962Log) Head(ctx context.Context) (Head, error) {
	sth, err := l.c.GetSTH(ctx)
	if err != nil {
		return Head{}, stopped(ctx, fmt.Errorf("%s: get-sth: %w", l.url, err))
	}
	return Head{Size: int64(sth.TreeSize), Root: append([]byte(nil), sth.SHA256RootHash[:]...), Verified: l.verified}, nil
}

var rangeFactory = compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}

// rangeState is the compact range of the leaves read so far, as saved.
type rangeState struct {
	Begin  uint64   `json:"begin"`
	End    uint64   `json:"end"`
	Hashes [][]byte `json:"hashes"`
}

func (l *rfc6962Log) Entries(ctx context.Context, head Head, start int64, state []byte) (iter.Seq2[Entry, error], func() ([]byte, error)) {
	var mu sync.Mutex
	var r *compact.Range
	save := func() ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if r == nil {
			return state, nil
		}
		return json.Marshal(rangeState{r.Begin(), r.End(), r.Hashes()})
	}
	seq := func(yield func(Entry, error) bool) {
		rr, err := l.startRange(ctx, head, start, state)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		mu.Lock()
		r = rr
		mu.Unlock()
		for batch, err := range l.batches(ctx, start, head.Size) {
			if err != nil {
				yield(Entry{}, err)
				return
			}
			for i := range batch.Entries {
				index := start
				e, err := leafEntry(index, batch.Entries[i].LeafInput)
				if err != nil {
					yield(Entry{}, fmt.Errorf("%s: entry %d: %w", l.url, index, err))
					return
				}
				mu.Lock()
				err = r.Append(rfc6962.DefaultHasher.HashLeaf(batch.Entries[i].LeafInput), nil)
				mu.Unlock()
				if err != nil {
					yield(Entry{}, err)
					return
				}
				if !yield(e, nil) {
					return
				}
				start++
			}
		}
		if start == head.Size {
			mu.Lock()
			err := l.proveRange(ctx, head, r)
			mu.Unlock()
			if err != nil {
				yield(Entry{}, err)
			}
		}
	}
	return seq, save
}

// savedRange reads a compact range [0, n) as the state keeps it.
func (l *rfc6962Log) savedRange(state []byte) (*compact.Range, error) {
	var s rangeState
	if err := json.Unmarshal(state, &s); err != nil {
		return nil, fmt.Errorf("%s: the saved Merkle range: %w", l.url, err)
	}
	r, err := rangeFactory.NewRange(s.Begin, s.End, s.Hashes)
	if err != nil {
		return nil, fmt.Errorf("%s: the saved Merkle range: %w", l.url, err)
	}
	if s.Begin != 0 {
		return nil, fmt.Errorf("%s: the saved Merkle range covers [%d, %d), not a prefix of the log", l.url, s.Begin, s.End)
	}
	return r, nil
}

func (l *rfc6962Log) proveTree(ctx context.Context, old, next Head) error {
	p, err := l.c.GetSTHConsistency(ctx, uint64(old.Size), uint64(next.Size))
	if err != nil {
		return stopped(ctx, fmt.Errorf("%s: get-sth-consistency %d %d: %w", l.url, old.Size, next.Size, err))
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, uint64(old.Size), uint64(next.Size), p, old.Root, next.Root); err != nil {
		return fmt.Errorf("%w: %v", errForked, err)
	}
	return nil
}

// provePrefix proves that the entries the compact range in state covers,
// [0, n), are the first n of the tree head: its root is the head's when
// n is the head's size, else a consistency proof (get-sth-consistency)
// leads from it to the head's root. Entries short of the tree's end are
// verified so, and only so: without it the state would keep entries no
// root covers. A range that does not lead to the head is errNotInTree.
func (l *rfc6962Log) provePrefix(ctx context.Context, head Head, state []byte) error {
	r, err := l.savedRange(state)
	if err != nil {
		return err
	}
	return l.proveRange(ctx, head, r)
}

// proveRange is provePrefix of a compact range [0, n).
func (l *rfc6962Log) proveRange(ctx context.Context, head Head, r *compact.Range) error {
	root, err := r.GetRootHash(nil)
	n, size := r.End(), uint64(head.Size)
	switch {
	case err != nil:
		return err
	case n == 0:
		return nil
	case n > size:
		return fmt.Errorf("%s: the Merkle range covers %d entries, past the tree head's %d", l.url, n, size)
	case n == size:
		if !bytes.Equal(root, head.Root) {
			return fmt.Errorf("%s: %w: entries 0 to %d hash to root %x, the tree head of size %d has %x", l.url, errNotInTree, n-1, root, size, head.Root)
		}
		return nil
	}
	p, err := l.c.GetSTHConsistency(ctx, n, size)
	if err != nil {
		return stopped(ctx, fmt.Errorf("%s: get-sth-consistency %d %d: %w", l.url, n, size, err))
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, n, size, p, root, head.Root); err != nil {
		return fmt.Errorf("%s: %w: entries 0 to %d hash to root %x, which the log's consistency proof does not lead to the tree head of size %d (root %x): %v", l.url, errNotInTree, n-1, root, size, head.Root, err)
	}
	return nil
}

// startRange returns the compact range to extend from start: the saved
// one, an empty one at 0, or for a first scan from a later index the
// range [0, start) made of the left-hand nodes of start's inclusion proof.
func (l *rfc6962Log) startRange(ctx context.Context, head Head, start int64, state []byte) (*compact.Range, error) {
	switch {
	case state != nil:
		r, err := l.savedRange(state)
		if err == nil && r.End() != uint64(start) {
			err = fmt.Errorf("%s: the saved Merkle range covers [0, %d), not [0, %d)", l.url, r.End(), start)
		}
		return r, err
	case start == 0:
		return rangeFactory.NewEmptyRange(0), nil
	case start >= head.Size:
		return nil, fmt.Errorf("%s: start %d is past the tree head's size %d", l.url, start, head.Size)
	}
	resp, err := l.c.GetRawEntries(ctx, start, start)
	if err == nil && len(resp.Entries) == 0 {
		err = errors.New("no entry in the answer")
	}
	if err != nil {
		return nil, stopped(ctx, fmt.Errorf("%s: get-entries %d: %w", l.url, start, err))
	}
	leaf := rfc6962.DefaultHasher.HashLeaf(resp.Entries[0].LeafInput)
	p, err := l.c.GetProofByHash(ctx, leaf, uint64(head.Size))
	if err != nil {
		return nil, stopped(ctx, fmt.Errorf("%s: get-proof-by-hash for entry %d: %w", l.url, start, err))
	}
	if p.LeafIndex != start {
		return nil, fmt.Errorf("%s: get-proof-by-hash for entry %d answered index %d", l.url, start, p.LeafIndex)
	}
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(start), uint64(head.Size), leaf, p.AuditPath, head.Root); err != nil {
		return nil, fmt.Errorf("%s: entry %d is not in the tree head: %w", l.url, start, err)
	}
	nodes, err := proof.Inclusion(uint64(start), uint64(head.Size))
	if err != nil {
		return nil, err
	}
	_, b, e := nodes.Ephem()
	type node struct {
		begin uint64
		hash  []byte
	}
	var left []node
	for i, id := range nodes.IDs {
		j := i // index of id's hash in the audit path, where the ephemeral node's children are one hash
		switch {
		case i >= b && i < e:
			continue // a child of the ephemeral node, right of start
		case i >= e && e > b:
			j = i - (e - b) + 1
		}
		if lo, hi := id.Coverage(); hi <= uint64(start) && j < len(p.AuditPath) {
			left = append(left, node{lo, p.AuditPath[j]})
		}
	}
	sort.Slice(left, func(i, j int) bool { return left[i].begin < left[j].begin })
	hashes := make([][]byte, len(left))
	for i, n := range left {
		hashes[i] = n.hash
	}
	r, err := rangeFactory.NewRange(0, uint64(start), hashes)
	if err != nil {
		return nil, fmt.Errorf("%s: the inclusion proof of entry %d: %w", l.url, start, err)
	}
	return r, nil
}

// batches yields the get-entries answers from start to end in order,
// with up to l.parallel requests in flight. A short answer (logs cap
// their batches) is followed by requests for the rest of its range before
// the next range's answer is yielded.
func (l *rfc6962Log) batches(ctx context.Context, start, end int64) iter.Seq2[*ct.GetEntriesResponse, error] {
	return func(yield func(*ct.GetEntriesResponse, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type request struct {
			from, to int64
			done     chan struct{}
			resp     *ct.GetEntriesResponse
			err      error
		}
		get := func(q *request) {
			q.resp, q.err = l.c.GetRawEntries(ctx, q.from, q.to-1)
			if q.err == nil && (len(q.resp.Entries) == 0 || int64(len(q.resp.Entries)) > q.to-q.from) {
				q.err = fmt.Errorf("%d entries", len(q.resp.Entries))
			}
			if q.err != nil {
				q.err = stopped(ctx, fmt.Errorf("%s: get-entries [%d, %d): %w", l.url, q.from, q.to, q.err))
			}
			close(q.done)
		}
		var pending []*request
		next := start
		for len(pending) > 0 || next < end {
			for len(pending) < l.parallel && next < end {
				q := &request{from: next, to: min(next+l.batch, end), done: make(chan struct{})}
				go get(q)
				pending = append(pending, q)
				next = q.to
			}
			q := pending[0]
			pending = pending[1:]
			for {
				<-q.done
				if q.err != nil {
					yield(nil, q.err)
					return
				}
				if !yield(q.resp, nil) {
					return
				}
				at := q.from + int64(len(q.resp.Entries))
				if at == q.to {
					break
				}
				q = &request{from: at, to: q.to, done: make(chan struct{})}
				get(q)
			}
		}
	}
}

// leafEntry reads an entry from its Merkle leaf alone. extra_data, the
// precertificate as submitted and the chain, is outside the leaf, and is
// not read (certificate-transparency-go's RawLogEntryFromLeaf takes a
// precertificate entry's certificate from it).
func leafEntry(index int64, leafInput []byte) (Entry, error) {
	var leaf ct.MerkleTreeLeaf
	rest, err := cttls.Unmarshal(leafInput, &leaf)
	switch {
	case err != nil:
		return Entry{}, fmt.Errorf("the Merkle leaf: %w", err)
	case len(rest) > 0:
		return Entry{}, fmt.Errorf("the Merkle leaf: %d bytes after it", len(rest))
	case leaf.Version != ct.V1 || leaf.LeafType != ct.TimestampedEntryLeafType || leaf.TimestampedEntry == nil:
		return Entry{}, fmt.Errorf("the Merkle leaf: version %d, type %d: not a v1 timestamped entry", leaf.Version, leaf.LeafType)
	}
	te := leaf.TimestampedEntry
	e := Entry{Index: index, Timestamp: int64(te.Timestamp)}
	switch {
	case te.EntryType == ct.X509LogEntryType && te.X509Entry != nil:
		e.Leaf = te.X509Entry.Data
	case te.EntryType == ct.PrecertLogEntryType && te.PrecertEntry != nil:
		e.Precert, e.Leaf = true, te.PrecertEntry.TBSCertificate
	default:
		return Entry{}, fmt.Errorf("the Merkle leaf: entry type %d is neither a certificate nor a precertificate", te.EntryType)
	}
	return e, nil
}
