package ct

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/pkbf/pkbf"
)

// A Scan checks a log's entries against a filter, from where its state
// file says the last run stopped (or From) up to the log's tree head.
type Scan struct {
	Log    Log
	Filter *pkbf.Filter
	// State is the path of the scan's state file: the log, the next
	// entry, the log's verification state and the hits already reported
	// past it. It is replaced atomically every SaveEvery, and when Run
	// returns. Empty: no state is kept, and each run starts at From.
	State string
	// From is where a scan without state starts. To, if not 0, is where
	// it stops (else at the tree head's size).
	From, To int64
	// Head, if set, is the tree head to read up to, instead of the
	// log's current one: so that the workers of a cluster, each scanning
	// a range, check their entries against one tree.
	Head *Head
	// Workers is how many goroutines check keys (0: GOMAXPROCS).
	Workers int
	// SaveEvery is how often the state is saved during a run (0: 10 s).
	SaveEvery time.Duration

	// Report is called for each hit, in log order, in Run's goroutine; an
	// error stops the scan (the hit then counts as not reported).
	Report func(Hit) error
	// Unchecked is called for each entry whose key could not be read.
	Unchecked func(index int64, err error)
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
	// Verdict is Filter.Check's, with the key's fingerprints.
	Verdict pkbf.Verdict
}

// AppendJSON appends the hit as one JSON object, as pkbf-ct --json
// prints it: log, index, timestamp, precertificate, serial, subject,
// issuer, fingerprint (and fingerprint_other where the key's encoding in
// the certificate is not its canonical one), probably.
func (h *Hit) AppendJSON(b []byte) []byte {
	j, _ := json.Marshal(struct {
		Log              string `json:"log"`
		Index            int64  `json:"index"`
		Timestamp        string `json:"timestamp"`
		Precert          bool   `json:"precertificate"`
		Serial           string `json:"serial"`
		Subject          string `json:"subject"`
		Issuer           string `json:"issuer"`
		Fingerprint      string `json:"fingerprint"`
		OtherFingerprint string `json:"fingerprint_other,omitempty"`
		Probably         bool   `json:"probably"`
	}{h.Log, h.Index, h.Timestamp.Format(time.RFC3339Nano), h.Precert, h.Serial, h.Subject, h.Issuer,
		h.Verdict.Fingerprint, h.Verdict.OtherFingerprint, true})
	return append(b, j...)
}

// A Result says what a run did.
type Result struct {
	Head                     Head
	Start, Next              int64 // the first entry read, the first not read
	Entries, Hits, Unchecked int64
}

// state is the scan's state file.
type state struct {
	Log  string `json:"log"`
	Next int64  `json:"next"`
	// Reported are the hits at or after Next already reported: Next is
	// where the log's verification state was saved, which may be a few
	// entries before the last verdict.
	Reported []int64         `json:"reported,omitempty"`
	Verify   json.RawMessage `json:"verify,omitempty"`
	Extra    json.RawMessage `json:"extra,omitempty"`
	Size     int64           `json:"tree_size"`
	Saved    time.Time       `json:"saved"`

	read bool // from the state file
}

// snapshot is the log's verification state when the reader had read up
// to (not including) at. The reader runs ahead of the verdicts; the state
// saved is the latest snapshot the verdicts have passed.
type snapshot struct {
	at   int64
	data []byte
}

const snapshotEvery = 256

