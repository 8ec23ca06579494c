package update

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/retryafter"
)

// attempt is one request and what follows it.
func (up *updater) attempt(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := up.newRequest(ctx)
	if err != nil {
		return err
	}
	have := up.partialSize()
	if have > 0 {
		same, err := up.serverHasPartial(ctx)
		if err != nil {
			return err
		}
		if !same {
			up.logf("%s: the server's filter is no longer the one %s is part of: starting again", up.where(), up.download)
			up.dropDownload()
			have = 0
		}
	}
	probe := have == 0 && !up.probed && up.canProbe()
	switch {
	case have > 0:
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
		req.Header.Set("If-Range", firstSet(up.state.PartialETag, up.state.PartialLastModified))
	case probe:
		up.probed = true
		req.Header.Set("Range", fmt.Sprintf("bytes=0-%d", pkbf.HeaderSize-1))
	}
	resp, err := up.opts.Client.Do(req)
	if err != nil {
		return up.clientError(up.where(), err)
	}
	defer resp.Body.Close()
	up.from.addChain(resp.Request)
	resumed := false
	switch code := resp.StatusCode; {
	case code == http.StatusNotModified:
		return up.errorf("%s to a request that was not conditional: the server did not send a filter", resp.Status)
	case refusedForHeader(code) && have > 0 && !up.plainSent:
		// The download's validators may be what the server refused (one
		// too long for its header buffers, one it cannot parse): sent
		// again, they would be refused for ever.
		up.logf("%s: %s to a request with validators; asking again without them", up.where(), resp.Status)
		os.Remove(up.download)
		up.state.dropPartial()
		up.saveState()
		up.plainSent = true
		resp.Body.Close()
		return up.attempt(ctx)
	case probe && (code == http.StatusOK || code == http.StatusPartialContent):
		h, raw, err := up.readProbe(ctx, cancel, resp)
		if err != nil {
			return err
		}
		if up.current(h) {
			up.res.New, up.res.Size = *up.old, up.oldInfo.Size()
			return up.checkAge(h, "the installed filter, which the server says is current,")
		}
		if code == http.StatusPartialContent { // another filter: the whole of it now
			resp.Body.Close()
			return up.attempt(ctx)
		}
		// The server sent the whole file: it is the download, from its start.
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(raw), resp.Body), resp.Body}
		have, up.res.Resumed = 0, false
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
		if !up.samePartial(resp) {
			os.Remove(up.download)
			return retry(up.errorf("the server sent a part of another file than the download so far (its validators changed): starting again"))
		}
		up.res.Resumed, resumed = true, true
		resp.ContentLength = total // the whole file's (-1: not said), as a 200's would be
	case code == http.StatusRequestedRangeNotSatisfiable && probe:
		return up.errorf("%s to a request for the filter's first %d bytes: %s", resp.Status, pkbf.HeaderSize, unsatisfiable(resp.Header.Get("Content-Range")))
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
	if resp.ContentLength > up.opts.MaxSize {
		os.Remove(up.download)
		return up.errorf("the server says the file is %d bytes, over the limit of %d; nothing written", resp.ContentLength, up.opts.MaxSize)
	}
	if err := up.fetchPins(ctx); err != nil {
		return err
	}
	up.state.PartialURL = stateURL(up.url)
	up.state.PartialETag = validETag(resp.Header.Get("ETag"))
	if weakETag(up.state.PartialETag) {
		up.state.PartialETag = ""
	}
	up.state.PartialLastModified = validLastModified(resp.Header.Get("Last-Modified"), time.Now())
	up.saveState()
	if err := up.receive(ctx, cancel, resp, have); err != nil {
		var re *retryError
		if !errors.As(err, &re) && ctx.Err() == nil {
			os.Remove(up.download) // refused: nothing to resume
			up.state.dropPartial()
			up.saveState()
		}
		return err
	}
	if resumed {
		// The part just received is of the file whose header the server
		// showed before it was asked for, unless a filter was published
		// in between: the server's header, asked for again, tells.
		same, err := up.serverHasPartial(ctx)
		if err != nil {
			return err
		}
		if !same {
			up.dropDownload()
			return retry(up.errorf("the server's filter changed while the download was resumed: starting again"))
		}
	}
	return up.install(ctx)
}

// newRequest is a GET of the filter, with Options.Header.
func (up *updater) newRequest(ctx context.Context) (*http.Request, error) {
	req, err := http.NewRequestWithContext(traceSource(ctx, &up.from), http.MethodGet, up.url.String(), nil)
	if err != nil {
		return nil, up.errorf("%v", err)
	}
	up.addHeader(req)
	req.Header.Set("Accept-Encoding", "identity") // the bytes as they are: their count is checked
	req.Header.Set("User-Agent", "pkbf-update")
	return req, nil
}

