package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/pkbf/pkbf/internal/mapfile"
	"github.com/pkbf/pkbf/nixbloom"
)

// pkbf nix builds and queries the Bloom filters a Nix binary cache may
// publish of its store paths (the nixbloom format, named by the BloomFilter
// field of the cache's nix-cache-info), so that a client asks the cache
// only about paths it may hold.

// defaultNixFilterName is where nix build puts a cache's filter, relative
// to the cache's root.
const defaultNixFilterName = "store-paths.nixbloom"

const nixHelp = `Build and query the Bloom filter a Nix binary cache publishes of its store
paths (the BloomFilter field of its nix-cache-info names the file).

pkbf nix build [--fp-rate P] [--output PATH] SOURCE
  SOURCE is a binary cache directory (as nix copy --to file://DIR writes
  one): the filter holds the StorePath of each of its .narinfo files, is
  written to PATH inside it (default ` + defaultNixFilterName + `), and its
  nix-cache-info gets BloomFilter: PATH. Or SOURCE is a file of store paths,
  one a line (- for standard input), and --output names the filter file.
  Files are replaced atomically (the filter first, then nix-cache-info).
  Run it again after each nix copy to the cache: a path added since is not
  in the filter, and clients would skip it.

pkbf nix check [--json] [--confirm] CACHE [PATH...]
  CACHE is the cache's URL (https://, http://, file://) or directory.
  PATHs are store paths, base names or hash parts; standard input, one a
  line, when none. Prints for each: possibly-present or absent, then the
  path, separated by a tab (--json: one object a line). The filter answers
  from its bits alone: absent is certain, possibly-present may be a false
  positive. --confirm asks the cache for the .narinfo of each
  possibly-present path: present, or absent (the filter's false positive),
  or unconfirmed.

Exit status of check, the first row that applies: 1 a path is possibly
present (with --confirm: present); 2 no such path, but a PATH was not a
store path, a confirmation failed, the filter could not be fetched, or
there was no PATH at all; 0 every path is absent.`

func runNix(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "build":
			return runNixBuild(args[1:], stdin, stdout, stderr)
		case "check":
			return runNixCheck(args[1:], stdin, stdout, stderr)
		case "-h", "-help", "--help", "help":
			nixCommand(stdout, stderr).printUsage(stdout)
			return exitOK
		}
	}
	errorf(stderr, "want pkbf nix build or pkbf nix check\nRun 'pkbf help nix' for usage.")
	return exitTrouble
}

func nixCommand(stdout, stderr io.Writer) *command {
	return newCommand("nix", "nix (build [flags] SOURCE | check [flags] CACHE [PATH...])", stdout, stderr)
}

func nixBuildCommand(stdout, stderr io.Writer) (*command, *float64, *string) {
	c := newCommand("nix build", "nix build [--fp-rate P] [--output PATH] SOURCE", stdout, stderr)
	c.summary = nixHelp
	p := c.Float64("fp-rate", 0.01, "the false-positive rate `P` the filter is sized for")
	out := c.String("output", "", "where to write the filter: for a cache directory, a `PATH` inside it (default "+defaultNixFilterName+"); for a list of paths, the file (required)")
	c.alias("p", "fp-rate")
	c.alias("o", "output")
	return c, p, out
}

func runNixBuild(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, rate, output := nixBuildCommand(stdout, stderr)
	if ok, code := c.parse(args, 1, 1); !ok {
		return code
	}
	if !(*rate > 0 && *rate < 1) {
		_, code := c.fail(fmt.Sprintf("--fp-rate %v: want a rate between 0 and 1", *rate))
		return code
	}
	source := c.Arg(0)
	start := time.Now()
	fi, err := os.Stat(source)
	isCache := err == nil && fi.IsDir()
	out, field := *output, ""
	switch {
	case isCache:
		if out == "" {
			out = defaultNixFilterName
		}
		if filepath.IsAbs(out) || !filepath.IsLocal(out) {
			_, code := c.fail(fmt.Sprintf("--output %s: for a cache directory, give a path inside it, relative to it", out))
			return code
		}
		field, out = filepath.ToSlash(out), filepath.Join(source, out)
	case out == "":
		_, code := c.fail("a list of store paths needs --output FILE")
		return code
	}
	var paths []string
	switch {
	case isCache:
		paths, err = narinfoPaths(source)
	case source == "-":
		paths, err = listPaths("<stdin>", stdin)
	default:
		var f *os.File
		if f, err = os.Open(source); err == nil {
			paths, err = listPaths(source, f)
			f.Close()
		}
	}
	if err != nil {
		errorf(stderr, "%s; nothing written", message(err))
		return exitTrouble
	}
	f, err := nixbloom.New(uint64(len(paths)), *rate)
	if err != nil {
		errorf(stderr, "%s", message(err))
		return exitTrouble
	}
	for _, p := range paths {
		f.Add(p) // every path was checked by narinfoPaths or listPaths
	}
	if err := mapfile.WriteAtomic(out, func(w io.Writer) error { _, err := f.WriteTo(w); return err }, nil); err != nil {
		errorf(stderr, "writing %s: %s", out, message(err))
		return exitTrouble
	}
	if isCache {
		if err := setCacheInfoField(filepath.Join(source, "nix-cache-info"), "BloomFilter", field); err != nil {
			errorf(stderr, "%s (the filter is written, but the cache does not name it)", message(err))
			return exitTrouble
		}
	}
	fmt.Fprintf(stdout, "wrote %s: %d store paths, %d bits, %d hash functions, sized for a false-positive rate of %g, %s\n",
		out, len(paths), f.M(), f.K(), *rate, time.Since(start).Round(time.Millisecond))
	return exitOK
}

