// Package update keeps a pkbfv1 filter file current from a publisher's
// URL, as geoipupdate keeps GeoIP databases: a conditional download (no
// transfer when nothing changed), resumed where an earlier one stopped,
// validated before anything is replaced, and installed by a rename, so that
// programs reading the filter ([pkbf.Open], [pkbf.OpenLive], pkbf serve)
// only ever see the complete old file or the complete new one.
//
// Update keeps three files beside the filter FILTER, in the same directory,
// mode 0600, never opened through a symbolic link (and refuses a directory
// that a user other than root and its own can write, or that such a user
// owns: checked for FILTER's directory and, if FILTER is a link, for the
// directory of the file it leads to):
//   - .FILTER.download: the download in progress. An update stopped by a
//     signal, a crash or a broken connection leaves it, and the next update
//     resumes it (with an HTTP Range request, if the server's file is still
//     the same) or starts again. It is renamed to FILTER when complete and
//     valid, and removed when it is refused.
//   - .FILTER.update.json: what the server said of the installed file (its
//     ETag and Last-Modified), for the next conditional request. Losing it
//     costs one full download. A URL with a user or a query is kept
//     without them, by its SHA-256.
//   - .FILTER.update.lock: the lock that keeps two updates of FILTER from
//     running at once (flock(2); the second waits for the first).
//
// Update installs only a filter that proves itself. It is fetched over
// https (plain http only with [Options.AllowHTTP] and a pin given, never
// with credentials), and refused if its header's entry count does not fit
// the bits set in it ([ErrImplausibleFill]), if it has fewer hashes, a
// shorter hash length or fewer entries than the installed filter
// ([ErrWeaker]), if it lacks bits the installed filter has set, compared
// in place or, for a longer hash length, folded onto the installed length
// ([ErrDropsBits]), if its revision or time would lock later filters out
// ([ErrLockIn]), if it answers yes for most keys ([ErrSaturated]), if it
// is older than [Options.MaxAge] ([ErrStale]), or if it does not match
// the digest or the SSH signature an operator pins it to
// ([ErrNotAuthentic]). Only then is it renamed into place. The comparison
// proves that every key the installed filter reports is still reported
// only when the hash count and length are the installed ones: a key's
// probes beyond those (more hashes, the new bit of a longer length)
// cannot be checked against the installed bits, so a filter with more
// hashes or a longer length is refused unpinned ([ErrUnverifiable]).
//
// Update never replaces what it did not make: a file at FILTER that is not
// a readable pkbfv1 filter is refused before any request (unless
// [Options.ReplaceInvalid]), and a directory, FIFO, socket or device is
// refused always. A symbolic link at FILTER is followed: the file it leads
// to is replaced, in its own directory, and the three files above sit
// beside that file. A new filter is installed with mode 0644, a
// replacement with the mode of the file it replaced.
package update

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/pkbf/pkbf/internal/headertext"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/retryafter"
)

// Defaults of Options' zero values.
const (
	DefaultMaxSize    = 64 << 30 // bytes: a filter with hash length 39
	DefaultRetries    = 4
	DefaultStall      = time.Minute
	DefaultMinRate    = 1 << 10 // bytes a second, over DefaultRateWindow
	DefaultRateWindow = 30 * time.Second
	DefaultMaxTime    = 2 * time.Hour
)

// ErrOlder is wrapped by the error Update returns when the server's filter
// is older than the installed one (a lower revision, or the same revision
// with an earlier update time) and Options.Force is not set.
var ErrOlder = perr.New("the server's filter is older than the installed one")

// ErrSameHeader is wrapped by the error Update returns when the server's
// filter has the installed one's header but other bits, and Options.Force
// is not set: one of them was changed without a new revision.
var ErrSameHeader = perr.New("the server's filter has the installed one's header but other bits")

// ErrNotFilter is wrapped by the error Update returns, before any request,
// when the file at the filter's path is not a readable pkbfv1 filter and
// Options.ReplaceInvalid is not set.
var ErrNotFilter = perr.New("the file to be replaced is not a readable filter")

// ErrPlainHTTP is wrapped by the error Update returns, before any request
// or when a redirect leads there, for a plain http URL without
// Options.AllowHTTP, and for one with credentials (Options.Header, or a
// user in the URL) whatever the options: anyone on the path of plain http
// can read what is sent and replace what comes back.
var ErrPlainHTTP = perr.New("plain http is refused")

