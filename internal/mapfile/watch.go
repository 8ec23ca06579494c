package mapfile

import "time"

// A Watch tells a program that follows the file at a path, reading it into
// copies ([Copy]), when to read it again: when the path names another
// file or the file's stamp changed; at each look until the copy in use is
// found the same at a look Confirm or more after it was read (a writer
// that holds no lock may have been at work during the read, and change no
// time after it: the rest of one long write(2), a write through a mapping
// whose pages it had written before); every Verify, to see such writes at
// all; and for a file whose read failed, only once it changes or Verify comes round. The
// zero Watch never verifies. It is not safe for concurrent use.
type Watch struct {
	Verify time.Duration // how often the file in use is read and compared with its copy; <= 0 never
	// Confirm is how long after a new copy was read the file is still
	// compared with it at each look, until a look agrees: a writer that
	// holds no lock may stall mid-write for longer than one look.
	Confirm time.Duration

	failed      Stamp  // the last file (and its state) whose read failed
	failedMsg   string // its error
	unconfirmed bool   // the copy in use has not been found the same Confirm after it was read
	readAt      time.Time
	verifiedAt  time.Time
}

// Due reports whether to read the file again: id is its stamp now, cur
// the stamp the copy in use was read under, and sameHeader reports whether
// the file's header is still the copy's (a writer that follows the lock
// protocol writes it, and may leave the times as they were).
func (w *Watch) Due(id, cur Stamp, copy *File, sameHeader func() bool) bool {
	verify := w.Verify > 0 && time.Since(w.verifiedAt) >= w.Verify
	if verify {
		w.verifiedAt = time.Now() // the next look is a whole Verify away, whatever this one finds
	}
	if id.Unchanged(cur) && sameHeader() {
		if !w.unconfirmed && !verify {
			return false
		}
		if same, err := copy.SameContent(); err == nil && same {
			w.unconfirmed = time.Since(w.readAt) < w.Confirm
			return false
		}
	}
	return verify || !id.Unchanged(w.failed)
}

// Read records that a new copy is in use, read once.
func (w *Watch) Read() {
	w.failed, w.failedMsg, w.unconfirmed, w.readAt = Stamp{}, "", true, time.Now()
	if w.verifiedAt.IsZero() {
		w.verifiedAt = time.Now()
	}
}

// Failed records that reading the file of stamp id (the zero Stamp: the
// path could not be looked at, or the file was changing) failed with msg,
// and reports whether that is news: not the same failure of the same
// file, unchanged, read again.
func (w *Watch) Failed(id Stamp, msg string) bool {
	same := msg == w.failedMsg && (id.Unchanged(w.failed) || id.fi == nil && w.failed.fi == nil)
	w.failed, w.failedMsg = id, msg
	return !same
}
