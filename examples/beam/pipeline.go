// Package pkbfbeam runs pkbf on Apache Beam, for inputs past one machine:
// Check looks up every key of a set of files in a filter, spread over the
// workers of a cluster, and Build makes a filter from every key, each worker
// filling partial filters that a combine ORs into one (as pkbf merge does).
// Both are thin clients of pkbf's library: Check is keycheck's
// Checker.Check on each file, writing its verdicts' JSON; Build is
// keycheck.AddKeys.
//
// Both read their inputs with pkbf's key scanner, so they take every form
// pkbf check and pkbf add take: PEM and DER keys, certificates and requests,
// bundles, authorized_keys and known_hosts files, OpenSSH, RFC 4716 and
// PuTTY keys. Check's verdicts are pkbf check's; Build's filter has the bits
// pkbf create and pkbf add give the same keys.
//
// The filter Check reads is opened once per worker process, not per
// element or bundle: a local path is mapped into memory as pkbf.Open maps
// it (shared by every bundle the process runs), and a path on another
// Beam file system (gs://, s3://) is first copied to the worker's
// temporary folder, once.
package pkbfbeam

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/fileio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local" // local paths; beamx registers the others
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
)

func init() {
	register.DoFn3x1[context.Context, fileio.ReadableFile, func(string), error](&checkFn{})
	register.Emitter1[string]()
	register.Combiner3[*partial, fileio.ReadableFile, []byte](&buildFn{})
	register.DoFn2x1[context.Context, []byte, error](&writeFilterFn{})
	beam.RegisterCoder(reflect.TypeOf((*partial)(nil)), encodePartial, decodePartial)
}

// Files returns a PCollection<fileio.ReadableFile> of the files that match
// glob (a pattern of any Beam file system; no match is an error): the
// input of Check and Build, which read every key in them with pkbf's key
// scanner, in every form pkbf check and pkbf add take.
func Files(s beam.Scope, glob string) beam.PCollection {
	s = s.Scope("pkbf.Files")
	return fileio.ReadMatches(s, fileio.MatchFiles(s, glob, fileio.MatchEmptyDisallow()), fileio.ReadUncompressed())
}

// input is a Beam file as an input of pkbf's Check and AddKeys.
func input(ctx context.Context, file fileio.ReadableFile) iter.Seq[keycheck.Input] {
	return func(yield func(keycheck.Input) bool) {
		yield(keycheck.Input{Name: file.Metadata.Path, Open: func() (io.ReadCloser, error) { return file.Open(ctx) }})
	}
}

var (
	unreadableKeys = beam.NewCounter("pkbf", "keys_unreadable")
	probableKeys   = beam.NewCounter("pkbf", "keys_probably")
	checkedKeys    = beam.NewCounter("pkbf", "keys_checked")
)

// Check looks up every key of files (from Files) in the filter at
// filterPath (a local path on every worker, or a path on a Beam file
// system) with keycheck's Checker.Check, and returns a PCollection<string> of
// its JSON verdict lines, the lines pkbf check --json writes, one a key.
// Keys probably present, keys checked and objects that could not be read
// are counted in the metrics keys_probably, keys_checked and
// keys_unreadable. A file that cannot be read fails the pipeline.
func Check(s beam.Scope, filterPath string, files beam.PCollection) beam.PCollection {
	s = s.Scope("pkbf.Check")
	return beam.ParDo(s, &checkFn{FilterPath: filterPath}, files)
}

// checkFn checks the keys of a file in a filter it gets from the worker's
// cache.
type checkFn struct {
	FilterPath string
	filter     *pkbf.Filter
}

func (fn *checkFn) Setup(ctx context.Context) error {
	f, err := workerFilter(ctx, fn.FilterPath)
	fn.filter = f
	return err
}

func (fn *checkFn) ProcessElement(ctx context.Context, file fileio.ReadableFile, emit func(string)) error {
	var line []byte
	// One goroutine an element: the runner runs elements in parallel.
	for v := range keycheck.New(fn.filter, keycheck.Options{Workers: 1}).Check(ctx, input(ctx, file)) {
		switch {
		case v.Err != nil && v.Source.Index == 0: // the file, or the filter, failed
			return v.Err
		case v.Err != nil:
			unreadableKeys.Inc(ctx, 1)
		default:
			checkedKeys.Inc(ctx, 1)
			if v.Probably {
				probableKeys.Inc(ctx, 1)
			}
		}
		line = v.AppendJSON(line[:0])
		emit(string(line[:len(line)-1])) // textio adds the newline
	}
	return ctx.Err()
}

// The filters of this worker process, by path: each opened (or copied
// and opened) once, and kept for the life of the process, which may run
// many bundles and DoFn instances.
var (
	filtersMu sync.Mutex
	filters   = map[string]*pkbf.Filter{}
)

