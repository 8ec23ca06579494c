// Package pkbfbeam runs pkbf on Apache Beam, for inputs past one machine:
// Check looks up every key of a set of files in a filter, spread over the
// workers of a cluster, and Build makes a filter from every key, each worker
// filling partial filters that a combine ORs into one (as pkbf merge does).
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
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/pkbf/pkbf/keys"
)

func init() {
	register.DoFn3x1[context.Context, fileio.ReadableFile, func(Key), error](&extractFn{})
	register.Emitter1[Key]()
	register.Emitter1[[]byte]()
	register.DoFn2x2[context.Context, Key, string, error](&checkFn{})
	register.Function2x0[Key, func([]byte)](keySPKI)
	register.Combiner3[*partial, []byte, []byte](&buildFn{})
	register.DoFn2x1[context.Context, []byte, error](&writeFilterFn{})
	beam.RegisterCoder(reflect.TypeOf((*partial)(nil)), encodePartial, decodePartial)
}

// Key is one key found in an input file, with where it was found, or
// the reason it could not be read.
type Key struct {
	File   string // the file's path
	Source string // where in the file: "line 3", "block 2 (line 40)"
	// The place of the key's object in the file, as keys.Key has it.
	Index, Line, Block int
	Offset             int64
	Part               string // inside a container: "certificate 2"
	SPKI               []byte // DER SubjectPublicKeyInfo, as the input has it
	// SSH keys: the ssh-keygen fingerprint and the comment.
	SSHFingerprint, Comment string
	// Err says why the key could not be read (it is invalid, encrypted or
	// of an unsupported algorithm), without the "pkbf: " of pkbf's errors;
	// SPKI is then nil.
	Err string
}

// Keys reads every file that matches glob (a pattern of any Beam file
// system; no match is an error) and returns a PCollection<Key> of their
// keys. A key that cannot be read (invalid, encrypted, of an unsupported
// algorithm) is a Key with Err set, counted in the metric keys_unreadable:
// Check reports it as pkbf check does, Build leaves it out. A file that
// cannot be read fails the pipeline.
func Keys(s beam.Scope, glob string) beam.PCollection {
	s = s.Scope("pkbf.Keys")
	files := fileio.ReadMatches(s, fileio.MatchFiles(s, glob, fileio.MatchEmptyDisallow()), fileio.ReadUncompressed())
	return beam.ParDo(s, &extractFn{}, files)
}

// extractFn scans one file for keys.
type extractFn struct{}

func (*extractFn) ProcessElement(ctx context.Context, file fileio.ReadableFile, emit func(Key)) error {
	r, err := file.Open(ctx)
	if err != nil {
		return fmt.Errorf("pkbf: %s: %w", file.Metadata.Path, err)
	}
	defer r.Close()
	sc := keys.NewScanner(r)
	for sc.Scan() {
		key := sc.Key()
		k := Key{File: file.Metadata.Path, Source: key.Source(), Index: key.Index, Line: key.Line, Block: key.Block, Offset: key.Offset, Part: key.Part}
		spki, err := key.SPKI()
		if err != nil {
			unreadableKeys.Inc(ctx, 1)
			k.Err = strings.TrimPrefix(err.Error(), "pkbf: ")
		} else {
			k.SPKI = spki
			k.SSHFingerprint, k.Comment = key.SSHFingerprint()
		}
		emit(k)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("pkbf: %s: %w", file.Metadata.Path, err)
	}
	return nil
}

var (
	unreadableKeys = beam.NewCounter("pkbf", "keys_unreadable")
	probableKeys   = beam.NewCounter("pkbf", "keys_probably")
	checkedKeys    = beam.NewCounter("pkbf", "keys_checked")
)

// Verdict is one line of Check's output, with the fields pkbf check --json
// gives every key.
type Verdict struct {
	Source         string `json:"source"`
	File           string `json:"file"`
	Line           int    `json:"line,omitempty"`
	Index          int    `json:"index"`
	Offset         int64  `json:"offset"`
	Block          int    `json:"block,omitempty"`
	Part           string `json:"part,omitempty"`
	SSHFingerprint string `json:"ssh_fingerprint,omitempty"`
	Comment        string `json:"comment,omitempty"`
	Fingerprint    string `json:"fingerprint,omitempty"`
	// The key's other fingerprint, where its encoding is not the canonical
	// one: of the bytes as given, or (explicit curve parameters) of the
	// key on its named curve.
	FingerprintAsGiven    string `json:"fingerprint_as_given,omitempty"`
	FingerprintNamedCurve string `json:"fingerprint_named_curve,omitempty"`
	Probably              *bool  `json:"probably,omitempty"` // absent for a key that could not be read
	Error                 string `json:"error,omitempty"`
}

// Check looks up every Key of keys in the filter at filterPath (a local
// path on every worker, or a path on a Beam file system) and returns a
// PCollection<string> of JSON lines, one Verdict each. Each key is looked
// up under every encoding a filter may hold it in, as pkbf check does. A
// key reported probably present is counted in the metric keys_probably.
func Check(s beam.Scope, filterPath string, keys beam.PCollection) beam.PCollection {
	s = s.Scope("pkbf.Check")
	return beam.ParDo(s, &checkFn{FilterPath: filterPath}, keys)
}

// checkFn looks keys up in a filter it gets from the worker's cache.
type checkFn struct {
	FilterPath string
	filter     *pkbf.Filter
}

func (fn *checkFn) Setup(ctx context.Context) error {
	f, err := workerFilter(ctx, fn.FilterPath)
	fn.filter = f
	return err
}

