// Package update keeps a pkbfv1 filter file current from a publisher's
// URL, as geoipupdate keeps GeoIP databases: a conditional download (no
// transfer when nothing changed), resumed where an earlier one stopped,
// validated before anything is replaced, and installed by a rename, so that
// programs reading the filter ([pkbf.Open], [pkbf.OpenLive], pkbf serve)
// only ever see the complete old file or the complete new one.
//
// Update keeps three files beside the filter FILTER, in the same directory:
//   - .FILTER.download: the download in progress. An update stopped by a
//     signal, a crash or a broken connection leaves it, and the next update
//     resumes it (with an HTTP Range request, if the server's file is still
//     the same) or starts again. It is renamed to FILTER when complete and
//     valid, and removed when it is refused.
//   - .FILTER.update.json: what the server said of the installed file (its
//     ETag and Last-Modified), for the next conditional request. Losing it
//     costs one full download.
//   - .FILTER.update.lock: the lock that keeps two updates of FILTER from
//     running at once (flock(2); the second waits for the first).
package update

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/mapfile"
)

// Defaults of Options' zero values.
const (
	DefaultMaxSize = 64 << 30 // bytes: a filter with hash length 39
	DefaultRetries = 4
	DefaultStall   = time.Minute
)

// ErrOlder is wrapped by the error Update returns when the server's filter
// is older than the installed one (a lower revision, or the same revision
// with an earlier update time) and Options.Force is not set.
var ErrOlder = errors.New("pkbf: the server's filter is older than the installed one")