// Options adjust Update. The zero value is ready to use.
type Options struct {
	// Client makes the requests. Nil means one with proxies from the
	// environment ($HTTPS_PROXY, $HTTP_PROXY, $NO_PROXY), 30 s to connect
	// and 60 s to get a response's headers. Update does not change it; its
	// redirects are followed without Header if they lead to another host
	// or to http, and not at all to http without AllowHTTP.
	Client *http.Client
	// Header is added to every request to the filter URL's host over
	// https: credentials for a commercial feed, for example. Its values
	// never appear in errors or in Logf's messages, and are not sent to
	// another host, nor over http: an http URL with a Header is refused.
	Header http.Header
	// AllowHTTP lets the filter and signature URLs, and the redirects
	// they lead to, be plain http. Without it they must be https
	// (ErrPlainHTTP). It needs SHA256 or SignatureURL (ErrPlainHTTP
	// otherwise): over http only a pin that does not travel the same path
	// makes a filter trustworthy.
	AllowHTTP bool
	// SHA256 pins the filter to one file: its SHA-256 digest in hex.
	SHA256 string
	// SHA256URL pins the filter to the digest published at this URL
	// (FILTER.sha256, say): a bare digest or sha256sum's output. It must
	// be https, and so must its redirects, whatever AllowHTTP says. It
	// proves the filter arrived as the digest's host published it: on the
	// filter's own host that guards against a corrupt transfer or a
	// mirror, not against that host; on another host, that a second
	// server agrees.
	SHA256URL string
	// SignatureURL pins the filter to a detached SSH signature published
	// at this URL, as ssh-keygen -Y sign -n pkbf makes it (FILTER.sig),
	// by one of SignerKeys (ParseSignerKeys reads them from a .pub file).
	// The signature covers the exact bytes installed.
	SignatureURL string
	SignerKeys   []ssh.PublicKey
	// Force installs the server's filter even if it is older than the
	// installed one, has its header but other bits, is weaker (fewer
	// hashes, a shorter hash length, fewer entries), lacks bits the
	// installed one has set, has a revision or time that would lock later
	// filters out (ErrLockIn), or is saturated (ErrSaturated). It never installs one
	// that fails the fill check or a pin.
	Force bool
	// MaxAge, if set, refuses a filter whose header's update time is more
	// than MaxAge ago (ErrStale): a server that keeps serving an old
	// filter, signed or not, is noticed. The server's current filter is
	// checked whether it is installed now or was already (a 304), so a
	// stale installed filter is an error too. Force does not override it.
	MaxAge time.Duration
	// ReplaceInvalid lets Update replace a file at the filter's path that
	// is not a readable pkbfv1 filter (a file cut short, say). Without it
	// such a file is refused before any request (ErrNotFilter).
	ReplaceInvalid bool
	// MaxSize refuses a filter larger than this many bytes, before it is
	// downloaded; 0 means DefaultMaxSize.
	MaxSize int64
	// Retries is how many times a failed attempt is retried (a network
	// error, a body cut short, a stall, 429 or 5xx), with exponential
	// backoff from 1 s (or the server's Retry-After, up to 5 minutes),
	// resuming the download where it can. 0 means DefaultRetries, a
	// negative number none.
	Retries int
	// Stall abandons an attempt when no byte arrives for this long; 0
	// means DefaultStall.
	Stall time.Duration
	// MinRate abandons an attempt whose body arrives at fewer than this
	// many bytes a second over a RateWindow; 0 means DefaultMinRate and
	// DefaultRateWindow.
	MinRate    int64
	RateWindow time.Duration
	// MaxTime bounds the whole call, waiting for another update, retries
	// and their pauses included; 0 means DefaultMaxTime. The download so
	// far is kept, to be resumed.
	MaxTime time.Duration
	// Progress, if set, is called as the filter arrives, with the bytes of
	// the file received (counting a resumed download's earlier part) and
	// its size (0 until the header has arrived).
	Progress func(done, total int64)
	// Logf, if set, is told of retries and of waiting for another update.
	Logf func(format string, args ...any)

	sleep func(ctx context.Context, d time.Duration) error // tests
}

// Result is what Update did.
type Result struct {
	// Updated is true when a new filter was installed, false when the
	// installed one was current.
	Updated bool
	// Old is the header of the filter installed before, or nil if there
	// was none (or it was not a valid filter).
	Old *pkbf.Header
	// New is the header of the filter installed now.
	New pkbf.Header
	// Size is the filter file's size; Received the bytes downloaded by
	// this call (less than Size when it resumed an earlier download).
	Size, Received int64
	// Resumed is true when the download continued an earlier one.
	Resumed bool
	// SHA256 is the digest the filter was checked against (Options.SHA256
	// or SHA256URL), or nil; SignedBy the key whose signature verified it
	// (Options.SignatureURL), or nil. When the installed filter was
	// current and already verified under the same pins, both are nil.
	SHA256   []byte
	SignedBy ssh.PublicKey
}

