package keycheck

import (
	"context"
	"iter"
	"runtime"
	"sync"
	"unsafe"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keys"
)

// Check reads every key of the inputs and yields one verdict per key, in
// input order: whether the filter probably holds it under any encoding it
// may hold it in (the answer [Checker.Contains] gives), with Options.Weak
// the weak-key checks' findings, its fingerprints and where it was found;
// or the error that kept the key, or its input, from being checked.
//
// It is the fast way to check many keys: each key is parsed once for all
// its encodings, all of them are looked up in batches, so that the memory
// latencies of many keys overlap ([pkbf.Filter.ProbablyBatch]), and this
// runs on Options.Workers goroutines while the inputs are read. Verdicts
// come out as soon as they are made: a key read from an input that makes
// the reader wait (a pipe, a terminal) is not held back for more. Memory
// stays bounded, a few batches of keys whatever the inputs' size; a
// verdict's strings may be kept, nothing else is held for it.
//
// Cancelling ctx, or leaving the loop early, stops Check between two
// keys; it returns once the workers have let go of the filter, and a
// read in progress finishes in the background, its input then closed.
// A verdict whose Err wraps [pkbf.ErrFileChanged] is the last one: the
// filter's file was cut short or overwritten while in use.
func (c *Checker) Check(ctx context.Context, inputs iter.Seq[Input]) iter.Seq[Verdict] {
	return func(yield func(Verdict) bool) {
		r := run{q: c.q, opts: c.opts}
		checks := c.checks()
		r.all(ctx, inputs, func(v Verdict, _ int) bool {
			v.checks = checks
			return yield(v)
		})
	}
}

// AddKeys adds every key of the inputs to w, under every encoding a
// filter may hold it in, as [AddKey] does, and yields one verdict per key,
// in input order, with how many of its encodings were new: Probably true
// and its fingerprints; or the error that kept the key, or its input,
// from being added. Keys are decoded on opts.Workers goroutines and added
// in input order (opts.Confirm is not used). An error from w's file
// ([pkbf.Writable.Add]) ends it: the last verdict carries it. Cancelling
// ctx or leaving the loop stops it between two keys, as for
// [Checker.Check]; the keys before stay added.
func AddKeys(ctx context.Context, w *pkbf.Writable, inputs iter.Seq[Input], opts Options) iter.Seq2[Verdict, int] {
	opts.Confirm = nil
	opts.FingerprintHitsOnly = false // every key added has its fingerprints
	return func(yield func(Verdict, int) bool) {
		r := run{w: w, opts: opts}
		r.all(ctx, inputs, yield)
	}
}

// A slot is one key on its way through a run: the verdict being made, and
// what is needed to make it.
type slot struct {
	Verdict
	key       keys.Key // with its Raw, until decoded
	spki      []byte   // as the input has it
	modulus   []byte   // a bare RSA modulus, which has no spki
	canonical []byte   // OpenSSL's encoding: spki itself when the same
	other     []byte   // an EC key's other point form, or nil
	encodings [][]byte // AddKeys: every encoding to add
	added     int      // AddKeys: the encodings new to the filter
	// formsErr says why a key is looked up as given only: not found so,
	// it has no answer, and this is its error.
	formsErr error
}

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

// run is one Check (q set) or AddKeys (w set).
type run struct {
	ctx  context.Context
	q    Querier
	w    *pkbf.Writable
	opts Options
}

// all yields the verdicts of every key of the inputs, with the encodings
// AddKeys added.
func (r *run) all(ctx context.Context, inputs iter.Seq[Input], yield func(Verdict, int) bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.ctx = ctx
	workers := r.opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
		if r.opts.Confirm != nil {
			workers = max(workers, 8)
		}
	}
	if workers == 1 {
		r.inline(inputs, yield)
		return
	}
	r.parallel(workers, inputs, yield)
}

// newSlot makes the slot of a key found in input, or of the error that
// kept the input, or its rest, from being read.
func newSlot(input string, k keys.Key, err error) slot {
	if err != nil {
		return slot{Verdict: Verdict{Source: Source{Input: input}, Err: err}}
	}
	return slot{Verdict: Verdict{Source: Source{Input: input, Index: k.Index, Line: k.Line, Block: k.Block, Offset: k.Offset, Part: k.Part}}, key: k}
}

// work decodes b's keys and looks them up (Check) or fingerprints them
// (AddKeys), in a worker; a fault in the filter's file (cut short while
// mapped: a panic with a pkbf.ErrFileChanged error) is b's failure.
func (r *run) work(b *batch) {
	defer recoverFileChanged(&b.failed)
	for i := range b.slots {
		if s := &b.slots[i]; s.Err == nil {
			dst := b.room[i*formsRoom : i*formsRoom : (i+1)*formsRoom]
			if r.w != nil {
				s.decodeForAdd()
			} else {
				s.decodeForLookup(dst)
			}
		}
	}
	if r.w != nil {
		r.fingerprints(b)
	} else {
		r.lookup(b)
	}
	for i := range b.slots {
		b.slots[i].key.Raw = nil // done with it
	}
}

// emit finishes and yields b's verdicts in order, in the caller's
// goroutine (AddKeys adds each key here); it reports false when the run
// must stop.
func (r *run) emit(b *batch, yield func(Verdict, int) bool) bool {
	if b.aborted {
		return false
	}
	if b.failed != nil {
		yield(Verdict{Source: Source{Input: b.slots[0].Source.Input}, Err: b.failed}, 0)
		return false
	}
	for i := range b.slots {
		s := &b.slots[i]
		if r.w != nil && s.Err == nil {
			added, err := addEncodings(r.w, s.encodings)
			s.added, s.Probably = added, err == nil
			if err != nil {
				s.Err = err
				yield(s.Verdict, s.added)
				return false
			}
		}
		if !yield(s.Verdict, s.added) {
			return false
		}
	}
	return true
}

