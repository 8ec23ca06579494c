package pkbfhttp

import (
	"io"
	"net/http"
	"time"

	"github.com/pkbf/pkbf/keycheck"
)

// An answer is built in pieces of firstChunk bytes, then twice that, up
// to answerChunk: a small answer takes little room.
const firstChunk, answerChunk = 4 << 10, 64 << 10

// An answer is the body of a check's answer, built in pieces charged to
// the service's budget as they are made and given back as they are
// written: with the request bodies, answers are what checks hold, and a
// client that reads its answer slowly holds only that answer's room.
// (One key's JSON can be six times its bytes: a control character in an
// SSH key's comment is written \u0001.)
type answer struct {
	budget  *budget
	base    int64 // the request body's room, held while the answer is made
	chunks  [][]byte
	json    []byte // one verdict's JSON, before it is copied into chunks
	held    int64  // the room taken: the chunks' and json's capacity
	size    int    // the bytes in chunks
	refused int    // why it stopped: 413 (it could never fit), 503 (no room now), or 0
}

// add appends v's JSON line, or reports false, with a.refused set, when
// the budget has no room for it.
func (a *answer) add(v keycheck.Verdict) bool {
	was := cap(a.json)
	a.json = v.AppendJSON(a.json[:0])
	if a.size+len(a.json) > maxAnswer {
		a.refused = http.StatusRequestEntityTooLarge
		return false
	}
	if !a.take(int64(cap(a.json) - was)) {
		return false
	}
	for b := a.json; len(b) > 0; {
		last := len(a.chunks) - 1
		if last < 0 || len(a.chunks[last]) == cap(a.chunks[last]) {
			size := min(firstChunk<<min(len(a.chunks), 4), answerChunk)
			if !a.take(int64(size)) {
				return false
			}
			a.chunks, last = append(a.chunks, make([]byte, 0, size)), last+1
		}
		c := a.chunks[last]
		n := copy(c[len(c):cap(c)], b)
		a.chunks[last], a.size, b = c[:len(c)+n], a.size+n, b[n:]
	}
	return true
}

// take charges n more bytes of room to the answer, or reports false with
// a.refused set: 413 past the most one request may hold, 503 when others
// hold the room.
func (a *answer) take(n int64) bool {
	total := a.base + a.held + n
	switch {
	case total > a.budget.most():
		a.refused = http.StatusRequestEntityTooLarge
	case !a.budget.take(n, total > smallBody):
		a.refused = http.StatusServiceUnavailable
	default:
		a.held += n
		return true
	}
	return false
}

// stallWriter gives each write to w stallTimeout to be taken by the
// client: an answer's 64 KiB pieces, so a client reading 6.4 KB/s or more
// gets the whole answer, however long, within the count of its request.
type stallWriter struct{ w http.ResponseWriter }

func (s stallWriter) Write(b []byte) (int, error) {
	http.NewResponseController(s.w).SetWriteDeadline(time.Now().Add(stallTimeout))
	return s.w.Write(b)
}

// writeTo writes the answer to w, giving the room of each piece back once
// written.
func (a *answer) writeTo(w io.Writer) {
	a.give(int64(cap(a.json)))
	a.json = nil
	for i, c := range a.chunks {
		if _, err := w.Write(c); err != nil {
			return
		}
		a.chunks[i] = nil
		a.give(int64(cap(c)))
	}
}

func (a *answer) give(n int64) {
	a.budget.give(n)
	a.held -= n
}

// release gives back the room the answer still holds.
func (a *answer) release() {
	a.give(a.held)
	a.chunks, a.json = nil, nil
}
