package ct

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
)

// A Scan checks a log's entries against a filter, from where its state
// file says the last run stopped (or From) up to the log's tree head.
type Scan struct {
	Log Log
	// Filter checks each entry's key: a keycheck.Checker over a filter.
	Filter keycheck.KeyChecker
	// State is the path of the scan's state file: the log, the next
	// entry, the log's verification state and the hits already reported
	// past it. It is replaced atomically before the first entry is read,
	// every SaveEvery, and when Run returns. Empty: no state is kept, and
	// each run starts at From.
	State string
	// From is where a scan without state starts. To, if not 0, is where
	// it stops (else at the tree head's size).
	From, To int64
	// Head, if set, is the tree head to read up to, instead of the
	// log's current one: so that the workers of a cluster, each scanning
	// a range, check their entries against one tree.
	Head *Head
	// SaveEvery is how often the state is saved during a run (0: 10 s).
	SaveEvery time.Duration

	// Report is called for each hit, in log order, in Run's goroutine,
	// once the hit's entry is proved part of the tree head: on an RFC 6962
	// log, at the end of its batch of 256 entries (a consistency proof,
	// or the tree head's root at its end), and never for an entry not
	// proved. An error stops the scan (the hit then counts as not
	// reported).
	Report func(Hit) error
	// Unchecked is called for each entry whose key could not be read, and
	// at the start of each run for each such entry of an earlier run
	// (with an error saying so): the state lists them until a run checks
	// them, or one with AcknowledgeUnchecked drops them. An entry that
	// could not be checked is never forgotten.
	Unchecked func(index int64, err error)
	// AcknowledgeUnchecked drops the entries the state lists as not
	// checked, at the start of the run: the operator has dealt with them.
	AcknowledgeUnchecked bool
	// Progress, if set, is called about once a second, with the entries
	// read so far this run, where the scan is and where it stops.
	Progress func(done, at, end int64)
	// Saving, if set, is called before each save of the state: what it
	// returns is kept in the state as Extra (a command's output file
	// offset, say), after it has made the hits reported so far durable.
	Saving func() (json.RawMessage, error)
	// Resumed, if set, is called with the Extra of the state a run
	// resumes from, before anything is reported.
	Resumed func(extra json.RawMessage) error
}

// A Hit is a log entry whose key the filter probably holds.
type Hit struct {
	Log       string
	Index     int64
	Timestamp time.Time
	Precert   bool
	// Serial (hex), Subject and Issuer are the certificate's, as far as
	// they can be read.
	Serial, Subject, Issuer string
	// Verdict is Filter's on the entry's key, with the key's
	// fingerprints; its Source's Input is the log's URL.
	Verdict keycheck.Verdict
}

// Source says where the hit is, as pkbf-ct's text line does: "LOG: entry
// N (certificate)" or "(precertificate)".
func (h *Hit) Source() string {
	kind := "certificate"
	if h.Precert {
		kind = "precertificate"
	}
	return fmt.Sprintf("%s: entry %d (%s)", h.Log, h.Index, kind)
}

// AppendJSON appends the hit as one JSON object and a newline, as
// pkbf-ct --json prints it: the object pkbf check --json prints for the
// key ([keycheck.Verdict.AppendJSON]: source, as [Hit.Source] says it; file,
// the log's URL; fingerprint, fingerprint_as_given or
// fingerprint_named_curve where the key's encoding in the certificate is
// not the one named; probably), followed by the entry's fields: log,
// index (the entry's, numbered from 0 as the log numbers them),
// timestamp, precertificate, serial, subject and issuer.
func (h *Hit) AppendJSON(b []byte) []byte {
	v := h.Verdict
	v.Source.Input = h.Log
	obj := v.AppendJSON(nil)
	// The verdict's source is its input, the log; the hit's says where in
	// it. (`,"file":` cannot be inside the source string, whose quotes are
	// escaped.)
	file := bytes.Index(obj, []byte(`,"file":`))
	b = append(append(b, `{"source":`...), marshal(h.Source())...)
	b = append(b, bytes.TrimRight(obj[file:], "}\n")...)
	entry := marshal(struct {
		Log       string `json:"log"`
		Index     int64  `json:"index"`
		Timestamp string `json:"timestamp"`
		Precert   bool   `json:"precertificate"`
		Serial    string `json:"serial"`
		Subject   string `json:"subject"`
		Issuer    string `json:"issuer"`
	}{h.Log, h.Index, h.Timestamp.Format(time.RFC3339Nano), h.Precert, h.Serial, h.Subject, h.Issuer})
	b = append(append(b, ','), entry[1:]...)
	return append(b, '\n')
}

