package pkbfssh

import (
	"errors"
	"io/fs"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/pkbf/pkbf/internal/perr"
)

// DefaultFiles are sshd's default AuthorizedKeysFile patterns.
var DefaultFiles = []string{".ssh/authorized_keys", ".ssh/authorized_keys2"}

// reads bounds the reads under way, those given up on included.
var reads = make(chan struct{}, 64)

// Options say how [ReadFile] reads a user's file. The zero value reads as
// sshd does by default.
type Options struct {
	// IgnoreModes leaves out sshd's StrictModes checks (StrictModes no).
	IgnoreModes bool
	// MaxSize is the largest file read, in bytes; 0 means 1 MiB.
	MaxSize int64
	// Timeout bounds the time one file may take to read; 0 means 10 s.
	Timeout time.Duration
}

const (
	defaultMaxSize = 1 << 20
	defaultTimeout = 10 * time.Second
)

// ExpandPath expands sshd's AuthorizedKeysFile tokens in pattern (%h the
// home directory, %u the user name, %U the uid, %% a %) and makes a
// relative path relative to the user's home directory.
func ExpandPath(pattern string, u *user.User) string {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '%' || i+1 == len(pattern) {
			b.WriteByte(pattern[i])
			continue
		}
		i++
		switch pattern[i] {
		case 'h':
			b.WriteString(u.HomeDir)
		case 'u':
			b.WriteString(u.Username)
		case 'U':
			b.WriteString(u.Uid)
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(pattern[i])
		}
	}
	path := b.String()
	if !filepath.IsAbs(path) {
		path = filepath.Join(u.HomeDir, path)
	}
	return path
}

// A File is one of a user's authorized_keys files, as [ReadFiles] read it.
type File struct {
	Path string // the file's path, its pattern expanded
	Data []byte // its contents, or nil when Err is set
	Err  error  // why it was not read (it is then skipped); never a missing file's
}

// ReadFiles reads u's authorized_keys files named by patterns (sshd's
// AuthorizedKeysFile, expanded by [ExpandPath]; [DefaultFiles] when there
// are none), in order, each as [ReadFile] reads it. A missing file is left
// out, as sshd skips it silently; one that could not be read is returned
// with its error, which names it, and no data.
func ReadFiles(patterns []string, u *user.User, opts Options) []File {
	if len(patterns) == 0 {
		patterns = DefaultFiles
	}
	var files []File
	for _, p := range patterns {
		path := ExpandPath(p, u)
		b, err := ReadFile(path, u, opts)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		files = append(files, File{Path: path, Data: b, Err: err})
	}
	return files
}

// ReadFile reads the authorized_keys file at path for user u as sshd
// does: a regular file only, opened without blocking; never a file u
// could not read (on Linux, pkbf running as root opens it with u's
// filesystem uid, gid and groups and no capability, so the kernel decides;
// elsewhere, or when pkbf may not take u's rights, the mode bits of the
// file and of every directory of its resolved path are checked for u's
// uid and groups, a check a racing symlink swap can pass); with sshd's
// StrictModes checks on the resolved path unless opts.IgnoreModes; at
// most opts.MaxSize bytes and opts.Timeout. A missing file gives an error
// that is errors.Is fs.ErrNotExist; every other error names the file.
// On a timeout the read goes on in the background until the system call
// returns, and its result is dropped.
func ReadFile(path string, u *user.User, opts Options) ([]byte, error) {
	// A read given up on still holds its goroutine (and, as root on
	// Linux, an OS thread) until the file system answers: reads counts
	// them, so that a long-running server cannot pile them up.
	if opts.MaxSize <= 0 {
		opts.MaxSize = defaultMaxSize
	}
	if opts.Timeout <= 0 {
		opts.Timeout = defaultTimeout
	}
	type result struct {
		b   []byte
		err error
	}
	select {
	case reads <- struct{}{}:
	default:
		return nil, perr.Errorf("reading %s: %d reads are still under way (a file system that does not answer): refused", path, cap(reads))
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-reads }()
		b, err := readFile(path, u, opts)
		done <- result{b, err}
	}()
	t := time.NewTimer(opts.Timeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.b, r.err
	case <-t.C:
		return nil, perr.Errorf("reading %s took over %v: given up", path, opts.Timeout)
	}
}