// Update makes the filter file at path current with the one at rawURL
// (http or https). It sends a conditional request (If-None-Match with the
// ETag of the installed file, If-Modified-Since with its modification
// time); a 304 answer means the installed filter is current, and nothing
// is written. Otherwise it streams the response to .FILTER.download beside
// path, checking as it goes that the size the filter's header declares is
// the size the server announced (Content-Length) and the size it sends,
// and at most Options.MaxSize. The complete file is synced and checked as
// [pkbf.Open] checks a filter, and compared with the installed one: an
// older filter is refused (an error wrapping [ErrOlder]) unless
// Options.Force is set, and identical content means the installed one
// is current. Then it is read once: it must match its pins
// ([ErrNotAuthentic]), have about the bits set its entry count implies
// ([ErrImplausibleFill]) and, with the installed filter's parameters, hold
// every bit that one holds ([ErrDropsBits], unless Options.Force). Then it
// is renamed over path, the directory synced, and its modification time
// set to the server's Last-Modified.
//
// Any error leaves the installed filter as it was. A cancelled ctx stops
// the update, keeping the partial download to be resumed. Errors name the
// URL (without its query) or the file they are about.
func Update(ctx context.Context, rawURL, path string, opts Options) (Result, error) {
	if err := opts.check(); err != nil {
		return Result{}, err
	}
	up := &updater{opts: opts}
	u, err := up.checkURL(rawURL)
	if err != nil {
		if !errors.Is(err, ErrPlainHTTP) {
			err = perr.Errorf("%w%s", err, swappedHint(path))
		}
		return Result{}, err
	}
	up.url = u
	if err := up.checkPinOptions(); err != nil {
		return Result{}, err
	}
	target, _, err := mapfile.ReplaceTarget(path)
	if err != nil {
		return Result{}, perr.Errorf("update: %w", err)
	}
	up.path = target
	for _, dir := range []string{filepath.Dir(path), filepath.Dir(target)} {
		if err := checkDir(dir); err != nil {
			return Result{}, err
		}
	}
	up.setDefaults()
	ctx, cancel := context.WithTimeoutCause(ctx, up.opts.MaxTime, errMaxTime)
	defer cancel()
	dir, base := filepath.Split(target)
	up.download = filepath.Join(dir, "."+base+".download")
	up.statePath = filepath.Join(dir, "."+base+".update.json")
	unlock, err := lockUpdate(ctx, filepath.Join(dir, "."+base+".update.lock"), target, up.logf)
	if err != nil {
		return Result{}, up.deadline(ctx, err)
	}
	defer unlock()
	sweepStateTemps(up.statePath)
	if err := up.readInstalled(); err != nil {
		return Result{}, err
	}
	up.state = loadState(up.statePath)
	return up.run(ctx)
}

// checkURL parses a URL Update is to fetch: http or https, with a host;
// plain http only with Options.AllowHTTP and never with credentials.
func (up *updater) checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, perr.Errorf("update: %q is not an http or https URL", raw)
	}
	if u.Scheme == "http" {
		switch {
		case len(up.opts.Header) > 0 || u.User != nil:
			return nil, perr.Kind(ErrPlainHTTP, perr.Errorf("update: %s is plain http: credentials are never sent over it (use https)", redactURL(u)))
		case !up.opts.AllowHTTP:
			return nil, perr.Kind(ErrPlainHTTP, perr.Errorf("update: %s is plain http: anyone on the path could replace the filter; use https, or allow http and pin the filter", redactURL(u)))
		}
	}
	return u, nil
}

// swappedHint says that the arguments look swapped: a path given where
// the URL goes and a URL where the path goes.
func swappedHint(path string) string {
	if u, err := url.Parse(path); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return fmt.Sprintf(" (%s is a URL: the URL comes first, then the filter's path)", redactURL(u))
	}
	return ""
}

// check refuses negative options: 0 is "the default", a negative value
// is a mistake.
func (o *Options) check() error {
	for _, v := range []struct {
		name  string
		value int64
	}{{"MaxSize", o.MaxSize}, {"MaxAge", int64(o.MaxAge)}, {"Stall", int64(o.Stall)}, {"MinRate", o.MinRate}, {"RateWindow", int64(o.RateWindow)}, {"MaxTime", int64(o.MaxTime)}} {
		if v.value < 0 {
			return perr.Errorf("update: Options.%s is negative; 0 means the default", v.name)
		}
	}
	return nil
}

// errMaxTime is the cause of the context of an update that ran out of
// Options.MaxTime.
var errMaxTime = errors.New("out of time")

// deadline words err, an attempt's failure, as running out of MaxTime
// when that is what ended it.
func (up *updater) deadline(ctx context.Context, err error) error {
	if context.Cause(ctx) != errMaxTime {
		return err
	}
	kept := ""
	if fi, serr := os.Lstat(up.download); serr == nil && fi.Size() > 0 {
		kept = "; the download so far is kept for the next update"
	}
	return up.errorf("gave up after %s, the time an update may take (%v)%s", up.opts.MaxTime, unretry(err), kept)
}

// updater is one Update call.
type updater struct {
	opts      Options
	url       *url.URL
	path      string
	download  string // .FILTER.download
	statePath string // .FILTER.update.json
	state     state
	old       *pkbf.Header // the installed filter
	oldInfo   fs.FileInfo
	pins      pins
	res       Result
}

func (up *updater) setDefaults() {
	o := &up.opts
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxSize
	}
	switch {
	case o.Retries == 0:
		o.Retries = DefaultRetries
	case o.Retries < 0:
		o.Retries = 0
	}
	if o.Stall == 0 {
		o.Stall = DefaultStall
	}
	if o.MinRate == 0 {
		o.MinRate = DefaultMinRate
	}
	if o.RateWindow == 0 {
		o.RateWindow = DefaultRateWindow
	}
	if o.MaxTime == 0 {
		o.MaxTime = DefaultMaxTime
	}
	if o.Client == nil {
		o.Client = defaultClient()
	}
	c := *o.Client // our copy, to drop credentials on redirects to another host
	c.CheckRedirect = redirectPolicy(o.Client.CheckRedirect, o.Header, o.AllowHTTP)
	o.Client = &c
	if o.sleep == nil {
		o.sleep = retryafter.Sleep
	}
}