// marshal is v in JSON as pkbf check --json writes strings: "<", ">" and
// "&" as they are, not escaped for HTML.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // a string or a struct of strings, numbers and a bool: no error
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// A Result says what a run did.
type Result struct {
	Head Head
	// Start is the first entry read. Next is where the next run starts:
	// the entries before it are read, checked and proved part of Head's
	// tree.
	Start, Next int64
	// Entries counts the entries read and checked from Start, proved or
	// not; Hits the hits reported; Unchecked the entries whose key could
	// not be read (this run's, and earlier runs' the state lists).
	Entries, Hits, Unchecked int64
	// Unproved counts the hits found in entries read but not proved part
	// of the tree (an RFC 6962 log that stopped answering, an interrupted
	// run): not reported, they are found again by the run that proves
	// them.
	Unproved int64
}

// state is the scan's state file.
type state struct {
	Log  string `json:"log"`
	Next int64  `json:"next"`
	// Reported are the hits at or after Next already reported, all in
	// entries proved part of the tree of Size and Root: a Report refused
	// a later hit of the same proof, and the state went back to the place
	// proved before it. A list under the key "reported" held hits from
	// entries not proved: it is ignored, so that no such hit keeps the
	// real entry at its index from being reported.
	Reported []int64 `json:"reported_proved,omitempty"`
	// Unchecked are the entries whose key could not be read, in any run
	// so far: each later run counts them as not checked.
	Unchecked []int64         `json:"unchecked,omitempty"`
	Verify    json.RawMessage `json:"verify,omitempty"`
	Extra     json.RawMessage `json:"extra,omitempty"`
	Size      int64           `json:"tree_size"`
	// Root is the root hash of the tree of Size the last run read
	// against: the next run proves its tree head extends it.
	Root  []byte    `json:"tree_root,omitempty"`
	Saved time.Time `json:"saved"`

	read bool // from the state file
}

// A batch is what the scan's reader hands the checker: entries in log
// order, then, where the log keeps a verification state, that state as of
// the batch's end (nil: none), and the error that ended the reading, if
// one did. Nothing in it is shared: the reader lets go of a batch when it
// sends it.
type batch struct {
	entries []Entry
	verify  []byte
	err     error
}

// maxHeld is the most hits a scan holds back until their entries are
// proved: a log that gives no proof cannot make it hold more.
var maxHeld = 4096

// snapshotEvery is how many entries a batch holds at most: batches end
// at the multiples of it (and at the scan's end), where the log's
// verification state is taken.
const snapshotEvery = 256

