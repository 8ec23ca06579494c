// Package ct checks the subject public key of every certificate and
// precertificate in a Certificate Transparency log against a pkbf filter,
// resumably: the scanners of the keys that matter most, the ones CAs have
// already signed.
//
// Both log kinds in use are read through their own client libraries:
// Static CT logs (c2sp.org/static-ct-api, tiles) through
// filippo.io/sunlight, and RFC 6962 logs (get-sth, get-entries) through
// github.com/google/certificate-transparency-go. Entries are checked
// against the log's tree as they are read (tiles against the checkpoint's
// root by the Sunlight client; RFC 6962 entries by a compact Merkle range
// kept across runs, compared with the signed tree head's root, or proved
// a prefix of it by a consistency proof), each run's tree head is proved
// to extend the last run's tree, and the tree head's signature is verified
// when the log's key is given.
//
// [Open] opens a log with its kind's client, asking the log its kind
// unless the options say it. A [Scan] reads a log from where its state
// file says the last run stopped to the log's current size, checks the
// key of each entry's certificate with a [keycheck.KeyChecker] (a
// [keycheck.Checker] over a filter), and reports every probable hit with the
// entry's index, timestamp, serial, subject, issuer and fingerprint:
//
//	log, err := ct.Open(ctx, "https://log.example/2026h1/", ct.Options{Key: logKey})
//	if err != nil {
//		return err
//	}
//	res, err := (&ct.Scan{Log: log, Filter: keycheck.New(filter, keycheck.Options{}), State: "scan.json",
//		Report: func(h ct.Hit) error { _, err := os.Stdout.Write(h.AppendJSON(nil)); return err },
//	}).Run(ctx)
package ct

import (
	"context"
	"errors"
	"fmt"
	"iter"
)

// An Entry is one log entry as its Merkle leaf has it: where and when the
// log has it, and the certificate or precertificate the leaf covers.
type Entry struct {
	Index int64
	// Timestamp is the entry's, in milliseconds since the Unix epoch.
	Timestamp int64
	Precert   bool
	// Leaf is the DER the Merkle leaf covers: a certificate entry's
	// certificate, a precertificate entry's TBSCertificate. Nothing
	// outside the leaf (the precertificate as submitted, the chain) is
	// read: a log can change that without changing its tree. Leaf is not
	// reused by the Log: a scan holds entries in flight while reading
	// more.
	Leaf []byte
}

// A Head is the state of a log a scan reads up to: its size, its root
// hash, and whether its signature was verified (the log's key was given).
type Head struct {
	Size     int64
	Root     []byte
	Verified bool
}

// A Log is a CT log as a scan reads it.
type Log interface {
	// URL names the log: its monitoring prefix or RFC 6962 URL.
	URL() string
	// Kind is the log's API.
	Kind() Kind
	// Head returns the log's current tree head, its signature verified
	// when the log's key was given.
	Head(ctx context.Context) (Head, error)
	// Entries yields the entries from start to head.Size, each checked
	// against head as well as the log's protocol allows (see the
	// package documentation), stopping at the first error, which it
	// yields. state is the log's verification state from the last run
	// (nil for none), and save returns it as of the entries yielded so
	// far, for the next run; a log that needs none returns a nil save.
	Entries(ctx context.Context, head Head, start int64, state []byte) (entries iter.Seq2[Entry, error], save func() ([]byte, error))
}

// treeProver is implemented by both kinds of Log: proveTree proves that
// the tree head next extends old (a tree of the same log, smaller), as the
// log's protocol allows (Static CT: a tlog tree proof over hash tiles
// authenticated against next; RFC 6962: get-sth-consistency). A log
// whose history changed fails it with errForked.
type treeProver interface {
	proveTree(ctx context.Context, old, next Head) error
}

// errForked is in the error of a tree head that does not extend the one a
// scan's state was read against.
var errForked = errors.New("the log's history changed")

// A prefixProver is a Log whose Entries check the entries against the
// tree head only at the tree's end (RFC 6962): provePrefix proves that
// the entries a verification state (from Entries' save) covers are the
// head's first ones, or fails (errNotInTree: they are not). A scan keeps
// in its state only what is so proved.
type prefixProver interface {
	provePrefix(ctx context.Context, head Head, state []byte) error
}

// errNotInTree is in the error a Log yields when the entries it has
// yielded do not match the tree head: none of them is trusted, and the
// scan keeps none of the run's progress.
var errNotInTree = errors.New("the entries served do not match the tree head")

// stopped returns err, or, when ctx is done, an error that also matches
// ctx's error with errors.Is: client libraries report a request cut short
// by a cancelled context in words of their own ("failed to read response
// body: context canceled"), and a caller tells an interrupted scan from a
// failed one by errors.Is(err, context.Canceled).
func stopped(ctx context.Context, err error) error {
	if cerr := ctx.Err(); err != nil && cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}
