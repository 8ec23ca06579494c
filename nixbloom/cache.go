package nixbloom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pkbf/pkbf/internal/mapfile"
)

// ErrNoFilter is returned (wrapped) by [Cache.Filter] and Fetch when the
// cache's nix-cache-info has no BloomFilter field: the cache publishes no
// filter, and a client must not guess a path for one.
var ErrNoFilter = errors.New("nixbloom: the cache advertises no Bloom filter")

// Download limits.
const (
	maxCacheInfo = 64 << 10
	maxNarinfo   = 1 << 20
	// MaxFetchSize is the largest filter Fetch downloads: 1 GiB, a filter
	// for about 900 million paths at 1%.
	MaxFetchSize = 1 << 30
	// maxRedirects is how many redirects a request follows, as net/http's
	// default.
	maxRedirects = 10
)

// Cache is a Nix binary cache to fetch the filter from and to ask about
// paths: a local directory, or an http or https URL. What a cache says
// never leads pkbf to a file outside it: a local cache is read through an
// [os.Root] (no "..", absolute path or symbolic link leads out of it), and
// a cache reached over HTTP is read over HTTP only: its BloomFilter field
// must be a relative path that stays under the cache's root or an http(s)
// URL, and a redirect must lead to http(s). From an https cache, neither
// may lead to plain http. A Cache is safe for concurrent use.
type Cache struct {
	name      string       // for messages: the directory or URL
	root      *url.URL     // the cache's URL, ending in '/'; nil for a directory
	dir       *os.Root     // the directory; nil for a URL
	client    *http.Client // with the redirect policy
	allowHTTP bool         // the user named an http cache

	mu   sync.Mutex
	info []byte // nix-cache-info, once read
}

// OpenCache opens the cache at location: a directory, or an https://,
// http:// or file:// URL (a query, such as the store options of a Nix
// store URL, is dropped). client nil means [http.DefaultClient]; the Cache
// uses a copy of it whose CheckRedirect also applies the Cache's rules.
// Close releases a directory.
func OpenCache(location string, client *http.Client) (*Cache, error) {
	u, err := url.Parse(location)
	if err != nil || u.Scheme == "" || (len(u.Scheme) == 1 && filepath.VolumeName(location) != "") {
		return openDirCache(location, location, client)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("nixbloom: cache %s: a file URL names a local directory, not one on %s", location, u.Host)
		}
		return openDirCache(filepath.FromSlash(u.Path), location, client)
	case "http", "https":
		if u.Host == "" {
			return nil, fmt.Errorf("nixbloom: cache %s: no host", location)
		}
	default:
		return nil, fmt.Errorf("nixbloom: cache %s: pkbf reads http, https and file caches, not %s://", location, u.Scheme)
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	u.Path = strings.TrimSuffix(u.Path, "/") + "/"
	u.RawPath = ""
	c := &Cache{name: u.Redacted(), root: u, allowHTTP: u.Scheme == "http"}
	c.client = c.withPolicy(client)
	return c, nil
}

func openDirCache(dir, name string, client *http.Client) (*Cache, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("nixbloom: cache %s: not a URL (https://, http://, file://) nor a directory: %w", name, err)
	}
	c := &Cache{name: dir, dir: root}
	c.client = c.withPolicy(client)
	return c, nil
}

// Close releases the directory of a local cache.
func (c *Cache) Close() error {
	if c.dir != nil {
		return c.dir.Close()
	}
	return nil
}

// String returns the cache's directory or URL.
func (c *Cache) String() string { return c.name }

// withPolicy returns a copy of client whose redirects lead only to http(s),
// and not from https to http unless the user named an http cache.
func (c *Cache) withPolicy(client *http.Client) *http.Client {
	if client == nil {
		client = http.DefaultClient
	}
	own := *client
	next := client.CheckRedirect
	own.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		from := via[len(via)-1].URL
		if err := c.checkURL(req.URL, from.Scheme == "https"); err != nil {
			return fmt.Errorf("redirect from %s refused: %w", from.Redacted(), err)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return &own
}

// checkURL refuses a URL the cache's answers must not lead to: any but
// http(s), and http after https unless the user asked for an http cache.
func (c *Cache) checkURL(u *url.URL, fromHTTPS bool) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%s: a cache may lead only to http(s) URLs", u.Redacted())
	case u.Host == "":
		return fmt.Errorf("%s: no host", u.Redacted())
	case u.Scheme == "http" && fromHTTPS && !c.allowHTTP:
		return fmt.Errorf("%s: plain http after https", u.Redacted())
	}
	return nil
}

