package weakkeys

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pkbf/pkbf/internal/der"
	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/keys"
)

// A Builder collects Debian weak-key lists from the published formats and
// writes them as one file for [OpenDebian]. The zero value is ready to
// use; a Builder is not safe for concurrent use.
type Builder struct {
	lists []*buildList
}

// buildList is a list being built: its entries as 128-bit numbers, in the
// order of their bytes (a 10-byte entry in the top 80 bits).
type buildList struct {
	debianList
	hashes [][2]uint64
}

// list returns the list l names, added if new.
func (b *Builder) list(l List) (*buildList, error) {
	cover, err := parseCoverage(l.Key)
	if err != nil {
		return nil, err
	}
	switch {
	case l.Name == "" || len(l.Name) > nameSize || !printable([]byte(l.Name)):
		return nil, perr.Errorf("list name %q is not 1 to %d printable ASCII characters", l.Name, nameSize)
	case l.Scheme.width() == 0:
		return nil, perr.Errorf("list %s: %s is not a scheme", l.Name, l.Scheme)
	case (l.Scheme == SHA256X) != (cover.typ == typeEC):
		return nil, perr.Errorf("list %s: scheme %s does not hash %s keys", l.Name, l.Scheme, l.Key)
	}
	for _, bl := range b.lists {
		if bl.Name == l.Name && bl.cover == cover && bl.Scheme == l.Scheme {
			return bl, nil
		}
	}
	if len(b.lists) == maxLists {
		return nil, perr.Errorf("list %s: a file holds at most %d lists", l.Name, maxLists)
	}
	bl := &buildList{debianList: debianList{List: List{Name: l.Name, Key: l.Key, Scheme: l.Scheme}, cover: cover, width: l.Scheme.width()}}
	b.lists = append(b.lists, bl)
	return bl, nil
}

// add adds an entry: the first width bytes of h.
func (l *buildList) add(h []byte) {
	var e [16]byte
	copy(e[:], h[:l.width])
	l.hashes = append(l.hashes, [2]uint64{binary.BigEndian.Uint64(e[:8]), binary.BigEndian.Uint64(e[8:])})
}

// maxLineBytes bounds a list's lines: its hashes are 20 or 64 digits.
const maxLineBytes = 1024

// ReadList adds the hashes of a list in its published text form to the
// list l names: one hash in hex per line, 64 digits for the SHA-256
// schemes, the 20 digits of openssl-vulnkey's lines for [VulnKey]. Lines
// starting with "#" and blank lines are skipped; anything else is an
// error naming the line.
func (b *Builder) ReadList(l List, r io.Reader) error {
	bl, err := b.list(l)
	if err != nil {
		return err
	}
	digits := 2 * sha256.Size
	if l.Scheme == VulnKey {
		digits = 2 * VulnKey.width()
	}
	var h [sha256.Size]byte
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, maxLineBytes), maxLineBytes)
	line := 0
	for s.Scan() {
		line++
		text := bytes.TrimSpace(s.Bytes())
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		if len(text) != digits {
			return perr.Errorf("list %s, line %d: %d characters, want a hash of %d hex digits", l.Name, line, len(text), digits)
		}
		if _, err := hex.Decode(h[:], text); err != nil {
			return perr.Errorf("list %s, line %d: not hex: %v", l.Name, line, err)
		}
		bl.add(h[:])
	}
	if err := s.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return perr.Errorf("list %s, line %d: longer than %d bytes", l.Name, line+1, maxLineBytes)
		}
		return err
	}
	return nil
}

