package pkbfbeam

import (
	"context"
	"crypto/x509"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/ct"
	"github.com/pkbf/pkbf/keycheck"
)

func init() {
	register.DoFn3x1[context.Context, CTRange, func(string), error](&ctCheckFn{})
	beam.RegisterType(reflect.TypeOf((*CTRange)(nil)).Elem())
}

// CTLog is a CT log to scan: its URL (a Static CT log's monitoring
// prefix), and its public key (PKIX DER) when the tree head's signature
// is to be verified. Its kind is asked of the log (ct.Open); only Static
// CT logs can be scanned in ranges (see CTRanges).
type CTLog struct {
	Prefix string
	Key    []byte
}

// CTRange is CTCheck's unit of work: the entries [From, To) of a log, to
// be checked against the tree head of size TreeSize and root hash Root,
// the one CTRanges read, so that every worker checks its tiles against
// the same tree.
type CTRange struct {
	Prefix   string
	Kind     string // the log's ct.Kind, as ct.Open found it when the pipeline was built
	Key      []byte
	From, To int64
	TreeSize int64
	Root     []byte
}

// CTRanges reads the log's tree head (now, while the pipeline is built)
// and returns a PCollection<CTRange> of its entries from from to the
// head's size, in ranges of size entries (0: 65536, 256 tiles), the unit
// of work CTCheck spreads over the workers. Only Static CT logs: an RFC
// 6962 log's get-entries prove nothing about a range short of the tree's
// end, and pkbf-ct, which checks a whole log's entries against its tree
// head, scans those: an RFC 6962 log is an error that says so.
func CTRanges(ctx context.Context, s beam.Scope, log CTLog, from, size int64) (beam.PCollection, error) {
	s = s.Scope("pkbf.CTRanges")
	if size <= 0 {
		size = 1 << 16
	}
	l, err := openCTLog(ctx, log.Prefix, "", log.Key)
	if err != nil {
		return beam.PCollection{}, err
	}
	if l.Kind() != ct.Static {
		return beam.PCollection{}, fmt.Errorf("%s is an RFC 6962 log: its entries can be checked against its tree head only by a scan to the tree's end; scan it with pkbf-ct", log.Prefix)
	}
	head, err := l.Head(ctx)
	if err != nil {
		return beam.PCollection{}, err
	}
	var ranges []any
	for lo := from; lo < head.Size; lo += size {
		ranges = append(ranges, CTRange{Prefix: log.Prefix, Kind: string(l.Kind()), Key: log.Key, From: lo, To: min(lo+size, head.Size), TreeSize: head.Size, Root: head.Root})
	}
	if len(ranges) == 0 {
		return beam.CreateList(s, []CTRange{}), nil
	}
	return beam.Reshuffle(s, beam.Create(s, ranges...)), nil
}

// openCTLog opens the log at prefix, of kind ("": asked of the log).
func openCTLog(ctx context.Context, prefix string, kind ct.Kind, key []byte) (ct.Log, error) {
	opts := ct.Options{Kind: kind}
	if len(key) > 0 {
		k, err := x509.ParsePKIXPublicKey(key)
		if err != nil {
			return nil, fmt.Errorf("the key of %s: %w", prefix, err)
		}
		opts.Key = k
	}
	return ct.Open(ctx, prefix, opts)
}

var (
	ctEntries   = beam.NewCounter("pkbf", "ct_entries")
	ctHits      = beam.NewCounter("pkbf", "ct_hits")
	ctUnchecked = beam.NewCounter("pkbf", "ct_unchecked")
)

// CTCheck scans each range of ranges (from CTRanges) with pkbf-ct's
// scanner (package ct: tiles checked against the range's tree head, each
// key by keycheck's Checker.CheckKey) against the filter at filterPath, and returns a
// PCollection<string> of the hits' JSON lines, as pkbf-ct --json prints
// them. Entries read, hits and entries whose key could not be read are
// counted in ct_entries, ct_hits and ct_unchecked. A range that cannot be
// read fails its bundle, which the runner retries.
func CTCheck(s beam.Scope, filterPath string, ranges beam.PCollection) beam.PCollection {
	s = s.Scope("pkbf.CTCheck")
	return beam.ParDo(s, &ctCheckFn{FilterPath: filterPath}, ranges)
}

type ctCheckFn struct {
	FilterPath string
	filter     *pkbf.Filter
}

func (fn *ctCheckFn) Setup(ctx context.Context) error {
	f, err := workerFilter(ctx, fn.FilterPath)
	fn.filter = f
	return err
}

func (fn *ctCheckFn) ProcessElement(ctx context.Context, r CTRange, emit func(string)) error {
	l, err := openCTLog(ctx, r.Prefix, ct.Kind(r.Kind), r.Key)
	if err != nil {
		return err
	}
	head := ct.Head{Size: r.TreeSize, Root: r.Root, Verified: len(r.Key) > 0}
	var line []byte
	res, err := (&ct.Scan{Log: l, Filter: keycheck.New(fn.filter, keycheck.Options{}), Head: &head, From: r.From, To: r.To,
		Report: func(h ct.Hit) error {
			line = h.AppendJSON(line[:0])
			emit(string(line[:len(line)-1])) // textio adds the newline
			return nil
		},
		Unchecked: func(int64, error) { ctUnchecked.Inc(ctx, 1) },
	}).Run(ctx)
	ctEntries.Inc(ctx, res.Entries)
	ctHits.Inc(ctx, res.Hits)
	return err
}
