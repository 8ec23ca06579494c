package update

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
)

// readInstalled reads the installed filter's header, and keeps the file
// open (up.installed): what Update compares and locks is that file, even
// if another is renamed over it meanwhile. A file there that is not a
// readable filter is refused, unless Options.ReplaceInvalid. Call
// closeInstalled when done, whatever it returns.
func (up *updater) readInstalled() error {
	f, err := pkbf.Open(up.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil && up.opts.ReplaceInvalid:
		up.logf("%v: replacing it", err)
		up.replaces = true
		return nil
	case err != nil:
		return perr.Kind(ErrNotFilter, perr.Errorf("%w; an update replaces only a filter (nothing was downloaded)", err))
	}
	h := f.Header()
	f.Close()
	installed, err := mapfile.Open(up.path, false)
	if err != nil {
		return perr.Errorf("update: %w", err)
	}
	up.installed = installed
	fi, err := installed.Stat()
	if err == nil {
		err = up.checkSameFile(installed, fi)
	}
	if err == nil {
		// Keys may be added meanwhile; another file may have been renamed
		// over the one validated.
		var now pkbf.Header
		now, err = up.readHeaderNow()
		if err == nil && (now.HashCount != h.HashCount || now.HashLength != h.HashLength || int64(now.FileSize()) != fi.Size()) {
			err = perr.Errorf("update: %s was replaced while it was read: nothing was downloaded; update again", up.path)
		}
		h = now
	}
	if err != nil {
		return err // closeInstalled closes it
	}
	up.old, up.oldInfo, up.replaces = &h, fi, true
	up.res.Old = &h
	return nil
}

// closeInstalled closes the installed filter's file, if open.
func (up *updater) closeInstalled() {
	if up.installed != nil {
		up.installed.Close()
	}
}

// install judges the complete download by the rule and, unless it is
// refused or the installed filter already, renames it over the filter
// under the filter's lock.
func (up *updater) install(ctx context.Context) error {
	f, err := pkbf.Open(up.download)
	if err != nil {
		os.Remove(up.download)
		return up.errorf("the downloaded filter is not valid: %w", err)
	}
	h := f.Header()
	f.Close()
	fi, err := os.Stat(up.download)
	if err != nil {
		return perr.Errorf("update: %w", err)
	}
	up.res.New, up.res.Size = h, fi.Size()
	defer func() {
		// A refused download is gone: its validators go too, and the
		// installed file's stay.
		if _, err := os.Stat(up.download); errors.Is(err, fs.ErrNotExist) && up.state.PartialURL != "" {
			up.state.dropPartial()
			up.saveState()
		}
	}()
	current, err := up.judge(h, true)
	if err != nil {
		os.Remove(up.download)
		return err
	}
	if current {
		os.Remove(up.download)
		up.remember(h, up.oldInfo, true) // verified now, if pinned
		return nil
	}
	installed, err := up.rename(ctx, h)
	if err != nil {
		return err
	}
	up.res.Updated = true
	// Unpinned, the bytes installed are one answer's word: the next run
	// downloads the server's filter whole to confirm them.
	up.remember(h, installed, up.pinnedElsewhere())
	return nil
}

// remember records the installed filter, whose header is h, and its
// file: what Update installed, whether its bytes are confirmed (see
// state.Confirmed), and the pins that verified it.
func (up *updater) remember(h pkbf.Header, installed fs.FileInfo, confirmed bool) {
	up.state = state{Header: headerHex(h), File: fileID(installed), Confirmed: confirmed}
	if up.pinned() {
		up.state.Verified = up.pinID()
	}
	up.saveState()
}

// judge applies the rule to the download, whose header is h, against the
// installed filter up.old: it reports whether the download is the
// installed filter, or returns the refusal. withPins checks the pins too
// (judged again under the filter's lock, the download's pins are known).
func (up *updater) judge(h pkbf.Header, withPins bool) (current bool, err error) {
	if err := up.checkAge(h, "the filter"); err != nil {
		return false, err
	}
	if !up.opts.Force {
		if err := up.checkFuture(h); err != nil {
			return false, err
		}
	}
	old := up.old
	switch {
	case old != nil && *old == h:
		same, err := sameContent(up.download, up.installed)
		if err != nil {
			return false, perr.Errorf("update: comparing the download with the installed filter: %w", err)
		}
		if same {
			// The installed file: current, once its pins verify it.
			if _, err := up.verify(h, false, withPins); err != nil {
				return false, perr.Errorf("%w (the installed filter %s holds the same bytes)", err, up.path)
			}
			return true, nil
		}
		if !up.refusalsLifted() {
			return false, up.sameHeaderError(h)
		}
	case old != nil && up.addedTo(h):
		// The server's filter has the header Update recorded, and the
		// installed one is that filter with keys added in place: it is
		// current when it holds every bit of the server's.
		extra, err := up.bitsNotInstalled(h)
		if err != nil {
			return false, err
		}
		if extra == 0 {
			if _, err := up.verify(h, false, withPins); err != nil {
				return false, perr.Errorf("%w (the installed filter %s holds every bit of it)", err, up.path)
			}
			return true, nil
		}
		if !up.refusalsLifted() {
			return false, up.sameHeaderError(h)
		}
	case old != nil && !up.refusalsLifted():
		if err := up.checkOrder(*old, h); err != nil {
			return false, err
		}
	}
	superset := old != nil && up.supersetRule()
	if superset && !up.refusalsLifted() {
		if err := up.checkWeaker(*old, h); err != nil {
			return false, err
		}
	}
	// With at least the installed filter's hashes and length, every bit the
	// installed one has set must answer in the new one.
	compare := superset && h.HashCount >= old.HashCount && h.HashLength >= old.HashLength
	_, err = up.verify(h, compare, withPins)
	return false, err
}