// Run scans, until the tree head's size, an error, or ctx's end; it
// saves the state in every case it can, at the first entry not read. An
// interruption returns ctx's error with the Result so far. A start (the
// state's next entry, or From) outside the tree head, or a tree head smaller
// than the last run's, is an error naming both sizes; the state is then
// left as it was.
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
	st.Size = head.Size
	if st.Next >= end {
		return res, s.save(&st)
	}

	entries, saveVerify := s.Log.Entries(ctx, head, st.Next, st.Verify)
	var (
		mu        sync.Mutex
		snapshots []snapshot
		readErr   error
		held      [][]Entry // the batches given to Check whose verdicts may not all have come
		fed       = st.Next // the entries before it were given to Check
		fedAll    bool      // the reader is done, and everything it read was given to Check
	)
	// The log is read in a goroutine of its own, a batch of entries at a
	// time: fetching, parsing and checking tiles against the tree is most
	// of a scan's work, and the keys' checks run beside it.
	batches := make(chan []Entry, 8)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		for range batches { // the reader is done with the Log when Run returns
		}
	}()
	go func() {
		defer close(batches)
		batch := make([]Entry, 0, snapshotEvery)
		send := func() bool {
			if len(batch) == 0 {
				return true
			}
			select {
			case batches <- batch:
				batch = make([]Entry, 0, snapshotEvery)
				return true
			case <-ctx.Done():
				return false
			}
		}
		snap := func(at int64) {
			if saveVerify == nil {
				return
			}
			data, err := saveVerify()
			mu.Lock()
			if err == nil && (len(snapshots) == 0 || snapshots[len(snapshots)-1].at < at) {
				snapshots = append(snapshots, snapshot{at, data})
				if len(snapshots) > 256 {
					snapshots = slices.Delete(snapshots, 0, 128)
				}
			}
			mu.Unlock()
		}
		next := st.Next
		for e, err := range entries {
			if err != nil {
				if !errors.Is(err, errNotInTree) {
					snap(next) // the log's state as of the entries read: the next run's start
				}
				mu.Lock()
				readErr = err
				mu.Unlock()
				send()
				return
			}
			if e.Index >= end {
				break
			}
			if e.Index != next {
				mu.Lock()
				readErr = fmt.Errorf("%s: the log gave entry %d where entry %d was due", s.Log.URL(), e.Index, next)
				mu.Unlock()
				send()
				return
			}
			batch = append(batch, e)
			next++
			if next%snapshotEvery == 0 || next == end {
				snap(next)
			}
			if len(batch) == snapshotEvery && !send() {
				return
			}
		}
		send()
	}()
	inputs := func(yield func(pkbf.Input) bool) {
		for batch := range batches {
			mu.Lock()
			held = append(held, batch)
			mu.Unlock()
			for _, e := range batch {
				spki, err := e.leafSPKI()
				open := func() (io.ReadCloser, error) { return bytesReader(spki), nil }
				if err != nil {
					open = func() (io.ReadCloser, error) { return nil, err }
				}
				if !yield(pkbf.Input{Name: strconv.FormatInt(e.Index, 10), Open: open}) {
					return
				}
				mu.Lock()
				fed = e.Index + 1
				mu.Unlock()
			}
		}
		mu.Lock()
		fedAll = true
		mu.Unlock()
	}
	// entry returns the entry at index, which was given to Check, and lets
	// go of the batches before it: verdicts come in order.
	entry := func(index int64) (Entry, bool) {
		mu.Lock()
		defer mu.Unlock()
		for len(held) > 0 && held[0][len(held[0])-1].Index < index {
			held[0] = nil
			held = held[1:]
		}
		if len(held) == 0 || held[0][0].Index > index {
			return Entry{}, false
		}
		return held[0][index-held[0][0].Index], true
	}
	reported := map[int64]bool{} // hits reported, this run or before
	for _, i := range st.Reported {
		reported[i] = true
	}
	// saveAt saves the state once the entries before done are done: from
	// the latest verification snapshot at or before it (a log with no
	// verification state resumes at done itself), with the hits already
	// reported from there on.
	saveAt := func(done int64) error {
		next, data := done, []byte(nil)
		if saveVerify != nil {
			next = -1
			mu.Lock()
			for i := len(snapshots) - 1; i >= 0; i-- {
				if snapshots[i].at <= done {
					next, data = snapshots[i].at, snapshots[i].data
					break
				}
			}
			mu.Unlock()
		}
		if next < st.Next || (next == st.Next && saveVerify != nil && data == nil) {
			// Nothing newer to resume from: the same place, with the
			// hits reported since.
			next, data = st.Next, st.Verify
		}
		var keep []int64
		for i := range reported {
			if i >= next {
				keep = append(keep, i)
			}
		}
		slices.Sort(keep)
		st.Next, st.Verify, st.Reported = next, data, keep
		return s.save(&st)
	}
	unchecked := func(index int64, err error) {
		res.Unchecked++
		if s.Unchecked != nil {
			s.Unchecked(index, err)
		}
	}

	var stopErr error
	done := st.Next // the entries before it have their verdicts
	lastSave, lastProgress := time.Now(), time.Now()
	// Each entry is one input holding one SPKI: one verdict.
	for v := range s.Filter.Check(ctx, inputs, pkbf.CheckOptions{Workers: s.Workers, FingerprintHitsOnly: true}) {
		index, err := strconv.ParseInt(v.Input, 10, 64)
		if err != nil || index < done {
			stopErr = fmt.Errorf("a verdict about %q, not an entry due", v.Input)
			break
		}
		if errors.Is(v.Err, pkbf.ErrFileChanged) {
			stopErr = v.Err
			break
		}
		for gap := done; gap < index; gap++ {
			unchecked(gap, errNoCertificate)
		}
		done = index + 1
		switch {
		case v.Err != nil:
			unchecked(index, v.Err)
		case v.Probably && !reported[index]:
			e, ok := entry(index)
			if !ok {
				stopErr = fmt.Errorf("a verdict about entry %d, which is not in flight", index)
				break
			}
			h := Hit{Log: s.Log.URL(), Index: index, Timestamp: time.UnixMilli(e.Timestamp).UTC(), Precert: e.Precert, Verdict: v}
			h.Serial, h.Subject, h.Issuer = e.details()
			if s.Report != nil {
				stopErr = s.Report(h)
			}
			if stopErr == nil {
				res.Hits++
				reported[index] = true
			}
		default:
			entry(index)
		}
		if stopErr != nil {
			break
		}
		now := time.Now()
		if s.Progress != nil && now.Sub(lastProgress) >= time.Second {
			s.Progress(done-res.Start, done, end)
			lastProgress = now
		}
		if s.State != "" && now.Sub(lastSave) >= s.saveEvery() {
			if stopErr = saveAt(done); stopErr != nil {
				break
			}
			lastSave = now
		}
	}
	// Check ran out of inputs, not cut short: every entry given to it has
	// its verdict, and those that had none had no key.
	checked := stopErr == nil && ctx.Err() == nil
	cancel()
	mu.Lock()
	rerr, given, all := readErr, fed, fedAll
	if errors.Is(rerr, errNotInTree) {
		snapshots = nil // nothing read this run is trusted
	}
	mu.Unlock()
	if checked && all {
		for gap := done; gap < given; gap++ {
			unchecked(gap, errNoCertificate)
		}
		done = max(done, given)
	}
	if errors.Is(rerr, errNotInTree) {
		done = st.Next
	}
	finished := done >= end
	res.Entries = done - res.Start
	if s.State != "" {
		if err := saveAt(done); err != nil && stopErr == nil {
			stopErr = err
		}
	}
	res.Next = st.Next
	if s.State == "" {
		res.Next = done
	}
	if s.Progress != nil {
		s.Progress(res.Entries, done, end)
	}
	switch {
	case stopErr != nil:
		return res, stopErr
	case rerr != nil:
		return res, stopped(parent, rerr) // ctx is cancelled by now, whatever happened
	case !finished:
		if err := parent.Err(); err != nil {
			return res, err
		}
		return res, fmt.Errorf("%s: the scan stopped at entry %d of %d", s.Log.URL(), done, end)
	}
	return res, nil
}

var errNoCertificate = errors.New("no certificate in the entry")

func bytesReader(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

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
