package nixbloom

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pkbf/pkbf/internal/mapfile"
)

// DefaultFilterName is where a cache's filter goes when its publisher
// names no other place, relative to the cache's root: a name [Publish]
// accepts, and none of the cache's own.
const DefaultFilterName = "store-paths.nixbloom"

// WriteFile writes the filter to the file at path, replacing it
// atomically (a temporary file beside it, synced and renamed over it), so
// that a reader sees the old file or the new one, never a part. A symbolic
// link at path stays and the file it leads to is replaced; a directory,
// FIFO or device there is refused. Errors name the file.
func (f *Filter) WriteFile(path string) error {
	err := mapfile.WriteAtomic(path, func(w io.Writer) error { _, err := f.WriteTo(w); return err }, nil)
	if err != nil {
		return fmt.Errorf("nixbloom: writing %s: %w", path, err)
	}
	return nil
}

// FromPaths returns a filter sized by [Size] for paths at false-positive
// rate p, holding each of them (as [Filter.Add] takes them).
func FromPaths(paths []string, p float64) (*Filter, error) {
	f, err := New(uint64(len(paths)), p)
	if err != nil {
		return nil, err
	}
	for _, path := range paths {
		if err := f.Add(path); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// ReadPaths reads store paths (as [Filter.Add] takes them) from r, one a
// line; blank lines and lines starting with # are skipped. Anything else
// that is not a store path is an error naming name and the line.
func ReadPaths(r io.Reader, name string) ([]string, error) {
	var paths []string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		p := strings.TrimSpace(sc.Text())
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		if _, err := HashPart(p); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", name, n, err)
		}
		paths = append(paths, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("nixbloom: reading %s: %w", name, err)
	}
	return paths, nil
}

// CachePaths returns the store path of every .narinfo at the root of the
// binary cache directory dir, the paths Nix lists there (nix path-info
// --all): a file named by a 32-character hash part and ".narinfo", which
// must be a regular file that Nix would take (see the package's
// documentation) and whose StorePath, in the store directory of dir's
// nix-cache-info (/nix/store if it names none), has the file's hash part.
// A nix-cache-info that no Nix would open (StoreDir lines that disagree,
// a Priority that is no number) is refused.
// Other names are not Nix's and are skipped. Any error names the file; a
// directory without a nix-cache-info is refused.
func CachePaths(dir string) ([]string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %w", err)
	}
	defer root.Close()
	info, err := readCacheInfo(root, dir)
	if err != nil {
		return nil, err
	}
	storeDir, err := cacheStoreDir(info, filepath.Join(dir, "nix-cache-info"))
	if err != nil {
		return nil, err
	}
	if storeDir == "" {
		storeDir = defaultStoreDir
	}
	d, err := root.Open(".")
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %s: %w", dir, err)
	}
	var paths []string
	for _, name := range names {
		part, ok := strings.CutSuffix(name, ".narinfo")
		if !ok || len(part) != hashPartLen {
			continue
		}
		where := filepath.Join(dir, name)
		var h [hashPartBytes]byte
		if err := decodeHashPart(&h, part); err != nil {
			return nil, fmt.Errorf("%w, in the name of %s", err, where)
		}
		b, err := readRegular(root, dir, name, maxNarinfo)
		if err != nil {
			return nil, fmt.Errorf("nixbloom: %w", err)
		}
		ni, err := parseNarinfo(b, storeDir, where)
		if err != nil {
			return nil, err
		}
		if ni.hashPart != part {
			return nil, fmt.Errorf("nixbloom: %s: StorePath %s does not have the file's hash part", where, ni.storePath)
		}
		paths = append(paths, ni.storePath)
	}
	return paths, nil
}

// readCacheInfo reads the nix-cache-info of the cache directory dir,
// opened as root; a directory without one is not a cache.
func readCacheInfo(root *os.Root, dir string) ([]byte, error) {
	info, err := readRegular(root, dir, "nix-cache-info", maxCacheInfo)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("nixbloom: %s is not a Nix binary cache: it has no nix-cache-info", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("nixbloom: %w", err)
	}
	return info, nil
}

// readRegular reads name in root, a regular file (not a link) of at most
// limit bytes. What it opens must be the file it looked at: a link, FIFO
// or other file swapped in meanwhile is refused, not followed or waited on.
func readRegular(root *os.Root, dir, name string, limit int64) ([]byte, error) {
	where := filepath.Join(dir, name)
	lfi, err := root.Lstat(name)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", where, unwrapPath(err))
	case !lfi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is %s, not a regular file", where, mapfile.Kind(lfi.Mode()))
	}
	f, fi, err := openRegular(root, name)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", where, err)
	case !os.SameFile(lfi, fi):
		f.Close()
		return nil, fmt.Errorf("%s changed while pkbf opened it", where)
	case fi.Size() > limit:
		f.Close()
		return nil, fmt.Errorf("%s is larger than %d bytes", where, limit)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", where, err)
	case int64(len(b)) > limit:
		return nil, fmt.Errorf("%s is larger than %d bytes", where, limit)
	}
	return b, nil
}