func (up *updater) logf(format string, args ...any) {
	if up.opts.Logf != nil {
		up.opts.Logf(format, args...)
	}
}

func defaultClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = http.ProxyFromEnvironment
	t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 30 * time.Second
	t.ResponseHeaderTimeout = 60 * time.Second
	return &http.Client{Transport: t}
}

// redirectPolicy refuses a redirect to plain http unless allowHTTP,
// removes the caller's headers h (and any Authorization or Cookie) from a
// request a redirect sends to another host or over http, and the Referer
// from every redirected request (net/http sets it to the URL before,
// query and all, which may hold a token), then applies next (the client's
// own policy, or the default of at most 10 redirects).
func redirectPolicy(next func(*http.Request, []*http.Request) error, h http.Header, allowHTTP bool) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "https" && req.URL.Scheme != "http" {
			return &permanentError{perr.Errorf("redirected to %s, not an http or https URL: refused", redactURL(req.URL))}
		}
		if req.URL.Scheme != "https" && !allowHTTP {
			return perr.Kind(ErrPlainHTTP, perr.Errorf("redirected to %s, plain http: refused (anyone on the path could replace the filter)", redactURL(req.URL)))
		}
		req.Header.Del("Referer")
		if req.URL.Scheme != "https" || req.URL.Host != via[0].URL.Host {
			for name := range h {
				req.Header.Del(name)
			}
			req.Header.Del("Authorization")
			req.Header.Del("Cookie")
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return &permanentError{errors.New("stopped after 10 redirects")}
		}
		return nil
	}
}

// lockUpdate takes the update lock of path, waiting for another update to
// finish (or ctx to end), and returns its release.
func lockUpdate(ctx context.Context, lockPath, path string, logf func(string, ...any)) (func(), error) {
	// 0600: a user who could open it could hold a shared lock and stop
	// every update.
	f, err := openSideFile(lockPath, os.O_RDWR)
	if err != nil {
		return nil, perr.Errorf("update: the lock beside %s: %w", path, err)
	}
	for waited := false; ; waited = true {
		ok, err := mapfile.TryLockFile(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		if ok {
			return func() { mapfile.UnlockFile(f); f.Close() }, nil
		}
		if !waited {
			logf("waiting for another update of %s to finish", path)
		}
		if err := retryafter.Sleep(ctx, 100*time.Millisecond); err != nil {
			f.Close()
			return nil, err
		}
	}
}

// readInstalled reads the installed filter's header. A file there that is
// not a readable filter is refused, unless Options.ReplaceInvalid.
func (up *updater) readInstalled() error {
	f, err := pkbf.Open(up.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil && up.opts.ReplaceInvalid:
		up.logf("%v: replacing it", err)
		return nil
	case err != nil:
		return perr.Kind(ErrNotFilter, perr.Errorf("%w; an update replaces only a filter (nothing was downloaded)", err))
	}
	defer f.Close()
	h := f.Header()
	fi, err := os.Stat(up.path)
	if err != nil {
		return perr.Errorf("update: %w", err)
	}
	up.old, up.oldInfo = &h, fi
	up.res.Old = &h
	return nil
}

// state is what .FILTER.update.json remembers.
type state struct {
	// Of the installed file: the URL it came from, the server's validators
	// and the header they go with (hex), so that a file replaced by other
	// means is not mistaken for the one they describe. They stay until
	// another file is installed, whatever happens to other downloads.
	URL          string `json:"url"`
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
	Header       string `json:"header,omitempty"`
	// The pins (pinID) that verified the installed file, if any.
	Verified string `json:"verified,omitempty"`
	// Of .FILTER.download: the URL and validators of the response it is
	// part of.
	PartialURL          string `json:"partial_url,omitempty"`
	PartialETag         string `json:"partial_etag,omitempty"`
	PartialLastModified string `json:"partial_last_modified,omitempty"`
}

// openSideFile opens (creating it if need be) one of the files Update
// keeps beside the filter: never through a symbolic link, only a regular
// file, and readable by its owner alone (an older one is made so).
func openSideFile(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|os.O_CREATE|oNoFollow, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: path, Err: errors.New("not a regular file")}
	}
	if err == nil && fi.Mode().Perm() != 0o600 {
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// loadState reads the state file; an unreadable one (or a link) is no
// state.
func loadState(path string) state {
	var st state
	if b, err := readNoFollow(path); err == nil && json.Unmarshal(b, &st) == nil {
		if st.PartialURL == "" { // written before the partial had a URL of its own
			st.PartialURL = st.URL
		}
		return st
	}
	return state{}
}

// readNoFollow reads a small file, not through a symbolic link.
func readNoFollow(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSmallFile))
}