// ReadFile reads a published list file, as [Builder.ReadList] does,
// telling what it holds from its name, which becomes the list's name:
// sha256_modulus_<bits>.csv (RSA, [SHA256Modulus]),
// sha256_xcoord_<curve>.csv (EC, [SHA256X]; the curve P-256, P-384 or
// P-521, also written P256, secp256r1, prime256v1, nistp256 and the
// like), or blacklist.RSA-<bits> (openssl-vulnkey, [VulnKey]), which may
// have a suffix after a dot (blacklist.RSA-2048.le32).
func (b *Builder) ReadFile(path string) error {
	l, ok := listForFile(filepath.Base(path))
	if !ok {
		return perr.Errorf("%s: the file name says neither what keys nor what hashes the list holds (sha256_modulus_<bits>.csv, sha256_xcoord_<curve>.csv, blacklist.RSA-<bits>): use Builder.ReadList", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := b.ReadList(l, f); err != nil {
		return perr.Errorf("%s: %w", path, err)
	}
	return nil
}

// AddSource adds what is at path, as pkbf weak build reads its sources:
// a directory's key files as [Builder.AddKeyTree] does, in the list
// named name (the directory's own name when name is ""), or else a
// published list file, as [Builder.ReadFile] does.
func (b *Builder) AddSource(path, name string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !fi.IsDir():
		return b.ReadFile(path)
	case name == "":
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		name = filepath.Base(abs)
	}
	return b.AddKeyTree(name, path)
}

// curveAliases are the names of the allowed curves in file names.
var curveAliases = map[string]string{
	"p-256": "P-256", "p256": "P-256", "secp256r1": "P-256", "prime256v1": "P-256", "nistp256": "P-256", "256": "P-256",
	"p-384": "P-384", "p384": "P-384", "secp384r1": "P-384", "nistp384": "P-384", "384": "P-384",
	"p-521": "P-521", "p521": "P-521", "secp521r1": "P-521", "nistp521": "P-521", "521": "P-521",
}

// listForFile tells a published list by its file's name.
func listForFile(name string) (List, bool) {
	l := List{Name: name}
	if len(name) > nameSize {
		l.Name = name[:nameSize]
	}
	switch {
	case strings.HasPrefix(name, "sha256_modulus_") && strings.HasSuffix(name, ".csv"):
		l.Key, l.Scheme = "RSA-"+strings.TrimSuffix(strings.TrimPrefix(name, "sha256_modulus_"), ".csv"), SHA256Modulus
	case strings.HasPrefix(name, "sha256_xcoord_") && strings.HasSuffix(name, ".csv"):
		l.Key, l.Scheme = curveAliases[strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(name, "sha256_xcoord_"), ".csv"))], SHA256X
	case strings.HasPrefix(name, "blacklist.RSA-"):
		size, _, _ := strings.Cut(strings.TrimPrefix(name, "blacklist.RSA-"), ".")
		l.Key, l.Scheme = "RSA-"+size, VulnKey
	default:
		return List{}, false
	}
	_, err := parseCoverage(l.Key)
	return l, err == nil
}

// AddKey adds the key in data, in any form package keys reads (a PEM
// private key as openssl genrsa writes it, a public key, a certificate),
// to the list of that name for its type and size: an RSA key's
// [SHA256Modulus] hash, an EC key's [SHA256X].
func (b *Builder) AddKey(name string, data []byte) error {
	spki, err := keys.SPKI(data)
	if err != nil {
		return err
	}
	k, err := parseSPKI(spki)
	if err != nil {
		return err
	}
	l := List{Name: name}
	var material []byte
	switch {
	case k.rsa:
		l.Key, l.Scheme, material = coverage{typeRSA, 8*len(k.n) - leadingZeros(k.n[0])}.String(), SHA256Modulus, k.n
	case k.ec:
		cv := curveByOID(k.curve)
		if k.ecParams == der.TagSequence {
			if cv, err = explicitCurve(spki, &k); err != nil {
				return err
			}
		}
		if cv == nil {
			return perr.Errorf("%w: an EC key on a curve that is not P-256, P-384 or P-521", keys.ErrInvalidKey)
		}
		x, reason := cv.validate(k.point)
		if reason != "" {
			return perr.Errorf("%w: EC public key is not a valid point of %s: %s", keys.ErrInvalidKey, cv.name, reason)
		}
		l.Key, l.Scheme, material = cv.name, SHA256X, x
	default:
		return perr.Errorf("%w: %s keys have no Debian weak-key list", keys.ErrUnsupportedKey, algorithmName(k.alg))
	}
	bl, err := b.list(l)
	if err != nil {
		return err
	}
	var h keyHashes
	h.reset(material)
	bl.add(h.of(l.Scheme))
	return nil
}