// where names a file of the cache for messages.
func (c *Cache) where(name string) string {
	if c.root != nil {
		return c.root.JoinPath(name).Redacted()
	}
	return filepath.Join(c.name, filepath.FromSlash(name))
}

// Filter reads the cache's nix-cache-info, follows its BloomFilter field
// (a path relative to the cache's root, or an http(s) URL) and reads and
// validates the filter. Over HTTP it asks for the bytes as they are
// (Accept-Encoding: identity) and refuses a response compressed anyway. It
// reads no more than the filter's header says the file holds (and at most
// MaxFetchSize), into one buffer: the filter's size plus a small constant
// when Content-Length agrees with the header, else allocated only once a
// quarter of the data has arrived, so a response that lies about its size
// costs about what it sent. A cache with no BloomFilter field gives an
// error wrapping ErrNoFilter. ctx bounds the whole fetch.
func (c *Cache) Filter(ctx context.Context) (*Filter, error) {
	info, err := c.cacheInfo(ctx)
	if err != nil {
		return nil, err
	}
	field, ok := CacheInfoField(info, "BloomFilter")
	if !ok {
		return nil, fmt.Errorf("%w (%s)", ErrNoFilter, c.where("nix-cache-info"))
	}
	if field == "" {
		return nil, fmt.Errorf("nixbloom: %s: BloomFilter field is empty", c.where("nix-cache-info"))
	}
	ref, err := url.Parse(field)
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %s: BloomFilter %q: %w", c.where("nix-cache-info"), field, err)
	}
	if ref.Scheme != "" {
		if err := c.checkURL(ref, c.root != nil && c.root.Scheme == "https"); err != nil {
			return nil, fmt.Errorf("nixbloom: %s: BloomFilter refused: %w", c.where("nix-cache-info"), err)
		}
		return c.fetchFilter(ctx, ref)
	}
	rel, err := localName(ref)
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %s: BloomFilter %q refused: %w", c.where("nix-cache-info"), field, err)
	}
	if c.root == nil {
		return c.readFilter(rel)
	}
	u := c.root.JoinPath(rel)
	u.RawQuery = ref.RawQuery
	return c.fetchFilter(ctx, u)
}

// localName returns the path of a relative reference, cleaned, if it names
// a file under the cache's root: no scheme or host, not absolute, no ".."
// that leads out, no fragment.
func localName(ref *url.URL) (string, error) {
	switch {
	case ref.Host != "" || ref.Opaque != "" || strings.HasPrefix(ref.Path, "/") || ref.User != nil:
		return "", errors.New("want a path relative to the cache's root, or an http(s) URL")
	case ref.Fragment != "":
		return "", errors.New("a fragment names no file")
	case strings.ContainsRune(ref.Path, '\\') || strings.ContainsRune(ref.Path, 0):
		return "", errors.New("a backslash or NUL in the path")
	}
	p := path.Clean(ref.Path)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return "", errors.New("the path leads out of the cache")
	}
	return p, nil
}

// cacheInfo returns the cache's nix-cache-info, read once.
func (c *Cache) cacheInfo(ctx context.Context) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.info != nil {
		return c.info, nil
	}
	b, err := c.readFile(ctx, "nix-cache-info", maxCacheInfo)
	if err == nil {
		c.info = b
	}
	return b, err
}

// readFile returns the cache's file name, of at most limit bytes. A file
// the cache does not have is an error wrapping fs.ErrNotExist.
func (c *Cache) readFile(ctx context.Context, name string, limit int64) ([]byte, error) {
	var r io.Reader
	if c.root == nil {
		f, err := c.openLocal(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	} else {
		resp, err := c.get(ctx, c.root.JoinPath(name))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if err := encoded(resp); err != nil {
			return nil, fmt.Errorf("nixbloom: %s: %w", c.where(name), err)
		}
		r = resp.Body
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %s: %w", c.where(name), err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("nixbloom: %s is larger than %d bytes", c.where(name), limit)
	}
	return b, nil
}

// openLocal opens a regular file of a local cache, never one outside it.
func (c *Cache) openLocal(name string) (*os.File, error) {
	f, _, err := openRegular(c.dir, filepath.FromSlash(name))
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %s: %w", c.where(name), err)
	}
	return f, nil
}

