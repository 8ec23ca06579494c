package pkbf

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"runtime"
	"sync"
	"unsafe"

	"github.com/pkbf/pkbf/internal/fingerprint"
	"github.com/pkbf/pkbf/internal/lookup"
	"github.com/pkbf/pkbf/internal/pipeline"
	"github.com/pkbf/pkbf/keys"
)

// Input is one stream of keys for [Filter.Check] and [Writable.AddKeys]:
// a file, standard input, a request's body. It may hold keys in any form
// a [keys.Scanner] reads.
type Input struct {
	// Name is how verdicts name the input: a path, "<stdin>", "request".
	Name string
	// Open opens the input; it is called once, when the input's turn
	// comes, and what it returns is closed when the input is done. An
	// error is the input's verdict.
	Open func() (io.ReadCloser, error)
}

// Files returns the inputs of the files named, in order: "-" is standard
// input (named "<stdin>"), and a directory stands for every regular file
// under it, in lexical order, as grep -r reads one (links inside it are
// not followed; an unreadable subdirectory is an input whose Open fails).
func Files(names ...string) iter.Seq[Input] {
	return func(yield func(Input) bool) {
		for in := range pipeline.Files(names...) {
			if !yield(Input(in)) {
				return
			}
		}
	}
}

// Bytes returns one input, named name, holding b: a request's body, a
// certificate or a file already in memory. b must not change until the
// check is done.
func Bytes(name string, b []byte) iter.Seq[Input] {
	return func(yield func(Input) bool) {
		yield(Input{Name: name, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }})
	}
}

// CheckOptions adjust [Filter.Check] and [Writable.AddKeys]. The zero
// value is ready to use.
type CheckOptions struct {
	// Passphrases are tried, after the empty one, on encrypted PKCS#12
	// files (keys.Scanner.SetPassphrases).
	Passphrases []string
	// Workers is how many goroutines decode and look up keys: 0 means
	// GOMAXPROCS, and with Confirm at least 8, as they wait on the
	// network. With 1, all the work runs in the caller's goroutine, with
	// no other: for short inputs, or a caller already running checks in
	// parallel (a server, one per request).
	Workers int
	// Confirm, if set, is asked about every key the filter probably
	// holds, with the key's canonical SPKI ([keys.Canonical]), from the
	// workers: pwned when it verified that the key is compromised, an
	// error when it has no usable answer. Verdicts then carry Pwned and
	// ConfirmErr, and a Status of "compromised", "false-positive" or
	// "unconfirmed" for those keys. A pwnedkeys.Checker's Confirm fits,
	// and bounds the requests in flight.
	Confirm func(ctx context.Context, canonical []byte) (pwned bool, err error)
	// Idle, if set, is called between verdicts whenever every key read so
	// far has had its verdict: the input is slower than the lookups (a
	// pipe, a terminal), so a caller that buffers its output should flush
	// it. It runs in the caller's goroutine.
	Idle func()
	// FingerprintHitsOnly leaves Fingerprint, OtherFingerprint and
	// OtherLabel empty in Check's verdicts of keys the filter does not
	// hold, saving a SHA-256 a key: for a scan that reports only hits (a
	// CT log's entries, by the million). AddKeys ignores it.
	FingerprintHitsOnly bool
}

// Check reads every key of the inputs and yields one verdict per key, in
// input order: whether the filter probably holds it under any encoding it
// may hold it in (the answer [Filter.Contains] gives), its fingerprints
// and where it was found; or the error that kept the key, or its input,
// from being checked.
//
// It is the fast way to check many keys: each key is parsed once for all
// its encodings, all of them are looked up in batches, so that the memory
// latencies of many keys overlap ([Filter.ProbablyBatch]), and this runs
// on CheckOptions.Workers goroutines while the inputs are read. Verdicts
// come out as soon as they are made: a key read from an input that makes
// the reader wait (a pipe, a terminal) is not held back for more. Memory
// stays bounded, a few batches of keys whatever the inputs' size; a
// verdict's strings may be kept, nothing else is held for it.
//
// Cancelling ctx, or leaving the loop early, stops Check between two
// keys; it returns once the workers have let go of the filter, and a
// read in progress finishes in the background, its input then closed.
// A verdict whose Err wraps [ErrFileChanged] is the last one: the filter's
// file was cut short or overwritten while in use.
func (f *Filter) Check(ctx context.Context, inputs iter.Seq[Input], opts CheckOptions) iter.Seq[Verdict] {
	return (&run{ctx: ctx, opts: opts, batch: f.ProbablyBatch, decode: decodeForLookup, work: (*run).lookup}).all(inputs)
}

// Check is [Filter.Check] on the filter being written; it is safe to call
// while keys are added, and sees every key whose Add has returned.
func (w *Writable) Check(ctx context.Context, inputs iter.Seq[Input], opts CheckOptions) iter.Seq[Verdict] {
	return (&run{ctx: ctx, opts: opts, batch: w.ProbablyBatch, decode: decodeForLookup, work: (*run).lookup}).all(inputs)
}