func (fn *checkFn) ProcessElement(ctx context.Context, k Key) (string, error) {
	v := Verdict{
		Source: k.File + ": " + k.Source, File: k.File, Line: k.Line, Index: k.Index, Offset: k.Offset, Block: k.Block, Part: k.Part,
		SSHFingerprint: k.SSHFingerprint, Comment: k.Comment, Error: k.Err,
	}
	if k.Err == "" {
		probably := fn.filter.Contains(k.SPKI)
		v.Probably = &probably
		setFingerprints(&v, k.SPKI)
		checkedKeys.Inc(ctx, 1)
		if probably {
			probableKeys.Inc(ctx, 1)
		}
	}
	line, err := json.Marshal(v)
	return string(line), err
}

// setFingerprints sets the fingerprints pkbf check reports: that of the
// canonical SPKI, and of the bytes as given where they differ; but for an
// EC key with explicit curve parameters, openssl and pwnedkeys fingerprint
// the bytes as given, and the named curve's comes second.
func setFingerprints(v *Verdict, spki []byte) {
	canonical, err := keys.Canonical(spki)
	switch {
	case err != nil || bytes.Equal(canonical, spki):
		v.Fingerprint = pkbf.Fingerprint(spki)
	case keys.ExplicitCurve(spki):
		v.Fingerprint, v.FingerprintNamedCurve = pkbf.Fingerprint(spki), pkbf.Fingerprint(canonical)
	default:
		v.Fingerprint, v.FingerprintAsGiven = pkbf.Fingerprint(canonical), pkbf.Fingerprint(spki)
	}
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
		return "", fmt.Errorf("pkbf: copying the filter %s to this worker: %w", path, err)
	}
	return tmp.Name(), tmp.Close()
}

// Build makes a filter with the given hash count and length from every
// Key of keys, under every encoding pkbf add adds (an EC key under both
// point forms), and writes it to out (a path on any Beam file system).
// Each worker adds its bundles' keys to partial filters; a combine ORs them
// into one (pkbf.Filter.Union). The result has the bits pkbf create and
// pkbf add give the same keys. Its entry count is the sum of the partial
// filters' counts, so a key in two bundles is counted twice; pkbf info
// --scan estimates the distinct keys.
//
// Partial filters travel between workers whole: each costs the filter's
// size (2^L/8 bytes) in memory and on the wire, once per bundle that
// combines into it.
func Build(s beam.Scope, hashCount, hashLength int, out string, keys beam.PCollection) {
	s = s.Scope("pkbf.Build")
	spkis := beam.ParDo(s, keySPKI, keys)
	filter := beam.Combine(s, &buildFn{HashCount: hashCount, HashLength: hashLength}, spkis)
	beam.ParDo0(s, &writeFilterFn{Path: out}, filter)
}

// keySPKI passes on the SPKIs of the keys that could be read.
func keySPKI(k Key, emit func([]byte)) {
	if k.Err == "" {
		emit(k.SPKI)
	}
}

// partial is a combine's accumulator: a filter in memory.
type partial struct{ f *pkbf.Filter }

// buildFn combines SPKIs into a filter.
type buildFn struct {
	HashCount, HashLength int
}

func (fn *buildFn) CreateAccumulator() (*partial, error) {
	f, err := pkbf.New(fn.HashCount, fn.HashLength)
	return &partial{f}, err
}

func (fn *buildFn) AddInput(p *partial, spki []byte) (*partial, error) {
	encodings, err := keys.Encodings(spki)
	if err != nil {
		return nil, err
	}
	for _, e := range encodings {
		p.f.Add(e)
	}
	return p, nil
}

func (fn *buildFn) MergeAccumulators(a, b *partial) (*partial, error) {
	return a, a.f.Union(b.f)
}

func (fn *buildFn) ExtractOutput(p *partial) ([]byte, error) { return encodePartial(p) }

// encodePartial and decodePartial carry a partial filter between workers
// as a pkbfv1 file.
func encodePartial(p *partial) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(int(p.f.Header().FileSize()))
	_, err := p.f.WriteTo(&b)
	return b.Bytes(), err
}

func decodePartial(b []byte) (*partial, error) {
	g, err := pkbf.Parse(b)
	if err != nil {
		return nil, err
	}
	h := g.Header()
	f, err := pkbf.New(int(h.HashCount), int(h.HashLength))
	if err != nil {
		return nil, err
	}
	return &partial{f}, f.Union(g)
}

// writeFilterFn writes the finished filter: a local path atomically
// (pkbf's WriteFile), another file system through Beam's.
type writeFilterFn struct{ Path string }

func (fn *writeFilterFn) ProcessElement(ctx context.Context, b []byte) error {
	f, err := pkbf.Parse(b)
	if err != nil {
		return err
	}
	if !strings.Contains(fn.Path, "://") {
		return writeLocal(f, fn.Path)
	}
	fsys, err := filesystem.New(ctx, fn.Path)
	if err != nil {
		return err
	}
	defer fsys.Close()
	return filesystem.Write(ctx, fsys, fn.Path, b)
}

// writeLocal writes f to path: a copy made writable, so that WriteFile's
// atomic replacement can be used.
func writeLocal(f *pkbf.Filter, path string) error {
	h := f.Header()
	g, err := pkbf.New(int(h.HashCount), int(h.HashLength))
	if err != nil {
		return err
	}
	if err := g.Union(f); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return g.WriteFile(path)
}

// WriteLines writes a PCollection<string> to one text file, a line each.
func WriteLines(s beam.Scope, path string, lines beam.PCollection) {
	textio.Write(s, path, lines)
}