// openRegular opens name in root for reading, if it is a regular file,
// and returns it with its FileInfo. It opens without blocking and then
// looks at what it opened, so a FIFO or device put there at any moment is
// refused, never waited on.
func openRegular(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return nil, nil, unwrapPath(err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s, not a regular file", mapfile.Kind(fi.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, nil, unwrapPath(err)
	}
	return f, fi, nil
}

// unwrapPath returns a PathError's own error: the caller names the file.
func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// readFilter reads a filter file of a local cache.
func (c *Cache) readFilter(name string) (*Filter, error) {
	f, fi, err := openRegular(c.dir, filepath.FromSlash(name))
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %s: %w", c.where(name), err)
	}
	defer f.Close()
	return readFilter(f, c.where(name), "file size", fi.Size())
}

// fetchFilter downloads the filter at u.
func (c *Cache) fetchFilter(ctx context.Context, u *url.URL) (*Filter, error) {
	resp, err := c.get(ctx, u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	// get asks for the bytes as they are; a server that compresses anyway
	// would make Content-Length and the header disagree with what arrives.
	if err := encoded(resp); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidFilter, u.Redacted(), err)
	}
	return readFilter(resp.Body, u.Redacted(), "Content-Length", resp.ContentLength)
}

// readFilter reads a filter file from r, whose lengthName says it holds
// length bytes (-1: unknown). It reads no more than the header declares.
func readFilter(r io.Reader, where, lengthName string, length int64) (*Filter, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%w: %s: reading the header: %w", ErrInvalidFilter, where, err)
	}
	k, m, err := parseHeader(h[:])
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, where)
	}
	size := headerSize + m/8
	if size > MaxFetchSize {
		return nil, fmt.Errorf("%w: %s: %d bytes, more than the %d Fetch takes", ErrInvalidFilter, where, size, MaxFetchSize)
	}
	if length >= 0 && uint64(length) != size {
		return nil, fmt.Errorf("%w: %s: %s %d, header says %d", ErrInvalidFilter, where, lengthName, length, size)
	}
	// One buffer of the declared size. With a length that agrees with the
	// header (checked above) it is allocated at once: memory is the
	// filter's size plus a small constant. Without one, it is allocated
	// once a quarter of the data has arrived, so a lying header costs about
	// what was sent.
	var data []byte
	var n int
	if length >= 0 {
		data = make([]byte, m/8)
		n, err = io.ReadFull(r, data)
	} else {
		data, n, err = mapfile.ReadDeclared(r, int(m/8), nil)
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("%w: %s: %d bytes after the header, which says %d: %w", ErrInvalidFilter, where, n, m/8, io.ErrUnexpectedEOF)
	}
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %s: %w", where, err)
	}
	if k, _ := r.Read(make([]byte, 1)); k > 0 {
		return nil, fmt.Errorf("%w: %s: more data than the header says (%d bytes)", ErrInvalidFilter, where, size)
	}
	return &Filter{k: k, m: m, bits: data}, nil
}

// get fetches u, asking for the bytes as they are; anything but 200 OK is
// an error, wrapping fs.ErrNotExist for the answers Nix takes for a file
// the cache does not have (404, 410, 401, 403, 407: FileTransfer's
// NotFound and Forbidden).
func (c *Cache) get(ctx context.Context, u *url.URL) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %w", err)
	}
	// The bytes as they are: Go's transport would otherwise ask for gzip and
	// decompress it out of sight, past every size check.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err := fmt.Errorf("nixbloom: %s answered %s", u.Redacted(), resp.Status)
		switch resp.StatusCode {
		case http.StatusNotFound, http.StatusGone, http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired:
			err = fmt.Errorf("%w (%w)", err, fs.ErrNotExist)
		}
		return nil, err
	}
	return resp, nil
}