// AddKeyTree adds, as [Builder.AddKey] does, every regular file named
// *.key or *.pem in the directory tree at root (as the HARICA repository
// lays out its weak keys: <arch>/<rnd>/rsa-<bits>/<PID>.key). Errors name
// the file.
func (b *Builder) AddKeyTree(name, root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || (!strings.HasSuffix(path, ".key") && !strings.HasSuffix(path, ".pem")) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := b.AddKey(name, data); err != nil {
			return perr.Errorf("%s: %w", path, err)
		}
		return nil
	})
}

// WriteFile writes the lists to path, as [Builder.WriteTo] does, replacing
// the file there in one step: a reader opens the old file or the new one,
// never a part.
func (b *Builder) WriteFile(path string) error {
	return mapfile.WriteAtomic(path, func(w io.Writer) error {
		_, err := b.WriteTo(w)
		return err
	}, nil)
}

// WriteTo writes the lists as one Debian weak-key file: each list's hashes
// sorted, without duplicates. Every list must have a hash.
func (b *Builder) WriteTo(w io.Writer) (int64, error) {
	if len(b.lists) == 0 {
		return 0, perr.Errorf("no Debian weak-key lists to write")
	}
	lists := slices.Clone(b.lists)
	slices.SortFunc(lists, func(x, y *buildList) int { return compareLists(&x.debianList, &y.debianList) })
	table := make([]byte, 0, len(lists)*recordSize)
	offset := uint64(headerSize + len(lists)*recordSize)
	for _, l := range lists {
		if len(l.hashes) == 0 {
			return 0, perr.Errorf("list %s (%s) has no hashes", l.Name, l.Key)
		}
		slices.SortFunc(l.hashes, func(x, y [2]uint64) int {
			if c := cmp.Compare(x[0], y[0]); c != 0 {
				return c
			}
			return cmp.Compare(x[1], y[1])
		})
		l.hashes = slices.Compact(l.hashes)
		l.Entries = len(l.hashes)
		table = appendRecord(table, &l.debianList, offset)
		offset += uint64(len(l.hashes) * l.width)
	}
	// The entries are encoded twice, for the checksum and for w, rather
	// than held: they are as large as the hashes.
	sum := sha256.New()
	sum.Write(table)
	buf := make([]byte, 0, 64<<10)
	for _, l := range lists {
		l.encode(buf, func(b []byte) error { sum.Write(b); return nil })
	}
	cw := &countWriter{w: w}
	if err := writeHeader(cw, len(lists), offset, sum.Sum(nil)); err != nil {
		return cw.n, err
	}
	if _, err := cw.Write(table); err != nil {
		return cw.n, err
	}
	for _, l := range lists {
		if err := l.encode(buf, func(b []byte) error { _, err := cw.Write(b); return err }); err != nil {
			return cw.n, err
		}
	}
	return cw.n, nil
}

// encode gives the list's entries to f, in order, in buf's capacity at a
// time.
func (l *buildList) encode(buf []byte, f func([]byte) error) error {
	var e [16]byte
	for _, h := range l.hashes {
		if len(buf)+l.width > cap(buf) {
			if err := f(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
		binary.BigEndian.PutUint64(e[:8], h[0])
		binary.BigEndian.PutUint64(e[8:], h[1])
		buf = append(buf, e[:l.width]...)
	}
	return f(buf)
}

// countWriter counts what it writes.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
