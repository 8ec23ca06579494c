package update

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/retryafter"
)

// lockUpdate takes the update lock of path, waiting for another update to
// finish (or ctx to end), and returns its release.
func lockUpdate(ctx context.Context, lockPath, path string, logf func(string, ...any)) (func(), error) {
	// 0600: a user who could open it could hold a shared lock and stop
	// every update.
	f, err := openSideFile(lockPath, os.O_RDWR)
	if err != nil {
		return nil, perr.Errorf("update: the lock beside %s: %w", path, err)
	}
	if err := pollLock(ctx, f, func() { logf("waiting for another update of %s to finish", path) }); err != nil {
		f.Close()
		return nil, err
	}
	return func() { mapfile.UnlockFile(f); f.Close() }, nil
}

// pollLock takes f's exclusive flock(2), trying every 100 ms until it has
// it or ctx ends (a wait in the kernel could not be given up); waiting is
// called once if it has to wait.
func pollLock(ctx context.Context, f *os.File, waiting func()) error {
	for waited := false; ; waited = true {
		ok, err := mapfile.TryLockFile(f)
		if err != nil || ok {
			return err
		}
		if !waited {
			waiting()
		}
		if err := retryafter.Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// filterLockWait bounds the wait for the installed filter's lock.
var filterLockWait = time.Minute

// errLockHeld is the cause of a wait for the filter's lock that ran out.
var errLockHeld = errors.New("the filter's lock is held")

// lockFilter takes the installed filter's exclusive flock(2): the lock of
// the reference's protocol, which writers adding keys in place (pkbf add,
// the reference gem) take for each key. Holding it, Update sees every key
// added before and none half added, and the file does not change until
// the rename. It returns the header in the file now, and the lock's
// release. The path must still name the file Update read when it started:
// an error says the filter was replaced meanwhile.
func (up *updater) lockFilter(ctx context.Context) (pkbf.Header, func(), error) {
	f := up.installed
	wait, cancel := context.WithTimeoutCause(ctx, filterLockWait, errLockHeld)
	defer cancel()
	err := pollLock(wait, f, func() {
		up.logf("waiting for the lock on %s: keys are being added to it", up.path)
	})
	if context.Cause(wait) == errLockHeld {
		// A writer adding keys holds it for a moment at a time; anyone who
		// can open the filter can hold it for ever.
		return pkbf.Header{}, nil, perr.Errorf("update: waited %s for the lock on %s, and another process still holds it (fuser -v %s shows which): nothing installed", filterLockWait, up.path, up.path)
	}
	if err != nil {
		return pkbf.Header{}, nil, err
	}
	unlock := func() { mapfile.UnlockFile(f) }
	h, err := up.readHeaderNow()
	if err == nil {
		err = up.checkSameFile(f, up.oldInfo)
	}
	if err != nil {
		unlock()
		return pkbf.Header{}, nil, err
	}
	return h, unlock, nil
}

// checkSameFile checks that the open file f and what the filter's path
// names now are the file fi.
func (up *updater) checkSameFile(f *os.File, fi os.FileInfo) error {
	opened, err := f.Stat()
	if err != nil {
		return perr.Errorf("update: %w", err)
	}
	now, err := os.Stat(up.path)
	if err != nil {
		return perr.Errorf("update: %w", err)
	}
	if !os.SameFile(opened, fi) || !os.SameFile(now, fi) {
		return perr.Errorf("update: %s was replaced by another file while this update ran: nothing installed; update again", up.path)
	}
	return nil
}

// readHeaderNow reads the installed filter's header as it is in the file.
func (up *updater) readHeaderNow() (pkbf.Header, error) {
	b := make([]byte, pkbf.HeaderSize)
	if _, err := up.installed.ReadAt(b, 0); err != nil {
		return pkbf.Header{}, perr.Errorf("update: reading %s: %w", up.path, err)
	}
	h, err := pkbf.ParseHeader(b)
	if err != nil {
		return pkbf.Header{}, perr.Errorf("update: %s changed while this update ran: %w", up.path, err)
	}
	return h, nil
}