// encoded returns an error if resp has a Content-Encoding: pkbf reads a
// file as it is and never decompresses it, while Nix decodes the body by
// that header (and fails on one it does not know, identity included).
// Only an empty value or "none", which Nix reads as no encoding, passes.
func encoded(resp *http.Response) error {
	for _, enc := range resp.Header.Values("Content-Encoding") {
		if e := strings.TrimSpace(enc); e != "" && e != "none" {
			return fmt.Errorf("sent with Content-Encoding %q; pkbf asked for the bytes as they are and does not decompress", enc)
		}
	}
	return nil
}

// Fetch opens the cache at cacheURL (see [OpenCache]) and returns its
// filter (see [Cache.Filter]).
func Fetch(ctx context.Context, c *http.Client, cacheURL string) (*Filter, error) {
	cache, err := OpenCache(cacheURL, c)
	if err != nil {
		return nil, err
	}
	defer cache.Close()
	return cache.Filter(ctx)
}

// Verdicts of [Cache.Check] on a store path.
const (
	Absent          = "absent"           // the filter lacks the path (certain), or the cache has no .narinfo for it
	PossiblyPresent = "possibly-present" // the filter may hold the path (not asked of the cache)
	Present         = "present"          // the cache has the path's .narinfo, as Nix would take it
	Unconfirmed     = "unconfirmed"      // the filter may hold the path, and asking the cache failed
)

// Check answers for the store path path (as [HashPart] takes it) from f,
// the cache's filter: [Absent] or [PossiblyPresent]; with confirm, a path
// f may hold is asked of the cache ([Cache.Confirm]): [Present], [Absent]
// (f's false positive) or [Unconfirmed], with Confirm's error. It also
// returns f's own answer. For what is no store path it returns "" and
// the error.
func (c *Cache) Check(ctx context.Context, f *Filter, path string, confirm bool) (verdict string, mayContain bool, err error) {
	maybe, err := f.MayContain(path)
	switch {
	case err != nil:
		return "", false, err
	case !maybe:
		return Absent, false, nil
	case !confirm:
		return PossiblyPresent, true, nil
	}
	present, err := c.Confirm(ctx, path)
	switch {
	case err != nil:
		return Unconfirmed, true, err
	case present:
		return Present, true, nil
	}
	return Absent, true, nil
}

// Confirm asks the cache for the .narinfo of path (a store path, base name
// or hash part, as [HashPart] takes it) and reports whether the cache
// holds the path, as Nix would decide it: true only if a Nix whose store
// directory is path's (for a base name or hash part: the cache's StoreDir,
// or /nix/store) would open the cache (every StoreDir line names that
// directory, every Priority is a number) and take the .narinfo (every field
// Nix checks parses, as in [CachePaths]) for a StorePath with path's hash
// part (and its name, if path has one). False for no .narinfo (a local
// file missing; over HTTP 404, 410, 401, 403 or 407, as Nix reads them) or
// one for another path; an error for anything else, such as a cache Nix
// would not open, a .narinfo Nix would find corrupt, or a file sent with a
// Content-Encoding. Signatures are not checked. It reads nix-cache-info
// first, unless an earlier call has.
func (c *Cache) Confirm(ctx context.Context, path string) (bool, error) {
	part, err := HashPart(path)
	if err != nil {
		return false, err
	}
	wantName := ""
	if base := path[strings.LastIndexByte(path, '/')+1:]; len(base) > hashPartLen {
		wantName = base[hashPartLen+1:]
	}
	info, err := c.cacheInfo(ctx)
	if err != nil {
		return false, err
	}
	cacheDir, err := cacheStoreDir(info, c.where("nix-cache-info"))
	if err != nil {
		return false, err
	}
	storeDir, err := storeDirFor(path, cacheDir, c.where("nix-cache-info"))
	if err != nil {
		return false, err
	}
	name := part + ".narinfo"
	b, err := c.readFile(ctx, name, maxNarinfo)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ni, err := parseNarinfo(b, storeDir, c.where(name))
	if err != nil {
		return false, err
	}
	return ni.hashPart == part && (wantName == "" || ni.name == wantName), nil
}