// AddKeys adds every key of the inputs to the filter, under every
// encoding a filter may hold it in, as [Writable.AddKey] does, and yields
// one verdict per key, in input order, with Added set to how many of its
// encodings were new, Probably true and its fingerprints; or the error
// that kept the key, or its input, from being added. Keys are decoded on
// CheckOptions.Workers goroutines and added in input order (Confirm is
// not used). An error from the filter's file ([Writable.Add]) ends it:
// the last verdict carries it. Cancelling ctx or leaving the loop stops
// it between two keys, as for [Filter.Check]; the keys before stay added.
func (w *Writable) AddKeys(ctx context.Context, inputs iter.Seq[Input], opts CheckOptions) iter.Seq[Verdict] {
	opts.Confirm = nil
	opts.FingerprintHitsOnly = false // every key added has its fingerprints
	r := &run{ctx: ctx, opts: opts, decode: decodeForAdd, work: (*run).fingerprints}
	r.finish = func(s *slot) error {
		added, err := w.addEncodings(s.encodings)
		s.Added, s.Probably = added, err == nil
		return err
	}
	return r.all(inputs)
}

// A slot is one key on its way through a run: the verdict being made, and
// what is needed to make it.
type slot struct {
	Verdict
	key       keys.Key // with its Raw, until decoded
	spki      []byte   // as the input has it
	canonical []byte   // OpenSSL's encoding: spki itself when the same
	other     []byte   // an EC key's other point form, or nil
	encodings [][]byte // AddKeys: every encoding to add
}

// batch is a run of slots from one input, worked on by one worker
// (internal/pipeline).
type batch = pipeline.Batch[slot]

const (
	// formsRoom is the room a key has for the encodings keys.Forms
	// builds: a PEM block's SPKI (an RSA-4096 key's is 550 bytes) and an
	// EC point's other form on the largest named curves (a P-521
	// uncompressed SPKI is 158 bytes); it allocates what does not fit.
	formsRoom = 640
	// lookupChunk is how many encodings are looked up between two looks
	// at the context (an EC key on an explicit curve costs a square root
	// to decode).
	lookupChunk = 64
)

// inlineBatches keeps the batches of finished inline runs.
var inlineBatches pipeline.Pool[slot]

// run is one Check or AddKeys.
type run struct {
	ctx    context.Context
	opts   CheckOptions
	batch  func([][]byte, []bool) // the filter's ProbablyBatch, for lookup
	decode func(*slot, []byte)    // in the workers: read the key's encodings
	work   func(*run, *batch)     // in the workers, after decode
	finish func(*slot) error      // in the caller's goroutine, in order, or nil
}

// all yields the verdicts of every key of the inputs.
func (r *run) all(inputs iter.Seq[Input]) iter.Seq[Verdict] {
	return func(yield func(Verdict) bool) {
		ctx, cancel := context.WithCancel(r.ctx)
		defer cancel()
		r := *r // each iteration has its own context
		r.ctx = ctx
		workers := r.opts.Workers
		if workers <= 0 {
			workers = runtime.GOMAXPROCS(0)
			if r.opts.Confirm != nil {
				workers = max(workers, 8)
			}
		}
		ins := func(yield func(pipeline.Input) bool) {
			for in := range inputs {
				if !yield(pipeline.Input(in)) {
					return
				}
			}
		}
		pipeline.Run(ctx, ins, &pipeline.Config[slot]{
			Workers:     workers,
			Passphrases: r.opts.Passphrases,
			Idle:        r.opts.Idle,
			Room:        formsRoom,
			Slot:        newSlot,
			Work:        r.guard,
			Emit:        func(b *batch) bool { return r.emit(b, yield) },
			Pool:        &inlineBatches,
		})
	}
}

// newSlot makes the slot of a key found in input, or of the error that
// kept the input from being read.
func newSlot(input string, k keys.Key, err error) slot {
	if err != nil {
		return slot{Verdict: Verdict{Input: input, Err: err}}
	}
	return slot{Verdict: Verdict{Input: input, Index: k.Index, Line: k.Line, Block: k.Block, Offset: k.Offset, Part: k.Part}, key: k}
}

// guard works on b, turning a fault in the filter's file (cut short while
// mapped: a panic with an ErrFileChanged error) into b's failure.
func (r *run) guard(b *batch) {
	defer func() {
		if rec := recover(); rec != nil {
			if err, ok := rec.(error); ok && errors.Is(err, ErrFileChanged) {
				b.Failed = err
				return
			}
			panic(rec)
		}
	}()
	for i := range b.Slots {
		if s := &b.Slots[i]; s.Err == nil {
			r.decode(s, b.Room[i*formsRoom:i*formsRoom:(i+1)*formsRoom])
		}
	}
	r.work(r, b)
	for i := range b.Slots {
		b.Slots[i].key.Raw = nil // done with it
	}
}

