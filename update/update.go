package update

import (
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/retryafter"
)

// Defaults of Options' zero values.
const (
	// DefaultMaxSize admits hash lengths up to 30 (128 MiB and a header):
	// 2^30 bits hold 37 million keys at a false-positive rate of 10^-6,
	// many times the publisher's list.
	DefaultMaxSize    = 256 << 20
	DefaultMaxFPRate  = 0.01
	DefaultRetries    = 4
	DefaultStall      = time.Minute
	DefaultMinRate    = 1 << 10 // bytes a second, over DefaultRateWindow
	DefaultRateWindow = 30 * time.Second
	DefaultMaxTime    = 2 * time.Hour
)

// ErrNotFilter is wrapped by the error Update returns, before any request,
// when the file at the filter's path is not a readable pkbfv1 filter and
// Options.ReplaceInvalid is not set.
var ErrNotFilter = perr.New("the file to be replaced is not a readable filter")

// Refused reports whether err is update's rule refusing the server's
// filter (ErrOlder, ErrSameHeader, ErrLockIn, ErrStale, ErrNotAuthentic,
// ErrDropsBits, ErrWeaker, ErrUnverifiable, ErrSaturated,
// ErrImplausibleFill), not a failure to fetch or install it: a program
// must neither retry such an error as a network failure nor take it for
// "up to date".
func Refused(err error) bool {
	for _, kind := range []error{ErrOlder, ErrSameHeader, ErrLockIn, ErrStale, ErrNotAuthentic,
		ErrDropsBits, ErrWeaker, ErrUnverifiable, ErrSaturated, ErrImplausibleFill} {
		if errors.Is(err, kind) {
			return true
		}
	}
	return false
}

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
	// be https, and so must its redirects, whatever AllowHTTP says. From
	// the filter's source (any hop of either's redirects shared, an
	// address shared: two names of one server, one proxy) it proves only
	// the transfer; from another source, that a second server agrees
	// (see the package doc).
	SHA256URL string
	// SignatureURL pins the filter to a detached SSH signature published
	// at this URL, as ssh-keygen -Y sign -n pkbf makes it (FILTER.sig),
	// by one of SignerKeys (ParseSignerKeys reads them from a .pub file).
	// The signature covers the exact bytes installed.
	SignatureURL string
	SignerKeys   []ssh.PublicKey
	// AcceptRebuild installs a filter that the ordering and superset
	// rules refuse (ErrOlder, ErrSameHeader, ErrWeaker, ErrUnverifiable,
	// ErrDropsBits): a publisher's rebuild, or the genuine filter after
	// one with injected bits. Every other check still holds.
	AcceptRebuild bool
	// MaxFPRate is the highest false-positive rate, estimated from the
	// bits set, of an unpinned filter: it may also reach twice the
	// installed filter's. 0 means DefaultMaxFPRate.
	MaxFPRate float64
	// Force installs what AcceptRebuild does, and a filter whose update
	// time is in the future (ErrLockIn) or that answers "probably" for
	// too many keys (ErrSaturated). It never installs one over MaxSize,
	// failing the fill check, MaxAge or a pin.
	Force bool
	// MaxAge, if set, refuses a filter whose header's update time is more
	// than MaxAge ago (ErrStale): a server that keeps serving an old
	// filter, signed or not, is noticed. The server's current filter is
	// checked whether it is installed now or was already (its header the
	// installed one's), so a stale installed filter is an error too. Force
	// does not override it.
	MaxAge time.Duration
	// ReplaceInvalid lets Update replace a file at the filter's path that
	// is not a readable pkbfv1 filter (a file cut short, say). Without it
	// such a file is refused before any request (ErrNotFilter).
	ReplaceInvalid bool
	// MaxSize refuses a filter larger than this many bytes, before any of
	// it is written; 0 means DefaultMaxSize.
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
	// MaxTime bounds the whole call, waiting for another update or for
	// the filter's lock, retries and their pauses included; 0 means
	// DefaultMaxTime. The download so far is kept, to be resumed.
	MaxTime time.Duration
	// Progress, if set, is called as the filter arrives, with the bytes of
	// the file received (counting a resumed download's earlier part) and
	// its size (0 until the header has arrived).
	Progress func(done, total int64)
	// Logf, if set, is told of retries and of waiting for another update
	// or for the filter's lock.
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
// (http or https), as the package doc describes. It asks for the server's
// header first: the header of the filter it installed means the installed
// filter is current, and nothing is written. Otherwise it streams the
// server's filter to .FILTER.download beside path,
// checks it and compares it with the installed filter, and renames it
// over path under the filter's flock(2). A filter refused by the rule is
// an error wrapping the sentinel that names the rule.
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
	up.from.addURL(u)
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
	defer up.closeInstalled()
	if err := up.readInstalled(); err != nil {
		return Result{}, err
	}
	mapfile.SweepTemps(up.statePath) // a state file's save that was killed
	up.state = loadState(up.statePath, up.logf)
	return up.run(ctx)
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
	if !(o.MaxFPRate >= 0 && o.MaxFPRate < 1) { // NaN too
		return perr.Errorf("update: Options.MaxFPRate %v is not a rate below 1; 0 means the default", o.MaxFPRate)
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
	if size, _ := fileSize(up.download); size > 0 {
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
	installed *os.File // the installed filter, open
	replaces  bool     // a file is at path (a filter, or one ReplaceInvalid allows)
	pins      pins
	from      source // where the filter's requests went, in every attempt
	res       Result
	plainSent bool // a request refused for its header was sent again without validators
	probed    bool // the server's header was asked for
	// changedMeanwhile is set when keys were added to the installed
	// filter in place while this update ran.
	changedMeanwhile bool
}

func (up *updater) setDefaults() {
	o := &up.opts
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.MaxFPRate == 0 {
		o.MaxFPRate = DefaultMaxFPRate
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

func (up *updater) errorf(format string, args ...any) error {
	return perr.Errorf("update from %s: "+format, append([]any{up.where()}, args...)...)
}