// Resuming. A download's parts are kept together only when they provably
// belong to one file: the server's header (which every add changes, and
// which never returns to an earlier one) is the header of the download so
// far both before the rest is asked for and after it arrived, and the
// rest came under the validators of the first part (If-Range). Validators
// alone do not prove it: a server can keep them across revisions of one
// size (nginx serving from the Nix store: Last-Modified 1970-01-01
// 00:00:01, ETag "1-<size>").

// serverHasPartial reports whether the server's filter has the header the
// download so far begins with: it asks for the server's first bytes. A
// download too short to hold a header has not.
func (up *updater) serverHasPartial(ctx context.Context) (bool, error) {
	partial := make([]byte, pkbf.HeaderSize)
	f, err := openRegular(up.download, os.O_RDONLY, 0)
	if err != nil {
		return false, perr.Errorf("update: %w", err)
	}
	_, err = io.ReadFull(f, partial)
	f.Close()
	if err != nil {
		return false, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := up.newRequest(ctx)
	if err != nil {
		return false, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=0-%d", pkbf.HeaderSize-1))
	resp, err := up.opts.Client.Do(req)
	if err != nil {
		return false, up.clientError(up.where(), err)
	}
	defer resp.Body.Close()
	up.from.addChain(resp.Request)
	switch code := resp.StatusCode; {
	case code == http.StatusOK || code == http.StatusPartialContent:
		_, raw, err := up.readProbe(ctx, cancel, resp)
		if err != nil {
			return false, err
		}
		return bytes.Equal(raw, partial), nil
	case code == http.StatusTooManyRequests || code >= 500:
		return false, &retryError{err: up.errorf("%s", resp.Status), after: retryafter.Parse(resp.Header.Get("Retry-After"), maxRetryAfter)}
	default: // not shown to be the same file: the request for the filter says what is wrong
		return false, nil
	}
}

// dropDownload removes the download so far and its validators.
func (up *updater) dropDownload() {
	os.Remove(up.download)
	up.state.dropPartial()
	up.saveState()
}

// refusedForHeader reports whether a status says the request's header
// was refused: too large (431, 414), or malformed (400).
func refusedForHeader(code int) bool {
	return code == http.StatusRequestHeaderFieldsTooLarge || code == http.StatusRequestURITooLong || code == http.StatusBadRequest
}

// Currency. Whether the installed filter is current is decided by the
// server's header, which every add changes (its time, entry count or
// revision), compared with the installed one's: no validator the server
// gave earlier (an ETag, a Last-Modified), which a server could have
// paired with any file, decides it. A run asks for the header alone
// (Range: bytes=0-23, no conditional header); a server that ignores the
// range sends the whole file, read no further than the header when it is
// current.

// canProbe reports whether a run may start by asking for the server's
// header: Update has a record of installing a filter there, its bytes
// are confirmed (state.Confirmed) and, with pins, the pins in force
// verified it. Else the server's file is fetched whole, to be compared
// bit by bit (and verified).
func (up *updater) canProbe() bool {
	return up.old != nil && up.state.Header != "" && up.state.Confirmed && (!up.pinned() || up.state.Verified == up.pinID())
}

// current reports whether the server's filter, whose header is h, is the
// one Update installed (the header it recorded), and the installed filter
// is still that file, or that filter with keys added in place since.
// Then the server has nothing newer. A file put there by other means (an
// older one restored, say) is not current: the server's is fetched and
// judged.
func (up *updater) current(h pkbf.Header) bool {
	if up.state.Header != headerHex(h) {
		return false
	}
	if headerHex(*up.old) == up.state.Header {
		return up.state.File == fileID(up.oldInfo)
	}
	return up.addedTo(h)
}

// addedTo reports whether the installed filter is the one Update
// installed, whose header it recorded and is h, with keys added in place
// since: its parameters, a newer header.
func (up *updater) addedTo(h pkbf.Header) bool {
	old := *up.old
	return up.state.Header == headerHex(h) && headerHex(old) != up.state.Header &&
		old.HashCount == h.HashCount && old.HashLength == h.HashLength && newer(old, h)
}

// readProbe reads the header of the server's filter, parsed and as sent,
// from the answer to a request for it: a 206 of its first bytes, or a 200
// of the whole file.
func (up *updater) readProbe(ctx context.Context, cancel context.CancelCauseFunc, resp *http.Response) (pkbf.Header, []byte, error) {
	size := resp.ContentLength // the whole file's, or -1
	if resp.StatusCode == http.StatusPartialContent {
		start, total, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || start != 0 {
			return pkbf.Header{}, nil, retry(up.errorf("the server sent %q for the filter's first %d bytes", resp.Header.Get("Content-Range"), pkbf.HeaderSize))
		}
		size = total
	}
	if size >= 0 && size < pkbf.HeaderSize {
		return pkbf.Header{}, nil, up.errorf("not a pkbfv1 filter: the server's file is %d bytes, shorter than a header", size)
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		return pkbf.Header{}, nil, up.errorf("the response is %s-encoded, though the bytes as they are were asked for", enc)
	}
	stalled := errors.New("stalled")
	timer := time.AfterFunc(up.opts.Stall, func() { cancel(stalled) })
	defer timer.Stop()
	b := make([]byte, pkbf.HeaderSize)
	n, err := io.ReadFull(resp.Body, b)
	switch {
	case context.Cause(ctx) == stalled:
		return pkbf.Header{}, nil, retry(up.errorf("no data for %s after %d bytes of the filter's header", up.opts.Stall, n))
	case ctx.Err() != nil:
		return pkbf.Header{}, nil, ctx.Err()
	case err != nil:
		return pkbf.Header{}, nil, retry(up.errorf("the filter's header broke off after %d bytes: %v", n, err))
	}
	h, err := pkbf.ParseHeader(b)
	if err != nil {
		return pkbf.Header{}, nil, up.errorf("not a pkbfv1 filter: %w", err)
	}
	return h, b, nil
}

// samePartial reports whether a 206 answer is a part of the file the
// download so far is part of: its validators are the ones kept.
func (up *updater) samePartial(resp *http.Response) bool {
	if up.state.PartialETag != "" {
		return resp.Header.Get("ETag") == up.state.PartialETag
	}
	return resp.Header.Get("Last-Modified") == "" || validLastModified(resp.Header.Get("Last-Modified"), time.Now()) == up.state.PartialLastModified
}

// addHeader adds Options.Header to a request.
func (up *updater) addHeader(req *http.Request) {
	for name, values := range up.opts.Header {
		req.Header[http.CanonicalHeaderKey(name)] = values
	}
}

// firstSet returns a if it is set, else b.
func firstSet(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// partialSize is the size of a partial download that can be resumed: one
// whose response had a validator to resume it under, within MaxSize and
// the size its header declares. Any other is removed.
func (up *updater) partialSize() int64 {
	fi, err := os.Lstat(up.download)
	if err != nil {
		return 0
	}
	if !fi.Mode().IsRegular() {
		up.logf("%s is %s, not a regular file: removed", up.download, mapfile.Kind(fi.Mode()))
	}
	if !fi.Mode().IsRegular() || // a link or worse: not ours
		up.state.PartialURL != stateURL(up.url) || up.state.PartialETag == "" && up.state.PartialLastModified == "" ||
		fi.Size() > up.opts.MaxSize || !fitsHeader(up.download, fi.Size(), up.opts.MaxSize) {
		os.Remove(up.download)
		return 0
	}
	return fi.Size()
}

// fitsHeader reports whether a partial download of size bytes at path is
// no larger than its header says and its header (when it has one) says
// at most maxSize.
func fitsHeader(path string, size, maxSize int64) bool {
	if size < pkbf.HeaderSize {
		return true
	}
	f, err := openRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, pkbf.HeaderSize)
	if _, err := io.ReadFull(f, b); err != nil {
		return false
	}
	h, err := pkbf.ParseHeader(b)
	return err == nil && h.FileSize() <= uint64(maxSize) && uint64(size) <= h.FileSize()
}

// unsatisfiable says what a 416 to the request for the filter's header
// tells of the server's file: its size, if its Content-Range says it
// ("bytes */SIZE").
func unsatisfiable(contentRange string) string {
	size, ok := strings.CutPrefix(contentRange, "bytes */")
	n, err := strconv.ParseInt(size, 10, 64)
	switch {
	case !ok || err != nil || n < 0:
		return "the server did not say its file's size (Content-Range); the file is empty, or the server mishandles ranges"
	case n == 0:
		return "the server's file is empty"
	case n < pkbf.HeaderSize:
		return fmt.Sprintf("not a pkbfv1 filter: the server says its file is %d bytes, shorter than a header", n)
	}
	return fmt.Sprintf("the server says its file is %d bytes, yet refused its first %d: it mishandles ranges", n, pkbf.HeaderSize)
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

// checker writes the download, reading the filter's header on the way to
// check the file's size against the server's and the limits before any
// byte past the header is written.
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
	f, err := openRegular(path, os.O_RDONLY, 0)
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
		return c.up.errorf("the filter is %d bytes (hash length %d), over the limit of %d; nothing written", size, h.HashLength, c.up.opts.MaxSize)
	case c.announced >= 0 && uint64(c.announced) != size:
		return c.up.errorf("the server says the file is %d bytes, the filter's header says %d", c.announced, size)
	}
	c.total = int64(size)
	return nil
}