// verify reads the complete download once and checks it against its pins
// (withPins), its entry count, the false-positive ceilings and, when
// compare (the installed filter has its parameters, or a shorter length),
// the installed filter's bits, in that order.
func (up *updater) verify(h pkbf.Header, compare, withPins bool) (scanned, error) {
	s, err := up.scan(h, compare, withPins)
	if err != nil {
		return s, err
	}
	var signer ssh.PublicKey
	if withPins {
		if signer, err = up.checkPins(s); err != nil {
			return s, err
		}
	}
	if err := up.checkFill(h, s); err != nil {
		return s, err
	}
	if !up.opts.Force {
		if err := up.checkSaturated(h, s.set); err != nil {
			return s, err
		}
		if !up.pinnedElsewhere() {
			if err := up.checkFPRate(h, s.set); err != nil {
				return s, err
			}
		}
	}
	if s.compared && s.dropped > 0 && !up.refusalsLifted() {
		return s, up.dropsBitsError(h, s.dropped)
	}
	if withPins {
		up.res.SHA256, up.res.SignedBy = s.sha256, signer
	}
	return s, nil
}

// rename puts the download at the filter's path, holding the installed
// filter's lock from a last look at it to the rename: keys added in place
// meanwhile (its header changed) are judged again, under the lock, and a
// download without them refused. It returns the installed file's info.
func (up *updater) rename(ctx context.Context, h pkbf.Header) (fs.FileInfo, error) {
	if up.old != nil {
		now, unlock, err := up.lockFilter(ctx)
		if err != nil {
			os.Remove(up.download)
			return nil, err
		}
		defer unlock()
		// A count at its ceiling no longer changes: read the bits again.
		if now != *up.old || now.EntryCount == math.MaxUint32 {
			up.changedMeanwhile = now != *up.old
			up.old = &now
			up.res.Old = &now
			current, err := up.judge(h, false)
			if err == nil && current {
				err = perr.Errorf("update: %s became the server's filter while this update ran: nothing installed", up.path)
			}
			if err != nil {
				os.Remove(up.download)
				return nil, err
			}
		}
	}
	mode := fs.FileMode(0o644) // the download's 0600 kept it from other users until now
	if up.oldInfo != nil {
		mode = up.oldInfo.Mode().Perm()
	}
	if err := os.Chmod(up.download, mode); err != nil {
		return nil, perr.Errorf("update: %w", err)
	}
	// Where there was no file, none that appeared since is replaced.
	if err := mapfile.Rename(up.download, up.path, !up.replaces); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, perr.Errorf("update: %s appeared while this update ran: not replaced; update again", up.path)
		}
		return nil, perr.Errorf("update: %w", err)
	}
	if up.oldInfo != nil {
		if n := hardLinks(up.oldInfo); n > 1 {
			others := fmt.Sprintf("the other %d names still hold", n-1)
			if n == 2 {
				others = "the other name still holds"
			}
			up.logf("%s had %d hard links: only it was replaced, and %s the old filter (a program that reads the filter under another name should read it through a symbolic link to %s)", up.path, n, others, up.path)
		}
	}
	fi, err := os.Stat(up.path)
	if err != nil {
		return nil, perr.Errorf("update: %w", err)
	}
	return fi, nil
}

// sameContent reports whether the file at a and the open file b hold the
// same bytes.
func sameContent(a string, b *os.File) (bool, error) {
	fa, err := openRegular(a, os.O_RDONLY, 0)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb := io.NewSectionReader(b, 0, math.MaxInt64)
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		na, erra := io.ReadFull(fa, ba)
		nb, errb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		switch {
		case erra == io.EOF || erra == io.ErrUnexpectedEOF:
			return errb == io.EOF || errb == io.ErrUnexpectedEOF, nil
		case erra != nil:
			return false, erra
		case errb != nil && errb != io.EOF && errb != io.ErrUnexpectedEOF:
			return false, errb
		}
	}
}
