package update

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/mapfile"
)

// state is what .FILTER.update.json remembers. Nothing in it is a
// server's word on whether the installed filter is current.
type state struct {
	// Of the installed file: the header and file (size and modification
	// time) Update installed, so that a file replaced or edited by other
	// means is not mistaken for it, and the pins (pinID) that verified
	// it, if any. They stay until another file is installed, whatever
	// happens to other downloads.
	Header   string `json:"header,omitempty"`
	File     string `json:"file,omitempty"`
	Verified string `json:"verified,omitempty"`
	// Confirmed is set when something other than the answer that
	// installed the file vouches for its bytes: a pin that its server
	// could not make up, or a later run's whole download of the server's
	// filter under the recorded header, every bit of it in the installed
	// filter. Until then no run takes the server's header alone for
	// "current": one interception could have paired the publisher's next
	// header with other bits.
	Confirmed bool `json:"confirmed,omitempty"`
	// Of .FILTER.download: the URL and validators of the response it is
	// part of, which bind a resumed download's parts (If-Range).
	PartialURL          string `json:"partial_url,omitempty"`
	PartialETag         string `json:"partial_etag,omitempty"`
	PartialLastModified string `json:"partial_last_modified,omitempty"`
}

// maxETag bounds the ETag kept: servers make them of a digest or a size
// and a time, and one much longer is sent back in If-Range.
const maxETag = 256

// validETag returns etag if it is an entity-tag (RFC 9110: an optional
// W/ and a quoted string of visible characters other than the quote) of
// at most maxETag bytes, else "".
func validETag(etag string) string {
	s := etag
	if len(s) > maxETag {
		return ""
	}
	if len(s) >= 2 && s[:2] == "W/" {
		s = s[2:]
	}
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return ""
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; c < 0x21 || c == '"' || c == 0x7f {
			return ""
		}
	}
	return etag
}

// validLastModified returns lm, written as HTTP writes dates, if it is an
// HTTP date no later than now; else "". A date from the future, sent back
// as If-Modified-Since, would have the server call every later file
// unmodified.
func validLastModified(lm string, now time.Time) string {
	t, err := http.ParseTime(lm)
	if err != nil || t.After(now) {
		return ""
	}
	return t.UTC().Format(http.TimeFormat)
}

// weakETag reports whether etag is weak (W/"..."), which If-Range may not
// use.
func weakETag(etag string) bool { return len(etag) >= 2 && etag[:2] == "W/" }

// sane drops the validators in st that Update would not have kept: a
// state file written by an older version, or by hand.
func (st *state) sane(now time.Time) {
	st.PartialETag = validETag(st.PartialETag)
	if weakETag(st.PartialETag) {
		st.PartialETag = ""
	}
	if st.PartialLastModified != "" {
		st.PartialLastModified = validLastModified(st.PartialLastModified, now)
	}
}

// dropPartial forgets the download's URL and validators: it is gone, or a
// request that carried them was refused.
func (st *state) dropPartial() {
	st.PartialURL, st.PartialETag, st.PartialLastModified = "", "", ""
}

// fileID names a file as the state keeps it: its size and modification
// time.
func fileID(fi fs.FileInfo) string {
	return fmt.Sprintf("%d bytes, modified %d", fi.Size(), fi.ModTime().UnixNano())
}

// headerHex is a header's bytes in hex, as the state keeps it.
func headerHex(h pkbf.Header) string {
	b, _ := h.AppendBinary(nil)
	return hex.EncodeToString(b)
}

// openSideFile opens (creating it if need be) one of the files Update
// keeps beside the filter: never through a symbolic link, never waiting
// (for a FIFO's other end), only a regular file, and readable by its
// owner alone (an older one is made so).
func openSideFile(path string, flag int) (*os.File, error) {
	f, err := openRegular(path, flag|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.Mode().Perm() != 0o600 {
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openRegular opens the regular file at path with flag (and perm, if it
// creates it): never through a symbolic link, and without waiting, so
// that a FIFO, a device or a socket put there is an error, not a wait
// for its other end.
func openRegular(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|oNoFollow|oNonBlock, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%s, not a regular file", mapfile.Kind(fi.Mode()))}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// fileSize is the size of the file at path, not through a link.
func fileSize(path string) (int64, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// maxStateFile bounds the state file read.
const maxStateFile = 64 << 10

// loadState reads the state file; an unreadable one (or a link) is no
// state, and validators Update would not keep are dropped. One that is
// not a regular file (a FIFO) is no state either, and logf says so.
func loadState(path string, logf func(string, ...any)) state {
	var st state
	f, err := openRegular(path, os.O_RDONLY, 0)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			logf("%v: ignored, as if there were no state file (it is replaced once this update has one to save)", err)
		}
		return st
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateFile))
	if err != nil || json.Unmarshal(b, &st) != nil {
		return state{}
	}
	st.sane(time.Now())
	return st
}

// saveState writes the state file, mode 0600, atomically: a link planted
// there is replaced, not followed. One that cannot be written (a full
// file system) is removed, so that no record outlives the filter it
// describes, and a warning says what follows.
func (up *updater) saveState() {
	b, _ := json.MarshalIndent(up.state, "", "  ")
	err := mapfile.MakeAtomic(up.statePath, false, func(tmp *os.File) error {
		if err := tmp.Chmod(0o600); err != nil {
			return err
		}
		_, err := tmp.Write(append(b, '\n'))
		return err
	}, nil)
	if err == nil {
		return
	}
	if rmErr := os.Remove(up.statePath); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
		up.logf("could not save %s (%v), nor remove it (%v): it may describe another filter than %s, and the next update would take keys for added in place, or a record for its own; remove it by hand", up.statePath, err, rmErr, up.path)
		return
	}
	up.logf("could not save %s (%v), and removed it: the next update cannot tell that %s is the filter it installed, so it downloads the server's filter whole and judges it as if keys had been added to %s in place (a pinned filter without every bit set in it is refused: check such a refusal, then accept-rebuild installs it); a download cut short starts again", up.statePath, err, up.path, up.path)
}