// emit finishes and yields b's verdicts in order; it reports false when
// the run must stop.
func (r *run) emit(b *batch, yield func(Verdict) bool) bool {
	if b.Aborted {
		return false
	}
	if b.Failed != nil {
		yield(Verdict{Input: b.Slots[0].Input, Err: b.Failed})
		return false
	}
	for i := range b.Slots {
		s := &b.Slots[i]
		if r.finish != nil && s.Err == nil {
			if err := r.finish(s); err != nil {
				s.Err = err
				yield(s.Verdict)
				return false
			}
		}
		if !yield(s.Verdict) {
			return false
		}
	}
	return true
}

// decodeForLookup reads s's key and, in the same parse, the other
// encodings a filter may hold it under (keys.Key.Forms, building them in
// dst's spare capacity). A key whose SPKI is read but cannot be
// re-encoded is looked up as given only.
func decodeForLookup(s *slot, dst []byte) {
	s.spki, s.canonical, s.other, s.Err = s.key.Forms(dst)
	if s.spki == nil {
		return
	}
	if s.Err != nil {
		s.canonical, s.other, s.Err = s.spki, nil, nil
	}
	s.SSHFingerprint, s.Comment = s.key.SSHFingerprint()
}

// decodeForAdd reads s's key and every encoding AddKey adds.
func decodeForAdd(s *slot, _ []byte) {
	if s.spki, s.Err = s.key.SPKI(); s.Err != nil {
		return
	}
	if s.encodings, s.Err = keys.Encodings(s.spki); s.Err != nil {
		return
	}
	s.canonical = s.encodings[0]
	s.SSHFingerprint, s.Comment = s.key.SSHFingerprint()
}

// lookupScratch is what lookup needs only while it runs, kept from one
// batch to the next.
type lookupScratch struct {
	encodings [][]byte
	owners    []int
	found     []bool
}

var lookupScratchPool = sync.Pool{New: func() any { return new(lookupScratch) }}

// lookup looks up every encoding of b's keys together (ProbablyBatch), in
// chunks between which it looks at the context; a key is probably in the
// filter if any of its encodings is. Then it makes the fingerprints and,
// with Confirm, asks about the keys found.
func (r *run) lookup(b *batch) {
	sc := lookupScratchPool.Get().(*lookupScratch)
	defer func() {
		clear(sc.encodings)
		lookupScratchPool.Put(sc)
	}()
	encodings, owners := sc.encodings[:0], sc.owners[:0]
	for i := range b.Slots {
		if s := &b.Slots[i]; s.Err == nil {
			e, n := lookup.Encodings(s.spki, s.canonical, s.other)
			for _, enc := range e[:n] {
				encodings, owners = append(encodings, enc), append(owners, i)
			}
		}
	}
	sc.encodings, sc.owners = encodings, owners
	found := append(sc.found[:0], make([]bool, len(encodings))...)
	sc.found = found
	for i := 0; i < len(encodings); i += lookupChunk {
		if r.ctx.Err() != nil {
			b.Aborted = true
			return
		}
		end := min(i+lookupChunk, len(encodings))
		r.batch(encodings[i:end], found[i:end])
	}
	for j, i := range owners {
		b.Slots[i].Probably = b.Slots[i].Probably || found[j]
	}
	r.fingerprints(b)
	if r.opts.Confirm == nil {
		return
	}
	for i := range b.Slots {
		s := &b.Slots[i]
		s.confirmed = true
		if s.Err == nil && s.Probably {
			if r.ctx.Err() != nil {
				b.Aborted = true
				return
			}
			s.Pwned, s.ConfirmErr = r.opts.Confirm(r.ctx, s.canonical)
		}
	}
}

// fingerprints sets the fingerprints of b's keys, all in one string: one
// allocation a batch, which a verdict kept keeps alive.
func (r *run) fingerprints(b *batch) {
	hitsOnly := r.opts.FingerprintHitsOnly
	var buf []byte
	if !hitsOnly {
		buf = make([]byte, 0, 2*fingerprint.Size*len(b.Slots))
	}
	type span struct{ fp, other int }
	spans := make([]span, len(b.Slots))
	for i := range b.Slots {
		s := &b.Slots[i]
		if s.Err != nil || (hitsOnly && !s.Probably) {
			spans[i].fp = -1
			continue
		}
		spans[i].fp, spans[i].other = len(buf), -1
		var label string
		if buf, label = lookup.AppendFingerprints(buf, s.spki, s.canonical); label != "" {
			spans[i].other = spans[i].fp + fingerprint.Size
			s.OtherLabel = label
		}
	}
	if len(buf) == 0 {
		return
	}
	all := unsafe.String(unsafe.SliceData(buf), len(buf)) // buf is not written again
	for i := range b.Slots {
		if s := &b.Slots[i]; spans[i].fp >= 0 {
			s.Fingerprint = all[spans[i].fp : spans[i].fp+fingerprint.Size]
			if o := spans[i].other; o >= 0 {
				s.OtherFingerprint = all[o : o+fingerprint.Size]
			}
		}
	}
}