// saveState writes the state file, mode 0600, through a new temporary
// file renamed over it: a link planted there is replaced, not followed.
func (up *updater) saveState() {
	b, _ := json.MarshalIndent(up.state, "", "  ")
	dir, base := filepath.Split(up.statePath)
	err := func() error {
		f, err := os.CreateTemp(dir, base+".*")
		if err != nil {
			return err
		}
		_, err = f.Write(append(b, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), up.statePath)
		}
		if err != nil {
			os.Remove(f.Name())
		}
		return err
	}()
	if err != nil {
		up.logf("could not save %s: %v (the next update downloads the whole filter)", up.statePath, err)
	}
}

// sweepStateTemps removes the temporary state files of updates killed
// while saving (saveState's, named after the state file): only one
// update runs at a time, under the lock the caller holds.
func sweepStateTemps(statePath string) {
	dir, base := filepath.Split(statePath)
	if dir == "" {
		dir = "."
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), base+".") && e.Type().IsRegular() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// headerHex is a header's bytes in hex, as the state keeps it.
func headerHex(h pkbf.Header) string {
	b, _ := h.AppendBinary(nil)
	return hex.EncodeToString(b)
}

// run makes attempts until one succeeds, fails for good, or the retries
// are spent.
func (up *updater) run(ctx context.Context) (Result, error) {
	for attempt := 0; ; attempt++ {
		err := up.attempt(ctx)
		if err == nil {
			return up.res, nil
		}
		if ctx.Err() != nil {
			if context.Cause(ctx) == errMaxTime {
				return up.res, up.deadline(ctx, err)
			}
			return up.res, ctx.Err()
		}
		var re *retryError
		if !errors.As(err, &re) || attempt >= up.opts.Retries {
			return up.res, err
		}
		wait := min(time.Second<<attempt, 5*time.Minute)
		wait += rand.N(wait / 4) // jitter: many machines share a publisher
		if re.after > 0 {
			wait = re.after
		}
		up.logf("%v; retrying in %s (%d of %d)", re.err, wait.Round(time.Millisecond), attempt+1, up.opts.Retries)
		if serr := up.opts.sleep(ctx, wait); serr != nil {
			if context.Cause(ctx) == errMaxTime {
				return up.res, up.deadline(ctx, err)
			}
			return up.res, serr
		}
	}
}

// retryError is a failure worth another attempt; after is the server's
// Retry-After, or 0.
type retryError struct {
	err   error
	after time.Duration
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

func retry(err error) error { return &retryError{err: err} }

// unretry is err without its retryError wrapper, so that the error it
// holds is worded as itself (one prefix) where it is quoted.
func unretry(err error) error {
	if re, ok := err.(*retryError); ok {
		return re.err
	}
	return err
}

// permanentError is a refusal no retry would mend (a redirect to a
// scheme that is not http or https, too many redirects).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// where names the URL in messages: without its query or user
// information, which may hold credentials.
func (up *updater) where() string { return redactURL(up.url) }

// stateURL is how the state file names a URL: as it is, or, when it
// holds credentials (a user, a query), without them and with the SHA-256
// of the whole URL, so that the file tells one URL from another without
// keeping a password or a token.
func stateURL(u *url.URL) string {
	if u.User == nil && u.RawQuery == "" && u.Fragment == "" {
		return u.String()
	}
	return fmt.Sprintf("%s (credentials not kept; URL sha256 %x)", redactURL(u), sha256.Sum256([]byte(u.String())))
}

func redactURL(u *url.URL) string {
	c := *u
	c.RawQuery, c.User, c.Fragment = "", nil, ""
	return c.String()
}

func (up *updater) errorf(format string, args ...any) error {
	return perr.Errorf("update from %s: "+format, append([]any{up.where()}, args...)...)
}

// attempt is one request and what follows it.
func (up *updater) attempt(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, up.url.String(), nil)
	if err != nil {
		return up.errorf("%v", err)
	}
	up.addHeader(req)
	req.Header.Set("Accept-Encoding", "identity") // the bytes as they are: their count is checked
	req.Header.Set("User-Agent", "pkbf-update")
	have := up.partialSize()
	switch {
	case have > 0:
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
		req.Header.Set("If-Range", firstSet(up.state.PartialETag, up.state.PartialLastModified))
	case up.old != nil && up.state.URL == stateURL(up.url) && up.state.Header == headerHex(*up.old) &&
		(!up.pinned() || up.state.Verified == up.pinID()):
		// The installed file is the one the server described: its time is
		// the server's Last-Modified (a file put there by other means has
		// a time of its own, and would be taken for current). With pins,
		// it is also one they verified: else the server's file is fetched
		// to be verified.
		if up.state.ETag != "" {
			req.Header.Set("If-None-Match", up.state.ETag)
		}
		if up.state.LastModified != "" {
			req.Header.Set("If-Modified-Since", up.oldInfo.ModTime().UTC().Format(http.TimeFormat))
		}
	}
	conditional := req.Header.Get("If-None-Match") != "" || req.Header.Get("If-Modified-Since") != ""
	resp, err := up.opts.Client.Do(req)
	if err != nil {
		return up.clientError(up.where(), err)
	}
	defer resp.Body.Close()
	switch code := resp.StatusCode; {
	case code == http.StatusNotModified && conditional:
		up.res.New, up.res.Size = *up.old, up.oldInfo.Size()
		return up.checkAge(*up.old, "the installed filter, which the server says is current,")
	case code == http.StatusNotModified:
		return up.errorf("%s to a request that was not conditional: the server did not send a filter (nothing installed can be current: none is known to come from it)", resp.Status)
	case code == http.StatusOK: // the whole file, even if a range was asked for
		have, up.res.Resumed = 0, false
	case code == http.StatusPartialContent && have == 0:
		return up.errorf("%s to a request for the whole file: the server sent a part nobody asked for", resp.Status)
	case code == http.StatusPartialContent:
		start, total, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			os.Remove(up.download)
			return retry(up.errorf("the server sent a range from byte %d, %d were asked for: starting again", start, have))
		}
		up.res.Resumed = true
		resp.ContentLength = total // the whole file's (-1: not said), as a 200's would be
	case code == http.StatusRequestedRangeNotSatisfiable:
		os.Remove(up.download)
		return retry(up.errorf("the server cannot resume the download (416): starting again"))
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return up.errorf("%s: the server refused the request; check the credentials header (they are not shown here)", resp.Status)
	case code == http.StatusTooManyRequests || code >= 500:
		return &retryError{err: up.errorf("%s", resp.Status), after: retryafter.Parse(resp.Header.Get("Retry-After"), maxRetryAfter)}
	default:
		return up.errorf("%s", resp.Status)
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		return up.errorf("the response is %s-encoded, though the bytes as they are were asked for", enc)
	}
	if err := up.fetchPins(ctx); err != nil {
		return err
	}
	up.state.PartialURL = stateURL(up.url)
	up.state.PartialETag, up.state.PartialLastModified = strongETag(resp.Header.Get("ETag")), resp.Header.Get("Last-Modified")
	up.saveState()
	if err := up.receive(ctx, cancel, resp, have); err != nil {
		var re *retryError
		if !errors.As(err, &re) && ctx.Err() == nil {
			os.Remove(up.download) // refused: nothing to resume
			up.state.PartialURL, up.state.PartialETag, up.state.PartialLastModified = "", "", ""
			up.saveState()
		}
		return err
	}
	return up.install(resp)
}