// Run scans, until the tree head's size, an error, or ctx's end; it
// saves the state in every case it can, at the first entry not read (on
// an RFC 6962 log, not proved part of the tree head). An
// interruption returns ctx's error with the Result so far. A start (the
// state's next entry, or From) outside the tree head, or a tree head smaller
// than the last run's, is an error naming both sizes; the state is then
// left as it was.
//
// One pipeline: a goroutine reads the log (fetching, parsing and checking
// tiles or entries against the tree is most of a scan's work) and sends
// batches of entries; Run's goroutine checks each entry's key with
// Scan.Filter, reports hits and saves the state.
func (s *Scan) Run(ctx context.Context) (Result, error) {
	st, err := s.load()
	if err != nil {
		return Result{}, err
	}
	if s.Resumed != nil {
		if err := s.Resumed(st.Extra); err != nil {
			return Result{}, err
		}
	}
	var head Head
	if s.Head != nil {
		head = *s.Head
	} else if head, err = s.Log.Head(ctx); err != nil {
		return Result{Start: st.Next, Next: st.Next}, err
	}
	end := head.Size
	if s.To > 0 && s.To < end {
		end = s.To
	}
	res := Result{Head: head, Start: st.Next, Next: st.Next}
	if st.Size > head.Size {
		return res, fmt.Errorf("%s: the tree head has %d entries, fewer than the %d of the last run's", s.Log.URL(), head.Size, st.Size)
	}
	if st.Next < 0 || st.Next > head.Size {
		from := ""
		if st.read {
			from = " (the next entry in " + s.State + ")"
		}
		return res, fmt.Errorf("%s: the scan would start at entry %d%s, outside the tree head's %d entries", s.Log.URL(), st.Next, from, head.Size)
	}
	if err := s.extends(ctx, st, head); err != nil {
		return res, err
	}
	st.Size, st.Root = head.Size, head.Root
	notChecked := map[int64]bool{} // entries whose key could not be read, this run or before
	if !s.AcknowledgeUnchecked {
		for _, i := range st.Unchecked {
			notChecked[i] = true
		}
	}
	carried := maps.Clone(notChecked)
	for _, i := range st.Unchecked {
		if notChecked[i] && (i < st.Next || i >= end) { // one in [Next, end) is read again
			res.Unchecked++
			if s.Unchecked != nil {
				s.Unchecked(i, fmt.Errorf("an earlier run could not check it (%s lists it until a run does, or --acknowledge-unchecked drops it)", s.State))
			}
		}
	}
	st.Unchecked = sortedFrom(notChecked, 0)
	// Saved before the first hit too: a run killed before its first
	// periodic save leaves a state that records where its hits begin
	// (Saving), and the next run reports them again from there, not after
	// them.
	if err := s.save(&st); err != nil || st.Next >= end {
		return res, err
	}

	readCtx, cancel := context.WithCancel(ctx)
	entries, saveVerify := s.Log.Entries(readCtx, head, st.Next, st.Verify)
	batches := make(chan batch, 8)
	go s.read(readCtx, entries, saveVerify, st.Next, end, batches)
	defer func() {
		cancel()
		for range batches { // the reader is done with the Log when Run returns
		}
	}()

	reported := map[int64]bool{} // hits reported, this run or before
	for _, i := range st.Reported {
		reported[i] = true
	}
	report := func(h Hit) error {
		if s.Report != nil {
			if err := s.Report(h); err != nil {
				return err
			}
		}
		res.Hits++
		reported[h.Index] = true
		return nil
	}
	// done: the entries before it are checked. resume, resumeVerify: the
	// latest place, at or before done, where the log's verification state
	// is known (a log without one resumes at done itself). verified,
	// verifiedState: for a log that checks its entries against the tree
	// only at its end (a prefixProver), the latest such place proved a
	// prefix of the tree head: all the state keeps. held: the hits found
	// past verified, in log order, reported once their entries are
	// proved (a log could serve any entry it likes before then: a hit
	// from a forged one must neither be reported nor be taken for the
	// real entry's). before, beforeState: the place proved before the
	// last proof, where the state goes back to if Report refuses a hit
	// that proof released.
	done, resume, resumeVerify := st.Next, st.Next, st.Verify
	verified, verifiedState := st.Next, st.Verify
	before, beforeState := verified, verifiedState
	var held []Hit
	prover, _ := s.Log.(prefixProver)
	prove := func(ctx context.Context) error {
		if prover == nil || resume <= verified {
			return nil
		}
		if err := prover.provePrefix(ctx, head, resumeVerify); err != nil {
			return err
		}
		before, beforeState = verified, verifiedState
		verified, verifiedState = resume, resumeVerify
		return nil
	}
	release := func() error {
		for len(held) > 0 && held[0].Index < verified {
			if err := report(held[0]); err != nil {
				// Not reported: the next run reads it again, from the
				// place proved before (the hits of this proof reported
				// already are in the state's list).
				verified, verifiedState = before, beforeState
				return err
			}
			held = held[1:]
		}
		return nil
	}
	save := func() error {
		next, verify := done, []byte(nil)
		switch {
		case prover != nil:
			next, verify = verified, verifiedState
		case saveVerify != nil:
			next, verify = resume, resumeVerify
		}
		st.Next, st.Verify = next, verify
		st.Reported = sortedFrom(reported, next)
		// What this run found past next it read unproved: the next run
		// reads it again. Earlier runs' entries stay until a run checks
		// them in entries it proves.
		unchecked := map[int64]bool{}
		for i := range notChecked {
			unchecked[i] = i < next
		}
		for i := range carried {
			unchecked[i] = unchecked[i] || i >= next
		}
		st.Unchecked = sortedFrom(unchecked, 0)
		return s.save(&st)
	}

	var stopErr, readErr error
	lastSave, lastProgress := time.Now(), time.Now()
scan:
	for {
		var b batch
		var ok bool
		select {
		case b, ok = <-batches:
		case <-ctx.Done():
			break scan
		}
		if !ok {
			break
		}
		for _, e := range b.entries {
			if ctx.Err() != nil { // between two entries, whatever is in flight
				break scan
			}
			delete(notChecked, e.Index) // read again: checked below, or listed again
			h, err := s.check(e, notChecked, &res)
			switch {
			case err != nil:
				stopErr = err
			case h == nil || reported[h.Index]:
			case prover != nil:
				held = append(held, *h)
			default:
				stopErr = report(*h)
			}
			if stopErr != nil {
				break scan
			}
			done = e.Index + 1
		}
		if b.verify != nil {
			resume, resumeVerify = done, b.verify
		}
		if b.err != nil {
			readErr = b.err
			break
		}
		now := time.Now()
		if s.Progress != nil && now.Sub(lastProgress) >= time.Second {
			s.Progress(done-res.Start, done, end)
			lastProgress = now
		}
		// A hit waits for the proof of its batch, one request; the
		// state, for the proof of all it keeps.
		saveNow := s.State != "" && now.Sub(lastSave) >= s.saveEvery()
		if saveNow || len(held) > 0 {
			switch err := prove(ctx); {
			case errors.Is(err, errNotInTree):
				readErr = err
			case err == nil:
				stopErr = release()
			case len(held) > maxHeld:
				readErr = fmt.Errorf("%s: %d hits wait for the proof of their entries, which the log does not give: %w", s.Log.URL(), len(held), err)
			} // else the hits wait, and the state keeps the last place proved
			if readErr != nil || stopErr != nil {
				break
			}
		}
		if saveNow {
			if stopErr = save(); stopErr != nil {
				break
			}
			lastSave = now
		}
	}
	if stopErr == nil && (readErr == nil || !errors.Is(readErr, errNotInTree)) {
		// The entries read, proved a prefix of the tree head: required
		// of a complete scan, and done for an interrupted one too (with
		// a little time of its own), so that its state keeps them and
		// their hits are reported.
		pctx, cancel := ctx, func() {}
		if ctx.Err() != nil {
			pctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		}
		err := prove(pctx)
		cancel()
		switch {
		case err == nil:
			stopErr = release()
		case readErr == nil && ctx.Err() == nil || errors.Is(err, errNotInTree):
			readErr = err
		}
	}
	// Entries read and checked, even where what follows discards them.
	res.Entries = done - res.Start
	res.Unproved = int64(len(held))
	if prover != nil {
		done = verified // what is not proved is read again next time
	}
	if errors.Is(readErr, errNotInTree) {
		readErr = fmt.Errorf("%w; nothing read from entry %d on is kept: the next run reads it again", readErr, verified)
	}
	res.Next = done
	if s.State != "" {
		if err := save(); err != nil && stopErr == nil {
			stopErr = err
		}
		res.Next = st.Next
	}
	if s.Progress != nil {
		s.Progress(res.Entries, done, end)
	}
	switch {
	case stopErr != nil:
		return res, stopErr
	case readErr != nil:
		return res, stopped(ctx, readErr)
	case done < end:
		if err := ctx.Err(); err != nil {
			return res, err
		}
		return res, fmt.Errorf("%s: the scan stopped at entry %d of %d", s.Log.URL(), done, end)
	}
	return res, nil
}