// Publish puts f into the binary cache directory dir, at name (a
// slash-separated path relative to dir, in a directory that exists; one
// that the BloomFilter field reads back, by [Cache.Filter], as the same
// file, and not one of the cache's own: nix-cache-info, a .narinfo or .ls
// file, anything under nar/, log/, realisations/ or debuginfo/), and
// then sets BloomFilter: name in dir's nix-cache-info (see
// [SetCacheInfoField]), so that a client never sees the field name a file
// that is not there. Each file is replaced atomically (a temporary file
// beside it, renamed), keeping its mode. Publish never writes through a
// symbolic link under dir: a link anywhere on the way to name (or at
// nix-cache-info) is refused before anything is written, and every file is
// created and renamed through an [os.Root] of dir, so that a link put there
// meanwhile cannot lead a write out of it. dir itself may be a link.
func Publish(dir, name string, f *Filter) error {
	if name == "" || strings.ContainsRune(name, '\\') || !filepath.IsLocal(filepath.FromSlash(name)) {
		return fmt.Errorf("nixbloom: filter path %q: want a path inside the cache, relative to it", name)
	}
	name = path.Clean(name)
	if err := checkFilterName(name); err != nil {
		return fmt.Errorf("nixbloom: filter path %q: %w", name, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("nixbloom: %w", err)
	}
	defer root.Close()
	info, err := readCacheInfo(root, dir)
	if err != nil {
		return err
	}
	newInfo, err := SetCacheInfoField(info, "BloomFilter", name)
	if err != nil {
		return err
	}
	if err := noLinks(root, dir, name); err != nil {
		return err
	}
	if err := replaceIn(root, dir, name, func(w io.Writer) error { _, err := f.WriteTo(w); return err }); err != nil {
		return err
	}
	if err := replaceIn(root, dir, "nix-cache-info", func(w io.Writer) error { _, err := w.Write(newInfo); return err }); err != nil {
		return fmt.Errorf("%w (the filter is written, but the cache does not name it)", err)
	}
	return nil
}

// nixDirs are the directories where Nix keeps a binary cache's files.
var nixDirs = []string{"nar", "log", "realisations", "debuginfo"}

// checkFilterName refuses a filter name (cleaned, relative) that a reader
// of the BloomFilter field ([Cache.Filter]) would take for another file or
// refuse, and one that is, or may one day be, a file of the cache itself:
// nix-cache-info, a .narinfo or .ls listing, anything under Nix's
// directories.
func checkFilterName(name string) error {
	ref, err := url.Parse(name)
	if err != nil || ref.Scheme != "" || ref.RawQuery != "" || ref.ForceQuery {
		return errors.New("the BloomFilter field would not read back as this file")
	}
	if back, err := localName(ref); err != nil || back != name {
		return errors.New("the BloomFilter field would not read back as this file")
	}
	first, _, _ := strings.Cut(name, "/")
	switch {
	case name == "nix-cache-info":
		return errors.New("that is the cache's own nix-cache-info")
	case strings.HasSuffix(name, ".narinfo") || strings.HasSuffix(name, ".ls"):
		return errors.New("a .narinfo or .ls name is Nix's, in a binary cache")
	case slices.Contains(nixDirs, first):
		return fmt.Errorf("%s/ is where Nix keeps the cache's files", first)
	}
	return nil
}

// noLinks refuses name, a cleaned slash-separated path in root, if any
// directory on the way to it is not a directory (a symbolic link, say) or
// it is there and is not a regular file.
func noLinks(root *os.Root, dir, name string) error {
	parts := strings.Split(name, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fi, err := root.Lstat(filepath.FromSlash(sub))
		last := i == len(parts)-1
		switch {
		case last && errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return fmt.Errorf("nixbloom: %w", err)
		case !last && !fi.IsDir():
			return fmt.Errorf("nixbloom: %s is %s, not a directory: pkbf never writes through a link in a cache", filepath.Join(dir, sub), mapfile.Kind(fi.Mode()))
		case last && !fi.Mode().IsRegular():
			return fmt.Errorf("nixbloom: %s is %s, not a regular file: pkbf never writes through a link in a cache", filepath.Join(dir, sub), mapfile.Kind(fi.Mode()))
		}
	}
	return nil
}

// replaceIn gives name in root the content write writes, atomically: a new
// temporary file beside it (.NAME.tmp-*), synced and renamed over it, with
// the mode of the file it replaces (0644 for a new one); a failure removes
// the temporary file. A name that is not (or not only) a regular file is
// refused first, and again just before the rename. The temporary file is
// made, renamed and removed through the directory opened once, so a link
// swapped in for it meanwhile leaves nothing behind.
func replaceIn(root *os.Root, dir, name string, write func(io.Writer) error) (err error) {
	if err := noLinks(root, dir, name); err != nil {
		return err
	}
	parent, base := path.Split(name)
	d := root
	if parent != "" {
		if d, err = root.OpenRoot(filepath.FromSlash(path.Clean(parent))); err != nil {
			return fmt.Errorf("nixbloom: %w", err)
		}
		defer d.Close()
	}
	mode := fs.FileMode(0o644)
	if fi, err := d.Lstat(base); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp := "." + base + ".tmp-" + strconv.FormatUint(rand.Uint64(), 36)
	where := filepath.Join(dir, filepath.FromSlash(parent), tmp)
	file, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("nixbloom: %w", err)
	}
	defer func() {
		if err != nil {
			file.Close()
			d.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(file, 1<<20)
	if err := write(bw); err != nil {
		return fmt.Errorf("nixbloom: writing %s: %w", where, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("nixbloom: writing %s: %w", where, err)
	}
	if err := file.Chmod(mode); err != nil {
		return fmt.Errorf("nixbloom: %w", err)
	}
	if err := file.Sync(); err != nil {
		return fmt.Errorf("nixbloom: %w", err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("nixbloom: %w", err)
	}
	if err := noLinks(root, dir, name); err != nil {
		return err
	}
	if err := d.Rename(tmp, base); err != nil {
		return fmt.Errorf("nixbloom: %w", err)
	}
	if f, err := d.Open("."); err == nil {
		f.Sync()
		f.Close()
	}
	return nil
}
