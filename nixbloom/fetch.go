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
// root) and downloads and validates the filter. It reads no more than the
// filter's header says the file holds (and at most MaxFetchSize), growing
// its buffer only as data arrives. A cache with no BloomFilter field gives
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
	// The header says how much follows; read exactly that.
	var h [headerSize]byte
	if _, err := io.ReadFull(resp.Body, h[:]); err != nil {
		return nil, fmt.Errorf("%w: %s: reading the header: %w", ErrInvalidFilter, filterURL, err)
	}
	_, m, err := parseHeader(h[:])
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
	rest, err := io.ReadAll(io.LimitReader(resp.Body, int64(m/8)+1))
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %s: %w", filterURL, err)
	}
	f, err := Parse(append(h[:], rest...))
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, filterURL)
	}
	return f, nil
}

func do(ctx context.Context, c *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %w", err)
	}
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