// narinfoPaths returns the store path of every .narinfo file at the root
// of a binary cache directory, each checked; a cache without a
// nix-cache-info is refused.
func narinfoPaths(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "nix-cache-info")); err != nil {
		return nil, fmt.Errorf("%s is not a Nix binary cache: %w", dir, err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.narinfo"))
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(names))
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		p, ok := narinfoField(b, "StorePath")
		if !ok {
			return nil, fmt.Errorf("%s: no StorePath field", name)
		}
		if _, err := nixbloom.HashPart(p); err != nil {
			return nil, fmt.Errorf("%s: StorePath: %w", name, err)
		}
		if hash := strings.TrimSuffix(filepath.Base(name), ".narinfo"); !strings.HasPrefix(filepath.Base(p), hash) {
			return nil, fmt.Errorf("%s: StorePath %s does not have the file's hash part", name, p)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// narinfoField returns the value of a "Key: value" line of a .narinfo or
// nix-cache-info file.
func narinfoField(b []byte, key string) (string, bool) {
	for line := range bytes.Lines(b) {
		k, v, ok := strings.Cut(strings.TrimRight(string(line), "\r\n"), ":")
		if ok && k == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// listPaths reads store paths, one a line; blank lines and # comments are
// skipped, anything else that is not a store path is an error that says
// where.
func listPaths(name string, r io.Reader) ([]string, error) {
	var paths []string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		p := strings.TrimSpace(sc.Text())
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		if _, err := nixbloom.HashPart(p); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", name, n, err)
		}
		paths = append(paths, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return paths, nil
}

// setCacheInfoField sets key in a nix-cache-info file, replacing the line
// that has it or adding one, and replaces the file atomically.
func setCacheInfoField(path, key, value string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	done := false
	for line := range bytes.Lines(b) {
		if k, _, ok := strings.Cut(string(line), ":"); ok && k == key {
			if !done {
				fmt.Fprintf(&out, "%s: %s\n", key, value)
				done = true
			}
			continue
		}
		out.Write(line)
		if !bytes.HasSuffix(line, []byte("\n")) {
			out.WriteByte('\n')
		}
	}
	if !done {
		fmt.Fprintf(&out, "%s: %s\n", key, value)
	}
	return mapfile.WriteAtomic(path, func(w io.Writer) error { _, err := w.Write(out.Bytes()); return err }, nil)
}

type nixCheckFlags struct {
	json, confirm *bool
	timeout       *time.Duration
}

func nixCheckCommand(stdout, stderr io.Writer) (*command, *nixCheckFlags) {
	c := newCommand("nix check", "nix check [--json] [--confirm] CACHE [PATH...]", stdout, stderr)
	c.summary = nixHelp
	fl := &nixCheckFlags{
		json:    c.Bool("json", false, "print one JSON object a path"),
		confirm: c.Bool("confirm", false, "ask the cache for the .narinfo of each possibly-present path"),
		timeout: c.Duration("timeout", 2*time.Minute, "give up on the cache after `DURATION` in all (0: never)"),
	}
	c.alias("j", "json")
	c.alias("c", "confirm")
	return c, fl
}

// nixVerdict is nix check's answer about one path.
type nixVerdict struct {
	Source          string `json:"source"`
	Path            string `json:"path"`
	PossiblyPresent *bool  `json:"possibly_present,omitempty"`
	Verdict         string `json:"verdict,omitempty"`
	Error           string `json:"error,omitempty"`
}

func runNixCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, fl := nixCheckCommand(stdout, stderr)
	if ok, code := c.parse(args, 1, -1); !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *fl.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *fl.timeout)
		defer cancel()
	}
	cache, client, err := nixCache(c.Arg(0))
	if err != nil {
		errorf(stderr, "%s", message(err))
		return exitTrouble
	}
	f, err := nixbloom.Fetch(ctx, client, cache)
	if err != nil {
		msg := message(err)
		if errors.Is(err, nixbloom.ErrNoFilter) {
			msg += "; pkbf nix build DIR makes one for a cache directory"
		}
		errorf(stderr, "%s", msg)
		return exitTrouble
	}

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	var found, failed, asked int
	answer := func(source, path string) {
		asked++
		v := nixVerdict{Source: source, Path: path}
		maybe, err := f.MayContain(path)
		switch {
		case err != nil:
			v.Error = fmt.Sprintf("%s: %s", source, message(err))
		case maybe && *fl.confirm:
			v.PossiblyPresent = &maybe
			v.Verdict, err = confirmNarinfo(ctx, client, cache, path)
			if err != nil {
				v.Error = fmt.Sprintf("%s: confirming %s: %s", source, path, message(err))
			}
		default:
			v.PossiblyPresent = &maybe
			v.Verdict = map[bool]string{true: "possibly-present", false: "absent"}[maybe]
		}
		switch {
		case v.Verdict == "present" || (v.Verdict == "possibly-present" && !*fl.confirm):
			found++
		case v.Error != "":
			failed++
			out.Flush()
			errorf(stderr, "%s", v.Error)
		}
		if *fl.json {
			b, _ := json.Marshal(v)
			out.Write(append(b, '\n'))
		} else if v.Verdict != "" {
			fmt.Fprintf(out, "%s\t%s\n", v.Verdict, path)
		}
	}
	if c.NArg() > 1 {
		for i, p := range c.Args()[1:] {
			answer(fmt.Sprintf("argument %d", i+2), p)
		}
	} else {
		sc := bufio.NewScanner(stdin)
		for n := 1; sc.Scan(); n++ {
			if p := strings.TrimSpace(sc.Text()); p != "" && !strings.HasPrefix(p, "#") {
				answer(fmt.Sprintf("<stdin>: line %d", n), p)
			}
		}
		if err := sc.Err(); err != nil {
			errorf(stderr, "reading <stdin>: %v", err)
			failed++
		}
	}
	if err := out.Flush(); err != nil {
		errorf(stderr, "%v", err)
		return exitTrouble
	}
	switch {
	case found > 0:
		return exitFound
	case failed > 0 || ctx.Err() != nil:
		return exitTrouble
	case asked == 0:
		errorf(stderr, "no store path to check: give PATHs, or one a line on standard input")
		return exitTrouble
	}
	return exitOK
}

// nixCache turns nix check's CACHE into a URL and a client for it: a
// directory or file:// URL is read through a file transport; a query (Nix's
// own store options, ?compression=none) is dropped.
func nixCache(cache string) (string, *http.Client, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.RegisterProtocol("file", http.NewFileTransport(http.Dir("/")))
	client := &http.Client{Transport: t}
	u, err := url.Parse(cache)
	if err != nil || u.Scheme == "" || (len(u.Scheme) == 1 && filepath.VolumeName(cache) != "") {
		abs, err := filepath.Abs(cache)
		if err != nil {
			return "", nil, err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return "", nil, fmt.Errorf("cache %s: not a URL (https://, http://, file://) nor a directory", cache)
		}
		return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), client, nil
	}
	switch u.Scheme {
	case "http", "https", "file":
	default:
		return "", nil, fmt.Errorf("cache %s: pkbf reads http, https and file caches, not %s://", cache, u.Scheme)
	}
	u.RawQuery, u.Fragment = "", ""
	return u.String(), client, nil
}

// confirmNarinfo asks the cache for path's .narinfo: present (200) or
// absent (404, the filter's false positive).
func confirmNarinfo(ctx context.Context, client *http.Client, cache, path string) (string, error) {
	hash, err := nixbloom.HashPart(path)
	if err != nil {
		return "", err
	}
	u := strings.TrimSuffix(cache, "/") + "/" + hash + ".narinfo"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "unconfirmed", err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
		return "present", nil
	case http.StatusNotFound:
		return "absent", nil
	}
	return "unconfirmed", fmt.Errorf("%s answered %s", u, resp.Status)
}