// decodeForLookup reads s's key and, in the same parse, the other
// encodings a filter may hold it under (keys.Key.Forms, building them in
// dst's spare capacity). A key whose SPKI is read but cannot be
// re-encoded is looked up as given only, and gets that error if the
// filter lacks those bytes, as CheckKey gives it; a bare modulus is kept
// for the weak-key checks.
func (s *slot) decodeForLookup(dst []byte) {
	if n, ok := s.key.Modulus(); ok {
		s.modulus = n
		return
	}
	s.spki, s.canonical, s.other, s.Err = s.key.Forms(dst)
	if s.spki == nil {
		return
	}
	if s.Err != nil {
		s.canonical, s.other, s.formsErr, s.Err = s.spki, nil, s.Err, nil
	}
	s.Key.SSHFingerprint, s.Key.Comment = s.key.SSHFingerprint()
}

// decodeForAdd reads s's key and every encoding AddKey adds.
func (s *slot) decodeForAdd() {
	if s.spki, s.Err = s.key.SPKI(); s.Err != nil {
		return
	}
	if s.encodings, s.Err = keys.Encodings(s.spki); s.Err != nil {
		return
	}
	s.canonical = s.encodings[0]
	s.Key.SSHFingerprint, s.Key.Comment = s.key.SSHFingerprint()
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
// filter if any of its encodings is. Then it makes the weak-key checks,
// the fingerprints and, with Confirm, asks about the keys found.
func (r *run) lookup(b *batch) {
	if r.q != nil && !r.lookupFilter(b) {
		b.aborted = true
		return
	}
	c := Checker{q: r.q, opts: r.opts}
	for i := range b.slots {
		if s := &b.slots[i]; s.modulus != nil {
			c.checkModulus(&s.Verdict, s.modulus, s.key.SPKI)
		} else if s.Err == nil && s.spki != nil {
			c.checkWeak(&s.Verdict, s.spki)
		}
	}
	r.fingerprints(b)
	if r.opts.Confirm == nil {
		return
	}
	for i := range b.slots {
		s := &b.slots[i]
		s.confirming = true
		if s.Err == nil && s.Probably {
			if r.ctx.Err() != nil {
				b.aborted = true
				return
			}
			s.Confirmation.Pwned, s.Confirmation.Err = r.opts.Confirm(r.ctx, s.canonical)
		}
	}
}

// lookupFilter looks up b's keys in the filter; it reports false when the
// context ended first.
func (r *run) lookupFilter(b *batch) bool {
	sc := lookupScratchPool.Get().(*lookupScratch)
	defer func() {
		clear(sc.encodings)
		lookupScratchPool.Put(sc)
	}()
	encs, owners := sc.encodings[:0], sc.owners[:0]
	var e [3][]byte
	for i := range b.slots {
		if s := &b.slots[i]; s.Err == nil && s.spki != nil {
			s.lookedUp = true
			n := encodings(&e, s.spki, s.canonical, s.other)
			for _, enc := range e[:n] {
				encs, owners = append(encs, enc), append(owners, i)
			}
		}
	}
	sc.encodings, sc.owners = encs, owners
	found := append(sc.found[:0], make([]bool, len(encs))...)
	sc.found = found
	for i := 0; i < len(encs); i += lookupChunk {
		if r.ctx.Err() != nil {
			return false
		}
		end := min(i+lookupChunk, len(encs))
		r.q.ProbablyBatch(encs[i:end], found[i:end])
	}
	for j, i := range owners {
		b.slots[i].Probably = b.slots[i].Probably || found[j]
	}
	for i := range b.slots {
		if s := &b.slots[i]; s.formsErr != nil && !s.Probably && s.Err == nil {
			s.Err, s.lookedUp = s.formsErr, false // no "no"
		}
	}
	return true
}

// fingerprints sets the fingerprints of b's keys, all in one string: one
// allocation a batch, which a verdict kept keeps alive.
func (r *run) fingerprints(b *batch) {
	hitsOnly := r.opts.FingerprintHitsOnly
	var buf []byte
	if !hitsOnly {
		buf = make([]byte, 0, 2*fingerprintSize*len(b.slots))
	}
	type span struct{ fp, other int }
	spans := make([]span, len(b.slots))
	for i := range b.slots {
		s := &b.slots[i]
		if s.spki == nil || s.Err != nil && !s.Refuse() || hitsOnly && !s.Refuse() {
			spans[i].fp = -1
			continue
		}
		spans[i].fp, spans[i].other = len(buf), -1
		var label string
		if buf, label = appendFingerprints(buf, s.spki, s.canonical); label != "" {
			spans[i].other = spans[i].fp + fingerprintSize
			s.Key.OtherLabel = label
		}
	}
	if len(buf) == 0 {
		return
	}
	all := unsafe.String(unsafe.SliceData(buf), len(buf)) // buf is not written again
	for i := range b.slots {
		if s := &b.slots[i]; spans[i].fp >= 0 {
			s.Key.Fingerprint = all[spans[i].fp : spans[i].fp+fingerprintSize]
			if o := spans[i].other; o >= 0 {
				s.Key.OtherFingerprint = all[o : o+fingerprintSize]
			}
		}
	}
}
