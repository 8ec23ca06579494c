package ct

import (
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// A Kind is a log's API.
type Kind string

// The kinds of log in use.
const (
	Static  Kind = "static"  // c2sp.org/static-ct-api: a checkpoint and tiles
	RFC6962 Kind = "rfc6962" // RFC 6962: get-sth and get-entries
)

// Options are the settings of a log's client, whatever its kind.
type Options struct {
	// Kind is the log's API; "" detects it (see [Open]).
	Kind Kind
	// Key is the log's public key: the checkpoint's or tree head's
	// signature is verified with it. Without one, the tree head is read
	// unverified (entries are still checked against its root hash).
	Key crypto.PublicKey
	// HTTPClient makes the requests (nil: a client with Transport's
	// retries, that waits a minute at most for an answer's headers).
	HTTPClient *http.Client
	// UserAgent names the scanner to the log, with a contact (an email
	// address or a +https:// URL), as log operators ask and Sunlight
	// requires ("": pkbf-ct's).
	UserAgent string
	// Parallel bounds the requests in flight (0: 8 on a Static CT log, 4
	// on an RFC 6962 log).
	Parallel int
	// Batch is the entries asked for in one RFC 6962 get-entries (0:
	// 256; logs may answer fewer).
	Batch int
	// Limits bound each response, through HTTPClient or the default.
	Limits Limits
}

// DefaultUserAgent is the User-Agent a log's client sends when Options
// give none.
const DefaultUserAgent = "pkbf-ct (+https://github.com/pkbf/pkbf)"

// detectTimeout bounds the requests Open makes to learn a log's kind.
const detectTimeout = 30 * time.Second

// Open returns the log at url, read with its kind's client: a Static CT
// log's monitoring prefix (an http(s) URL, or file:// and gzip+file://
// for a local copy, whose data tiles are stored gzipped), or an RFC 6962
// log's URL (its prefix, before /ct/v1/). With opts.Kind "", Open asks
// the log: a Static CT log when url/checkpoint is a checkpoint (a file://
// URL always is one), else an RFC 6962 log when url/ct/v1/get-sth is a
// tree head; a log that is neither is an error naming url. Detection
// makes those requests, within 30 s and ctx; with a Kind given, Open
// makes none.
func Open(ctx context.Context, url string, opts Options) (Log, error) {
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = defaultClient()
	}
	opts.HTTPClient = opts.Limits.client(opts.HTTPClient)
	if opts.Batch <= 0 {
		opts.Batch = 256
	}
	if opts.Kind == "" {
		kind, err := detect(ctx, url, opts)
		if err != nil {
			return nil, err
		}
		opts.Kind = kind
	}
	switch opts.Kind {
	case Static:
		if opts.Parallel <= 0 {
			opts.Parallel = 8
		}
		return newStatic(url, opts)
	case RFC6962:
		if opts.Parallel <= 0 {
			opts.Parallel = 4
		}
		return newRFC6962(url, opts)
	}
	return nil, fmt.Errorf("%s: log kind %q: want %q, %q, or \"\" to detect it", url, opts.Kind, Static, RFC6962)
}

// detect learns the kind of the log at url from what it serves.
func detect(ctx context.Context, url string, opts Options) (Kind, error) {
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return Static, nil // file:// and gzip+file://: a local copy of tiles
	}
	ctx, cancel := context.WithTimeout(ctx, detectTimeout)
	defer cancel()
	for _, try := range []struct {
		path string
		kind Kind
		is   func([]byte) bool
	}{{"checkpoint", Static, isCheckpoint}, {"ct/v1/get-sth", RFC6962, isTreeHead}} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+"/"+try.path, nil)
		if err != nil {
			return "", fmt.Errorf("%s: %w", url, err)
		}
		req.Header.Set("User-Agent", opts.UserAgent)
		resp, err := opts.HTTPClient.Do(req)
		if err != nil {
			return "", stopped(ctx, fmt.Errorf("%s: learning its kind: %w", url, err))
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return "", stopped(ctx, fmt.Errorf("%s: learning its kind: %w", url, err))
		}
		if resp.StatusCode == http.StatusOK && try.is(body) {
			return try.kind, nil
		}
	}
	return "", fmt.Errorf("%s: neither a Static CT log (no checkpoint at %s/checkpoint) nor an RFC 6962 log (no tree head at %s/ct/v1/get-sth)",
		url, strings.TrimSuffix(url, "/"), strings.TrimSuffix(url, "/"))
}

// isCheckpoint reports whether b is a signed note whose text is a
// checkpoint (c2sp.org/tlog-checkpoint).
func isCheckpoint(b []byte) bool {
	_, err := parseCheckpoint(b)
	return err == nil
}

// isTreeHead reports whether b is a get-sth answer: a JSON object with a
// tree size and a root hash.
func isTreeHead(b []byte) bool {
	var sth struct {
		TreeSize *uint64 `json:"tree_size"`
		Root     []byte  `json:"sha256_root_hash"`
	}
	return json.Unmarshal(b, &sth) == nil && sth.TreeSize != nil && len(sth.Root) == 32
}