// addHeader adds Options.Header to a request.
func (up *updater) addHeader(req *http.Request) {
	for name, values := range up.opts.Header {
		req.Header[http.CanonicalHeaderKey(name)] = values
	}
}

// clientError words an error from the client about a request to where:
// retried, unless a redirect to plain http was refused.
func (up *updater) clientError(where string, err error) error {
	var ue *url.Error
	if errors.Is(err, ErrPlainHTTP) && errors.As(err, &ue) {
		return perr.Errorf("update from %s: %w", where, ue.Err) // the refusal's own words, and its kind
	}
	var pe *permanentError
	if errors.As(err, &pe) {
		return perr.Errorf("update from %s: %w", where, pe.err)
	}
	return retry(perr.Errorf("update from %s: %v", where, redact(err)))
}

// firstSet returns a if it is set, else b.
func firstSet(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// strongETag returns etag unless it is weak (W/"..."), which If-Range may
// not use.
func strongETag(etag string) string {
	if strings.HasPrefix(etag, "W/") {
		return ""
	}
	return etag
}

// partialSize is the size of a partial download that can be resumed: one
// whose response had a validator to resume it under.
func (up *updater) partialSize() int64 {
	fi, err := os.Lstat(up.download)
	if err != nil {
		return 0
	}
	if !fi.Mode().IsRegular() { // a link or worse: not ours
		os.Remove(up.download)
		return 0
	}
	if up.state.PartialURL != stateURL(up.url) || up.state.PartialETag == "" && up.state.PartialLastModified == "" {
		os.Remove(up.download)
		return 0
	}
	return fi.Size()
}

// contentRange parses "bytes START-END/TOTAL"; total is -1 for "*".
func contentRange(s string) (start, total int64, ok bool) {
	rest, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return 0, 0, false
	}
	span, size, ok := strings.Cut(rest, "/")
	first, _, ok2 := strings.Cut(span, "-")
	if !ok || !ok2 {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if size == "*" {
		return start, -1, true
	}
	total, err = strconv.ParseInt(size, 10, 64)
	return start, total, err == nil
}

// maxRetryAfter caps the wait a server's Retry-After asks for.
const maxRetryAfter = 5 * time.Minute

// redact removes the URL from a client error (the message names it
// without its query or user information, which may hold credentials).
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// receive writes the body to the download file, from byte have, checking
// sizes as it goes.
func (up *updater) receive(ctx context.Context, cancel context.CancelCauseFunc, resp *http.Response, have int64) error {
	file, err := openSideFile(up.download, os.O_WRONLY)
	if err != nil {
		return perr.Errorf("update: %w", err)
	}
	defer file.Close()
	if err := file.Truncate(have); err != nil {
		return perr.Errorf("update: %w", err)
	}
	if _, err := file.Seek(have, io.SeekStart); err != nil {
		return perr.Errorf("update: %w", err)
	}
	w := &checker{up: up, file: file, done: have, announced: resp.ContentLength}
	if have > 0 { // the header is in the part already received
		if err := w.readHeader(up.download); err != nil {
			return err
		}
	}
	stalled := errors.New("stalled")
	timer := time.AfterFunc(up.opts.Stall, func() { cancel(stalled) })
	defer timer.Stop()
	body := &resetReader{r: resp.Body, timer: timer, after: up.opts.Stall}
	stopRate := watchRate(&body.n, up.opts.MinRate, up.opts.RateWindow, func(err error) { cancel(err) })
	_, err = io.Copy(w, body)
	stopRate()
	up.res.Received += w.done - have
	var slow *slowError
	switch {
	case context.Cause(ctx) == stalled:
		return retry(up.errorf("no data for %s after %d bytes", up.opts.Stall, w.done))
	case errors.As(context.Cause(ctx), &slow):
		return retry(up.errorf("%v after %d bytes", slow, w.done))
	case ctx.Err() != nil:
		return ctx.Err()
	case w.err != nil:
		return w.err
	case err != nil:
		return retry(up.errorf("the body broke off after %d bytes: %v", w.done, err))
	case w.total == 0 || w.done < w.total:
		return retry(up.errorf("the body ended after %d bytes, the filter's header says %d", w.done, w.total))
	}
	if err := file.Sync(); err != nil {
		return perr.Errorf("update: %w", err)
	}
	return file.Close()
}

// resetReader pushes a stall timer back whenever bytes arrive, and
// counts them for watchRate.
type resetReader struct {
	r     io.Reader
	timer *time.Timer
	after time.Duration
	n     atomic.Int64
}

func (r *resetReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.timer.Reset(r.after)
		r.n.Add(int64(n))
	}
	return n, err
}

