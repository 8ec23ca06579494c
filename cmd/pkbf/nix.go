package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
  one): the filter holds the StorePath of each of its .narinfo files (read
  as Nix reads them), is written to PATH inside it (default
  ` + defaultNixFilterName + `: a name the BloomFilter field reads back
  as that file, and none of the cache's own: no .narinfo or .ls, nothing
  under nar/, log/, realisations/ or debuginfo/), and its nix-cache-info
  gets BloomFilter: PATH. A symbolic link under the cache on the way to
  either file is refused: nothing is written through one. Or SOURCE is a
  file of store paths, one a line (- for standard input), and --output
  names the filter file. Files are replaced atomically (the filter first,
  then nix-cache-info). Run it again after each nix copy to the cache: a
  path added since is not in the filter, and clients would skip it.

pkbf nix check [--json] [--confirm] CACHE [PATH...]
  CACHE is the cache's URL (https://, http://, file://) or directory.
  PATHs are store paths, base names or hash parts, in the characters Nix
  allows (no control characters); standard input, one a line, when none.
  Prints for each: possibly-present or absent, then the path, separated
  by a tab (--json: one object a line). The filter answers from its bits
  alone: absent is certain, possibly-present may be a false positive.
  --confirm asks the cache for the .narinfo of each possibly-present
  path: present (a Nix whose store is the path's directory would open the
  cache and take that .narinfo for that path; signatures are not
  checked), absent (the filter's false positive), or unconfirmed
  (anything else: a cache or .narinfo Nix would refuse, a file sent with
  a Content-Encoding, a path outside the cache's store). What a cache
  says never leads to a file outside it: the BloomFilter field is a path
  under the cache or an http(s) URL, redirects go to http(s) only, and
  from an https cache never to plain http.

Exit status of check, the first row that applies: 130 interrupted
(Ctrl-C), after printing the answers made; 1 a path is possibly
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
	out := *output
	switch {
	case isCache && out == "":
		out = defaultNixFilterName
	case isCache && (filepath.IsAbs(out) || !filepath.IsLocal(out)):
		_, code := c.fail(fmt.Sprintf("--output %s: for a cache directory, give a path inside it, relative to it", out))
		return code
	case !isCache && out == "":
		_, code := c.fail("a list of store paths needs --output FILE")
		return code
	}
	var paths []string
	switch {
	case isCache:
		paths, err = nixbloom.CachePaths(source)
	case source == "-":
		paths, err = nixbloom.ReadPaths(stdin, "<stdin>")
	default:
		var f *os.File
		if f, err = os.Open(source); err == nil {
			paths, err = nixbloom.ReadPaths(f, source)
			f.Close()
		}
	}
	if err != nil {
		errorf(stderr, "%s; nothing written", message(err))
		return exitTrouble
	}
	f, err := nixbloom.FromPaths(paths, *rate)
	if err != nil {
		errorf(stderr, "%s", message(err))
		return exitTrouble
	}
	if isCache {
		err = nixbloom.Publish(source, filepath.ToSlash(out), f)
		out = filepath.Join(source, out)
	} else if err = mapfile.WriteAtomic(out, func(w io.Writer) error { _, err := f.WriteTo(w); return err }, nil); err != nil {
		err = fmt.Errorf("writing %s: %w", out, err)
	}
	if err != nil {
		errorf(stderr, "%s", message(err))
		return exitTrouble
	}
	fmt.Fprintf(stdout, "wrote %s: %d store paths, %d bits, %d hash functions, sized for a false-positive rate of %g, %s\n",
		out, len(paths), f.M(), f.K(), *rate, time.Since(start).Round(time.Millisecond))
	return exitOK
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
	// Ctrl-C ends the check as it ends pkbf check: "interrupted", exit
	// 130; the timeout is a failure of the cache (exit 2).
	interrupt, release := interruptContext()
	defer release()
	ctx := interrupt
	if *fl.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *fl.timeout)
		defer cancel()
	}
	cache, err := nixbloom.OpenCache(c.Arg(0), nil)
	if err != nil {
		errorf(stderr, "%s", message(err))
		return exitTrouble
	}
	defer cache.Close()
	f, err := cache.Filter(ctx)
	if err != nil && interrupt.Err() != nil {
		errorf(stderr, "interrupted: no path checked")
		return exitSignaled
	}
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
	// <stdin> as it is, as pkbf check --json writes it.
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	var found, failed, asked int
	answer := func(source, path string) {
		if interrupt.Err() != nil {
			return
		}
		asked++
		v := nixVerdict{Source: source, Path: path}
		maybe, err := f.MayContain(path)
		switch {
		case err != nil:
			v.Error = fmt.Sprintf("%s: %s", source, message(err))
		case maybe && *fl.confirm:
			v.PossiblyPresent = &maybe
			present, err := cache.Confirm(ctx, path)
			if err != nil && interrupt.Err() != nil {
				asked-- // not answered: the run ends as interrupted
				return
			}
			v.Verdict = map[bool]string{true: "present", false: "absent"}[present]
			if err != nil {
				v.Verdict, v.Error = "unconfirmed", fmt.Sprintf("%s: confirming %s: %s", source, path, message(err))
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
			enc.Encode(v)
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
	case interrupt.Err() != nil:
		errorf(stderr, "interrupted: %s answered", plural(asked, "path", "paths"))
		return exitSignaled
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