func workerFilter(ctx context.Context, path string) (*pkbf.Filter, error) {
	filtersMu.Lock()
	defer filtersMu.Unlock()
	if f := filters[path]; f != nil {
		return f, nil
	}
	local := path
	if strings.Contains(path, "://") {
		var err error
		if local, err = fetchFilter(ctx, path); err != nil {
			return nil, err
		}
	}
	f, err := pkbf.Open(local)
	if err != nil {
		return nil, err
	}
	filters[path] = f
	return f, nil
}

// fetchFilter copies a filter from a Beam file system to the worker's
// temporary folder, streaming, and returns the local path.
func fetchFilter(ctx context.Context, path string) (string, error) {
	fsys, err := filesystem.New(ctx, path)
	if err != nil {
		return "", err
	}
	defer fsys.Close()
	r, err := fsys.OpenRead(ctx, path)
	if err != nil {
		return "", err
	}
	defer r.Close()
	tmp, err := os.CreateTemp("", "pkbf-filter-*")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fmt.Errorf("copying the filter %s to this worker: %w", path, err)
	}
	return tmp.Name(), tmp.Close()
}

// Build makes a filter with the given hash count and length from every
// key of files (from Files), under every encoding pkbf add adds
// (keycheck.AddKeys: an EC key under both point forms), and writes it to
// out (a path on any Beam file system). Each worker adds its bundles'
// files to partial filters; a combine ORs them into one
// (pkbf.Writable.Union). The result has the bits pkbf create and pkbf add
// give the same keys. Its entry count is the sum of the partial filters'
// counts, so a key in two bundles is counted twice; pkbf info --scan
// estimates the distinct keys. Objects that are not keys are left out; a
// file that cannot be read fails the pipeline.
//
// Partial filters travel between workers whole: each costs the filter's
// size (2^L/8 bytes) in memory and on the wire, once per bundle that
// combines into it.
func Build(s beam.Scope, hashCount, hashLength int, out string, files beam.PCollection) {
	s = s.Scope("pkbf.Build")
	filter := beam.Combine(s, &buildFn{HashCount: hashCount, HashLength: hashLength}, files)
	beam.ParDo0(s, &writeFilterFn{Path: out}, filter)
}

// partial is a combine's accumulator: a filter in memory.
type partial struct{ w *pkbf.Writable }

// buildFn combines files of keys into a filter.
type buildFn struct {
	HashCount, HashLength int
}

func (fn *buildFn) CreateAccumulator() (*partial, error) {
	w, err := pkbf.New(fn.HashCount, fn.HashLength)
	return &partial{w}, err
}

func (fn *buildFn) AddInput(p *partial, file fileio.ReadableFile) (*partial, error) {
	ctx := context.Background()
	for v := range keycheck.AddKeys(ctx, p.w, input(ctx, file), keycheck.Options{Workers: 1}) {
		if v.Err != nil && v.Source.Index == 0 { // the file could not be read
			return nil, v.Err
		}
	}
	return p, nil
}

// MergeAccumulators adds b's bits to a's: Union reads a read-only
// filter, so b goes through its encoding, one copy of its data.
func (fn *buildFn) MergeAccumulators(a, b *partial) (*partial, error) {
	enc, err := encodePartial(b)
	if err != nil {
		return nil, err
	}
	g, err := pkbf.Parse(enc)
	if err != nil {
		return nil, err
	}
	return a, a.w.Union(g)
}

func (fn *buildFn) ExtractOutput(p *partial) ([]byte, error) { return encodePartial(p) }

// encodePartial and decodePartial carry a partial filter between workers
// as a pkbfv1 file.
func encodePartial(p *partial) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(int(p.w.Header().FileSize()))
	_, err := p.w.WriteTo(&b)
	return b.Bytes(), err
}

func decodePartial(b []byte) (*partial, error) {
	g, err := pkbf.Parse(b)
	if err != nil {
		return nil, err
	}
	h := g.Header()
	w, err := pkbf.New(int(h.HashCount), int(h.HashLength))
	if err != nil {
		return nil, err
	}
	return &partial{w}, w.Union(g)
}

// writeFilterFn writes the finished filter: a local path atomically
// (pkbf's WriteFile), another file system through Beam's.
type writeFilterFn struct{ Path string }

func (fn *writeFilterFn) ProcessElement(ctx context.Context, b []byte) error {
	if strings.Contains(fn.Path, "://") {
		fsys, err := filesystem.New(ctx, fn.Path)
		if err != nil {
			return err
		}
		defer fsys.Close()
		return filesystem.Write(ctx, fsys, fn.Path, b)
	}
	f, err := pkbf.Parse(b)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(fn.Path), 0o755); err != nil {
		return err
	}
	return f.WriteFile(fn.Path)
}

// WriteLines writes a PCollection<string> to one text file, a line each.
func WriteLines(s beam.Scope, path string, lines beam.PCollection) {
	textio.Write(s, path, lines)
}