// slowError is a body that arrived too slowly: got bytes in a window.
type slowError struct {
	got, min int64
	window   time.Duration
}

func (e *slowError) Error() string {
	return fmt.Sprintf("%s/s for %s, below the minimum of %s/s", rate(float64(e.got)/e.window.Seconds()), e.window, rate(float64(e.min)))
}

// rate words a number of bytes a second: "0.9 B", "12.5 KiB".
func rate(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB"}
	i := 0
	for ; v >= 1024 && i < len(units)-1; i++ {
		v /= 1024
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// watchRate calls fail once if fewer than minRate bytes a second were
// counted in n over any window (windows follow one another from the
// start). Call the returned function to stop watching.
func watchRate(n *atomic.Int64, minRate int64, window time.Duration, fail func(error)) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(window)
		defer tick.Stop()
		var last int64
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				now := n.Load()
				if got := now - last; float64(got) < float64(minRate)*window.Seconds() {
					fail(&slowError{got: got, min: minRate, window: window})
					return
				}
				last = now
			}
		}
	}()
	return func() { close(done) }
}

// checker writes the download, reading the filter's header on the way to
// check the file's size against the server's and the limits.
type checker struct {
	up        *updater
	file      *os.File
	hdr       []byte // the header's bytes, until complete
	total     int64  // the file size the header declares; 0 until known
	done      int64  // bytes of the file written
	announced int64  // the server's size of the whole file, or -1
	err       error  // a failure that no retry would mend
}

func (c *checker) Write(p []byte) (int, error) {
	if c.total == 0 {
		need := pkbf.HeaderSize - len(c.hdr)
		c.hdr = append(c.hdr, p[:min(need, len(p))]...)
		if len(c.hdr) == pkbf.HeaderSize {
			if err := c.setHeader(); err != nil {
				c.err = err
				return 0, err
			}
		}
	}
	if c.total > 0 && c.done+int64(len(p)) > c.total {
		c.err = c.up.errorf("the server sends more than the %d bytes the filter's header declares", c.total)
		return 0, c.err
	}
	n, err := c.file.Write(p)
	c.done += int64(n)
	if err != nil {
		c.err = perr.Errorf("update: writing %s: %w", c.up.download, err)
		return n, c.err
	}
	if c.up.opts.Progress != nil {
		c.up.opts.Progress(c.done, c.total)
	}
	return n, nil
}

// readHeader reads the header of a resumed download from its first part.
func (c *checker) readHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return perr.Errorf("update: %w", err)
	}
	defer f.Close()
	b := make([]byte, pkbf.HeaderSize)
	n, _ := io.ReadFull(f, b)
	c.hdr = b[:n]
	if n == pkbf.HeaderSize {
		return c.setHeader()
	}
	return nil
}

func (c *checker) setHeader() error {
	h, err := pkbf.ParseHeader(c.hdr)
	if err != nil {
		return c.up.errorf("not a pkbfv1 filter: %w", err)
	}
	size := h.FileSize()
	switch {
	case size > uint64(c.up.opts.MaxSize):
		return c.up.errorf("the filter is %d bytes (hash length %d), over the limit of %d", size, h.HashLength, c.up.opts.MaxSize)
	case c.announced >= 0 && uint64(c.announced) != size:
		return c.up.errorf("the server says the file is %d bytes, the filter's header says %d", c.announced, size)
	}
	c.total = int64(size)
	return nil
}