// Options adjust Update. The zero value is ready to use.
type Options struct {
	// Client makes the requests. Nil means one with proxies from the
	// environment ($HTTPS_PROXY, $HTTP_PROXY, $NO_PROXY), 30 s to connect
	// and 60 s to get a response's headers. Update does not change it; its
	// redirects are followed without Header if they lead to another host.
	Client *http.Client
	// Header is added to every request: credentials for a commercial
	// feed, for example. Its values never appear in errors or in Logf's
	// messages, and are not sent to another host a redirect leads to.
	Header http.Header
	// Force installs the server's filter even if it is older than the
	// installed one.
	Force bool
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
// Options.Force is set, and an identical header means the installed one
// is current. Then it is renamed over path, the directory synced, and its
// modification time set to the server's Last-Modified.
//
// Any error leaves the installed filter as it was. A cancelled ctx stops
// the update, keeping the partial download to be resumed. Errors name the
// URL (without its query) or the file they are about.
func Update(ctx context.Context, rawURL, path string, opts Options) (Result, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Result{}, fmt.Errorf("pkbf: update: %q is not an http or https URL", rawURL)
	}
	up := &updater{opts: opts, url: u, path: path}
	up.setDefaults()
	dir, base := filepath.Split(path)
	up.download = filepath.Join(dir, "."+base+".download")
	up.statePath = filepath.Join(dir, "."+base+".update.json")
	unlock, err := lockUpdate(ctx, filepath.Join(dir, "."+base+".update.lock"), path, up.logf)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	up.readInstalled()
	up.state = loadState(up.statePath, up.url.String())
	return up.run(ctx)
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
	if o.Client == nil {
		o.Client = defaultClient()
	}
	c := *o.Client // our copy, to drop credentials on redirects to another host
	c.CheckRedirect = dropHeaderOnRedirect(o.Client.CheckRedirect, o.Header)
	o.Client = &c
	if o.sleep == nil {
		o.sleep = sleepCtx
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

// dropHeaderOnRedirect removes the caller's headers from a request a
// redirect sends to another host, then applies next (the client's own
// policy, or the default of at most 10 redirects).
func dropHeaderOnRedirect(next func(*http.Request, []*http.Request) error, h http.Header) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != via[0].URL.Host {
			for name := range h {
				req.Header.Del(name)
			}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// lockUpdate takes the update lock of path, waiting for another update to
// finish (or ctx to end), and returns its release.
func lockUpdate(ctx context.Context, lockPath, path string, logf func(string, ...any)) (func(), error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pkbf: update: the lock beside %s: %w", path, err)
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
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			f.Close()
			return nil, err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readInstalled reads the installed filter's header, if path holds a valid
// filter.
func (up *updater) readInstalled() {
	f, err := pkbf.Open(up.path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			up.logf("the installed %s is not a valid filter (%v): it will be replaced", up.path, err)
		}
		return
	}
	defer f.Close()
	h := f.Header()
	if fi, err := os.Stat(up.path); err == nil {
		up.old, up.oldInfo = &h, fi
		up.res.Old = &h
	}
}

// state is what .FILTER.update.json remembers.
type state struct {
	URL string `json:"url"`
	// Of the installed file: the server's validators, and the header they
	// go with (hex), so that a file replaced by other means is not
	// mistaken for the one they describe.
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
	Header       string `json:"header,omitempty"`
	// Of .FILTER.download: the validators of the response it is part of.
	PartialETag         string `json:"partial_etag,omitempty"`
	PartialLastModified string `json:"partial_last_modified,omitempty"`
}

// loadState reads the state file; one for another URL, or unreadable, is
// no state.
func loadState(path, url string) state {
	var st state
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &st) == nil && st.URL == url {
		return st
	}
	return state{URL: url}
}

func (up *updater) saveState() {
	b, _ := json.MarshalIndent(up.state, "", "  ")
	if err := os.WriteFile(up.statePath, append(b, '\n'), 0o644); err != nil {
		up.logf("could not save %s: %v (the next update downloads the whole filter)", up.statePath, err)
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
		up.logf("%v; retrying in %s (%d of %d)", err, wait.Round(time.Millisecond), attempt+1, up.opts.Retries)
		if err := up.opts.sleep(ctx, wait); err != nil {
			return up.res, err
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

// where names the URL in messages: without its query or user
// information, which may hold credentials.
func (up *updater) where() string {
	u := *up.url
	u.RawQuery, u.User, u.Fragment = "", nil, ""
	return u.String()
}

func (up *updater) errorf(format string, args ...any) error {
	return fmt.Errorf("pkbf: update from %s: "+format, append([]any{up.where()}, args...)...)
}

// attempt is one request and what follows it.
func (up *updater) attempt(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, up.url.String(), nil)
	if err != nil {
		return up.errorf("%v", err)
	}
	for name, values := range up.opts.Header {
		req.Header[http.CanonicalHeaderKey(name)] = values
	}
	req.Header.Set("Accept-Encoding", "identity") // the bytes as they are: their count is checked
	req.Header.Set("User-Agent", "pkbf-update")
	have := up.partialSize()
	switch {
	case have > 0:
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
		req.Header.Set("If-Range", firstSet(up.state.PartialETag, up.state.PartialLastModified))
	case up.old != nil && up.state.Header == headerHex(*up.old):
		// The installed file is the one the server described: its time is
		// the server's Last-Modified (a file put there by other means has
		// a time of its own, and would be taken for current).
		if up.state.ETag != "" {
			req.Header.Set("If-None-Match", up.state.ETag)
		}
		if up.state.LastModified != "" {
			req.Header.Set("If-Modified-Since", up.oldInfo.ModTime().UTC().Format(http.TimeFormat))
		}
	}
	resp, err := up.opts.Client.Do(req)
	if err != nil {
		return retry(up.errorf("%v", redact(err)))
	}
	defer resp.Body.Close()
	switch code := resp.StatusCode; {
	case code == http.StatusNotModified && up.old != nil:
		up.res.New, up.res.Size = *up.old, up.oldInfo.Size()
		return nil
	case code == http.StatusOK: // the whole file, even if a range was asked for
		have, up.res.Resumed = 0, false
	case code == http.StatusPartialContent && have > 0:
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
		return &retryError{err: up.errorf("%s", resp.Status), after: retryAfter(resp.Header.Get("Retry-After"))}
	default:
		return up.errorf("%s", resp.Status)
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		return up.errorf("the response is %s-encoded, though the bytes as they are were asked for", enc)
	}
	up.state.PartialETag, up.state.PartialLastModified = strongETag(resp.Header.Get("ETag")), resp.Header.Get("Last-Modified")
	up.saveState()
	if err := up.receive(ctx, cancel, resp, have); err != nil {
		var re *retryError
		if !errors.As(err, &re) && ctx.Err() == nil {
			os.Remove(up.download) // refused: nothing to resume
		}
		return err
	}
	return up.install(resp)
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
	fi, err := os.Stat(up.download)
	if err != nil {
		return 0
	}
	if up.state.PartialETag == "" && up.state.PartialLastModified == "" {
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

// retryAfter reads a Retry-After header: seconds or an HTTP date, at most
// 5 minutes; 0 if absent.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return min(time.Duration(s)*time.Second, 5*time.Minute)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(time.Until(t), 0), 5*time.Minute)
	}
	return 0
}

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
	file, err := os.OpenFile(up.download, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("pkbf: update: %w", err)
	}
	defer file.Close()
	if err := file.Truncate(have); err != nil {
		return fmt.Errorf("pkbf: update: %w", err)
	}
	if _, err := file.Seek(have, io.SeekStart); err != nil {
		return fmt.Errorf("pkbf: update: %w", err)
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
	_, err = io.Copy(w, body)
	up.res.Received += w.done - have
	switch {
	case context.Cause(ctx) == stalled:
		return retry(up.errorf("no data for %s after %d bytes", up.opts.Stall, w.done))
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
		return fmt.Errorf("pkbf: update: %w", err)
	}
	return file.Close()
}

// resetReader pushes a stall timer back whenever bytes arrive.
type resetReader struct {
	r     io.Reader
	timer *time.Timer
	after time.Duration
}

func (r *resetReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.timer.Reset(r.after)
	}
	return n, err
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
		c.err = fmt.Errorf("pkbf: update: writing %s: %w", c.up.download, err)
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
		return fmt.Errorf("pkbf: update: %w", err)
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
		return fmt.Errorf("pkbf: update: %w", err)
	}
	up.res.New, up.res.Size = h, fi.Size()
	lastModified := resp.Header.Get("Last-Modified")
	remember := func() {
		up.state = state{URL: up.url.String(), ETag: resp.Header.Get("ETag"), LastModified: lastModified, Header: headerHex(h)}
		up.saveState()
	}
	if old := up.old; old != nil {
		switch {
		case *old == h:
			os.Remove(up.download)
			remember() // the server's validators now describe the installed file
			return nil
		case !up.opts.Force && (h.Revision < old.Revision || h.Revision == old.Revision && h.Updated.Before(old.Updated)):
			os.Remove(up.download)
			return fmt.Errorf("%w: revision %d updated %s, installed revision %d updated %s; %s not replaced (force installs it)",
				ErrOlder, h.Revision, h.Updated.Format(time.RFC3339), old.Revision, old.Updated.Format(time.RFC3339), up.path)
		}
		if err := os.Chmod(up.download, up.oldInfo.Mode().Perm()); err != nil {
			return fmt.Errorf("pkbf: update: %w", err)
		}
	}
	if err := os.Rename(up.download, up.path); err != nil {
		return fmt.Errorf("pkbf: update: %w", err)
	}
	if err := mapfile.SyncDir(filepath.Dir(up.path)); err != nil {
		return fmt.Errorf("pkbf: update: %w", err)
	}
	if t, err := http.ParseTime(lastModified); err == nil {
		os.Chtimes(up.path, t, t) // for If-Modified-Since next time
	}
	up.res.Updated = true
	remember()
	return nil
}