// extends proves the tree head extends the tree the last run read against
// (the state's size and root), or fails naming both roots: a log whose
// history changed between two runs could hide an entry read before.
func (s *Scan) extends(ctx context.Context, st state, head Head) error {
	old := Head{Size: st.Size, Root: st.Root}
	var err error
	switch p, ok := s.Log.(treeProver); {
	case st.Root == nil || st.Size == 0:
		// A first run, or a state from before roots were kept, whose
		// Merkle range (RFC 6962) was saved unproved: prove it now.
		pp, ok := s.Log.(prefixProver)
		if !ok || st.Verify == nil {
			return nil
		}
		err := pp.provePrefix(ctx, head, st.Verify)
		if errors.Is(err, errNotInTree) {
			err = fmt.Errorf("%w; the entries 0 to %d are what %s keeps of an earlier run: they are at fault (remove %s to scan the log again from entry 0)", err, st.Next-1, s.State, s.State)
		}
		return err
	case st.Size == head.Size:
		if !bytes.Equal(st.Root, head.Root) {
			err = errForked
		}
	case ok:
		err = p.proveTree(ctx, old, head)
	}
	if err == nil || !errors.Is(err, errForked) {
		return err
	}
	return fmt.Errorf("%s: the tree head of size %d (root %x) does not extend the tree of size %d (root %x) that %s was read against: %w; its entries may not be the ones checked (remove %s to scan the log again from entry 0)",
		s.Log.URL(), head.Size, head.Root, st.Size, st.Root, s.State, err, s.State)
}