// install checks the complete download and renames it over the filter,
// unless it is older than the installed one or the same.
func (up *updater) install(resp *http.Response) error {
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
	lastModified := resp.Header.Get("Last-Modified")
	remember := func() {
		up.state = state{URL: stateURL(up.url), ETag: resp.Header.Get("ETag"), LastModified: lastModified, Header: headerHex(h)}
		if up.pinned() {
			up.state.Verified = up.pinID()
		}
		up.saveState()
	}
	defer func() {
		// A refused download is gone: its validators go too, and the
		// installed file's stay.
		if _, err := os.Stat(up.download); errors.Is(err, fs.ErrNotExist) && up.state.PartialURL != "" {
			up.state.PartialURL, up.state.PartialETag, up.state.PartialLastModified = "", "", ""
			up.saveState()
		}
	}()
	if err := up.checkAge(h, "the filter"); err != nil {
		os.Remove(up.download)
		return err
	}
	old := up.old
	if old != nil {
		switch {
		case *old == h:
			same, err := sameContent(up.download, up.path)
			if err != nil {
				return perr.Errorf("update: comparing the download with the installed filter: %w", err)
			}
			if same {
				// The installed file: current, once its pins verify it.
				if _, err := up.verify(h, false); err != nil {
					return perr.Errorf("%w (the installed filter %s holds the same bytes)", err, up.path)
				}
				os.Remove(up.download)
				remember() // the server's validators now describe the installed file
				return nil
			}
			if !up.opts.Force {
				os.Remove(up.download)
				return perr.Errorf("%w: revision %d updated %s, in both; one was changed without a new revision; %s not replaced (force installs it)",
					ErrSameHeader, h.Revision, headertext.Updated(h.Updated), up.path)
			}
		case !up.opts.Force && (h.Revision < old.Revision || h.Revision == old.Revision && unixTime(h) < unixTime(*old)):
			os.Remove(up.download)
			return perr.Errorf("%w: revision %d updated %s, installed revision %d updated %s; %s not replaced (force installs it)",
				ErrOlder, h.Revision, headertext.Updated(h.Updated), old.Revision, headertext.Updated(old.Updated), up.path)
		}
	}
	if !up.opts.Force {
		if err := up.checkLockIn(old, h); err != nil {
			os.Remove(up.download)
			return err
		}
	}
	if old != nil && !up.opts.Force {
		if err := up.checkWeaker(*old, h); err != nil {
			os.Remove(up.download)
			return err
		}
	}
	// With at least the installed filter's hashes and length, every bit the
	// installed one has set must answer in the new one.
	compare := old != nil && h.HashCount >= old.HashCount && h.HashLength >= old.HashLength
	if _, err := up.verify(h, compare); err != nil {
		return err
	}
	mode := fs.FileMode(0o644) // the download's 0600 kept it from other users until now
	if old != nil {
		mode = up.oldInfo.Mode().Perm()
	}
	if err := os.Chmod(up.download, mode); err != nil {
		return perr.Errorf("update: %w", err)
	}
	if err := os.Rename(up.download, up.path); err != nil {
		return perr.Errorf("update: %w", err)
	}
	if err := mapfile.SyncDir(filepath.Dir(up.path)); err != nil {
		return perr.Errorf("update: %w", err)
	}
	if t, err := http.ParseTime(lastModified); err == nil {
		os.Chtimes(up.path, t, t) // for If-Modified-Since next time
	}
	up.res.Updated = true
	remember()
	return nil
}

// verify reads the complete download once and checks it against its
// pins, its entry count and, when compare (the installed filter has its
// parameters), the installed filter's bits, in that order. A download it
// refuses is removed.
func (up *updater) verify(h pkbf.Header, compare bool) (scanned, error) {
	s, err := up.scan(h, compare)
	if err != nil {
		return s, err
	}
	signer, err := up.checkPins(s)
	if err == nil {
		err = up.checkFill(h, s)
	}
	if err == nil && !up.opts.Force {
		err = up.checkSaturated(h, s.set)
	}
	if err == nil && s.compared && s.dropped > 0 && !up.opts.Force {
		err = perr.Kind(ErrDropsBits, up.errorf("the filter lacks %d of the bits set in the installed filter %s (revision %d -> %d): keys it reports would stop being reported; not replaced (force installs it)",
			s.dropped, up.path, up.old.Revision, h.Revision))
	}
	if err != nil {
		os.Remove(up.download)
		return s, err
	}
	up.res.SHA256, up.res.SignedBy = s.sha256, signer
	return s, nil
}

// unixTime is a header's update time as the file stores it: unsigned, so
// that times past 2^63 seconds order after the others.
func unixTime(h pkbf.Header) uint64 { return uint64(h.Updated.Unix()) }

// sameContent reports whether the files a and b hold the same bytes.
func sameContent(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
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
