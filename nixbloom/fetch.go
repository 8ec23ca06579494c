package nixbloom

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/pkbf/pkbf/internal/declared"
)

// ErrNoFilter is returned (wrapped) by Fetch when the cache's
// nix-cache-info has no BloomFilter field: the cache publishes no filter,
// and a client must not guess a path for one.
var ErrNoFilter = errors.New("nixbloom: the cache advertises no Bloom filter")

// Download limits.
const (
	maxCacheInfo = 64 << 10
	// MaxFetchSize is the largest filter Fetch downloads: 1 GiB, a filter
	// for about 900 million paths at 1%.
	MaxFetchSize = 1 << 30
)

// Fetch reads the nix-cache-info of the binary cache at cacheURL, follows
// its BloomFilter field (an absolute URL, or a path relative to the cache
// root) and downloads and validates the filter. It asks for the bytes as
// they are (Accept-Encoding: identity) and refuses a response compressed
// anyway. It reads no more than the filter's header says the file holds
// (and at most MaxFetchSize), into one buffer: the filter's size plus a
// small constant when Content-Length agrees with the header, else
// allocated only once a quarter of the data has arrived, so a response
// that lies about its size costs about what it sent. A cache with no BloomFilter field gives
// an error wrapping ErrNoFilter, and no other request is made. c nil means
// http.DefaultClient; ctx bounds the whole fetch.
func Fetch(ctx context.Context, c *http.Client, cacheURL string) (*Filter, error) {
	if c == nil {
		c = http.DefaultClient
	}
	root, err := url.Parse(strings.TrimSuffix(cacheURL, "/") + "/")
	if err != nil {
		return nil, fmt.Errorf("nixbloom: cache URL: %w", err)
	}
	info, err := get(ctx, c, root.JoinPath("nix-cache-info").String(), maxCacheInfo)
	if err != nil {
		return nil, err
	}
	field, ok := cacheInfoField(info, "BloomFilter")
	if !ok {
		return nil, fmt.Errorf("%w (%s)", ErrNoFilter, root.JoinPath("nix-cache-info"))
	}
	if field == "" {
		return nil, fmt.Errorf("nixbloom: %s: BloomFilter field is empty", root.JoinPath("nix-cache-info"))
	}
	ref, err := url.Parse(field)
	if err != nil {
		return nil, fmt.Errorf("nixbloom: BloomFilter field %q: %w", field, err)
	}
	filterURL := root.ResolveReference(ref).String()
	resp, err := do(ctx, c, filterURL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	// do asks for the bytes as they are; a server that compresses anyway
	// would make Content-Length and the header disagree with what arrives.
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return nil, fmt.Errorf("%w: %s: sent with Content-Encoding %q although the request asked for identity", ErrInvalidFilter, filterURL, enc)
	}
	// The header says how much follows; read exactly that.
	var h [headerSize]byte
	if _, err := io.ReadFull(resp.Body, h[:]); err != nil {
		return nil, fmt.Errorf("%w: %s: reading the header: %w", ErrInvalidFilter, filterURL, err)
	}
	k, m, err := parseHeader(h[:])
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, filterURL)
	}
	size := headerSize + m/8
	if size > MaxFetchSize {
		return nil, fmt.Errorf("%w: %s: %d bytes, more than the %d Fetch takes", ErrInvalidFilter, filterURL, size, MaxFetchSize)
	}
	if resp.ContentLength >= 0 && uint64(resp.ContentLength) != size {
		return nil, fmt.Errorf("%w: %s: Content-Length %d, header says %d", ErrInvalidFilter, filterURL, resp.ContentLength, size)
	}
	// One buffer of the declared size. With a Content-Length that agrees
	// with the header (checked above) it is allocated at once: memory is the
	// filter's size plus a small constant. Without one, it is allocated once
	// a quarter of the data has arrived, so a lying header costs about what
	// was sent.
	var data []byte
	var n int
	if resp.ContentLength >= 0 {
		data = make([]byte, m/8)
		n, err = io.ReadFull(resp.Body, data)
	} else {
		data, n, err = declared.Read(resp.Body, int(m/8))
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("%w: %s: %d bytes after the header, which says %d: %w", ErrInvalidFilter, filterURL, n, m/8, io.ErrUnexpectedEOF)
	}
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %s: %w", filterURL, err)
	}
	if k, _ := resp.Body.Read(make([]byte, 1)); k > 0 {
		return nil, fmt.Errorf("%w: %s: more data than the header says (%d bytes)", ErrInvalidFilter, filterURL, size)
	}
	return &Filter{k: k, m: m, bits: data}, nil
}

func do(ctx context.Context, c *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %w", err)
	}
	// The bytes as they are: Go's transport would otherwise ask for gzip and
	// decompress it out of sight, past every size check.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("nixbloom: %s answered %s", u, resp.Status)
	}
	return resp, nil
}

// get fetches u, refusing a body over limit bytes.
func get(ctx context.Context, c *http.Client, u string, limit int64) ([]byte, error) {
	resp, err := do(ctx, c, u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %s: %w", u, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("nixbloom: %s is larger than %d bytes", u, limit)
	}
	return b, nil
}

// cacheInfoField returns the value of a "Key: value" line of nix-cache-info.
func cacheInfoField(info []byte, key string) (string, bool) {
	s := bufio.NewScanner(bytes.NewReader(info))
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}