// check checks the key of one entry, and returns its hit if the filter
// probably holds it, or the weak-key checks refuse it (a KeyChecker with
// keycheck.Options.Weak: keycheck.Verdict.Refuse). An entry whose key
// could not be read is listed in notChecked and passed to Unchecked; an
// error stops the scan: the filter's file failed.
func (s *Scan) check(e Entry, notChecked map[int64]bool, res *Result) (*Hit, error) {
	v, err := s.verdict(e)
	switch {
	case errors.Is(err, pkbf.ErrFileChanged):
		return nil, err
	case v.Refuse(): // whatever else could not be checked
		v.Source.Input = s.Log.URL()
		h := Hit{Log: v.Source.Input, Index: e.Index, Timestamp: time.UnixMilli(e.Timestamp).UTC(), Precert: e.Precert, Verdict: v}
		h.Serial, h.Subject, h.Issuer = e.details()
		return &h, nil
	case err != nil:
		notChecked[e.Index] = true
		res.Unchecked++
		if s.Unchecked != nil {
			s.Unchecked(e.Index, err)
		}
	}
	return nil, nil
}

// verdict is the filter's on the key of the entry's leaf: as pkbf reads
// it, or, where its strict parse fails, as TLS clients read it
// (asTLSClientsRead). An error: no parser yields a key, or the filter's
// file failed.
func (s *Scan) verdict(e Entry) (keycheck.Verdict, error) {
	spki, err := e.leafSPKI()
	if err != nil {
		return keycheck.Verdict{}, err
	}
	v := s.Filter.CheckKey(spki)
	if v.Err == nil || errors.Is(v.Err, pkbf.ErrFileChanged) {
		return v, v.Err
	}
	der, ok := asTLSClientsRead(spki)
	if !ok {
		return v, v.Err
	}
	v = s.Filter.CheckKey(der)
	return v, v.Err
}

// read sends the log's entries from next to end in batches that end
// where the log's verification state is taken, each with that state; an
// error ends the last batch. It closes out when done, and stops when ctx
// ends.
func (s *Scan) read(ctx context.Context, entries iter.Seq2[Entry, error], saveVerify func() ([]byte, error), next, end int64, out chan<- batch) {
	defer close(out)
	b := batch{entries: make([]Entry, 0, snapshotEvery)}
	send := func() bool {
		select {
		case out <- b:
			b = batch{entries: make([]Entry, 0, snapshotEvery)}
			return true
		case <-ctx.Done():
			return false
		}
	}
	snap := func() {
		if saveVerify != nil {
			if data, err := saveVerify(); err == nil {
				b.verify = data
			}
		}
	}
	for e, err := range entries {
		switch {
		case err != nil:
			if !errors.Is(err, errNotInTree) {
				snap() // the log's state as of the entries read: the next run's start
			}
			b.err = err
		case e.Index >= end:
		case e.Index != next:
			b.err = fmt.Errorf("%s: the log gave entry %d where entry %d was due", s.Log.URL(), e.Index, next)
		default:
			b.entries = append(b.entries, e)
			next++
			if next%snapshotEvery != 0 && next != end {
				continue
			}
			snap()
			if !send() {
				return
			}
			continue
		}
		break
	}
	if len(b.entries) > 0 || b.err != nil {
		send()
	}
}

// sortedFrom returns the entries of set at or past from, in order.
func sortedFrom(set map[int64]bool, from int64) []int64 {
	var keep []int64
	for i, in := range set {
		if in && i >= from {
			keep = append(keep, i)
		}
	}
	slices.Sort(keep)
	return keep
}

func (s *Scan) saveEvery() time.Duration {
	if s.SaveEvery > 0 {
		return s.SaveEvery
	}
	return 10 * time.Second
}

// load reads the state file, or starts one at From.
func (s *Scan) load() (state, error) {
	st := state{Log: s.Log.URL(), Next: s.From}
	if s.State == "" {
		return st, nil
	}
	b, err := os.ReadFile(s.State)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: not a scan state file: %w", s.State, err)
	}
	st.read = true
	if st.Log != s.Log.URL() {
		return st, fmt.Errorf("%s is the state of a scan of %s, not of %s", s.State, st.Log, s.Log.URL())
	}
	return st, nil
}

func (s *Scan) save(st *state) error {
	if s.State == "" {
		return nil
	}
	if s.Saving != nil {
		extra, err := s.Saving()
		if err != nil {
			return err
		}
		st.Extra = extra
	}
	st.Saved = time.Now().UTC().Truncate(time.Second)
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(s.State, append(b, '\n'))
}
