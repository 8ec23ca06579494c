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

	"github.com/pkbf/pkbf/internal/cli"
	"github.com/pkbf/pkbf/nixbloom"
)

// pkbf nix builds and queries the Bloom filters a Nix binary cache may
// publish of its store paths (the nixbloom format, named by the BloomFilter
// field of the cache's nix-cache-info), so that a client asks the cache
// only about paths it may hold.

var nixHelp = helpFile("nix")

// runNix runs when no subcommand was named: the table's subs dispatch
// build and check.
func runNix(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return runGroup("nix", args, stdout, stderr)
}

type nixBuildFlags struct {
	rate   float64
	output string
}

func (fl *nixBuildFlags) command(stdout, stderr io.Writer) *command {
	c := newCommand("nix build", "nix build [--fp-rate P] [--output PATH] SOURCE", stdout, stderr)
	c.summary = nixHelp
	c.Float64Var(&fl.rate, "fp-rate", 0.01, "the false-positive rate `P` the filter is sized for")
	c.StringVar(&fl.output, "output", "", "where to write the filter: for a cache directory, a `PATH` inside it (default "+nixbloom.DefaultFilterName+"); for a list of paths, the file (required)")
	c.alias("p", "fp-rate")
	c.alias("o", "output")
	return c
}

func runNixBuild(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var fl nixBuildFlags
	c := fl.command(stdout, stderr)
	if ok, code := c.parse(args, 1, 1); !ok {
		return code
	}
	rate := fl.rate
	if !(rate > 0 && rate < 1) {
		return c.fail(fmt.Sprintf("--fp-rate %v: want a rate between 0 and 1", rate))
	}
	source := c.Arg(0)
	start := time.Now()
	fi, err := os.Stat(source)
	isCache := err == nil && fi.IsDir()
	out := fl.output
	switch {
	case isCache && out == "":
		out = nixbloom.DefaultFilterName
	case !isCache && out == "":
		return c.fail("a list of store paths needs --output FILE")
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
	f, err := nixbloom.FromPaths(paths, rate)
	if err != nil {
		return trouble(stderr, err)
	}
	if isCache {
		err = nixbloom.Publish(source, filepath.ToSlash(out), f)
		out = filepath.Join(source, out)
	} else {
		err = f.WriteFile(out)
	}
	if err != nil {
		return trouble(stderr, err)
	}
	fmt.Fprintf(stdout, "wrote %s: %d store paths, %d bits, %d hash functions, sized for a false-positive rate of %g, %s\n",
		out, len(paths), f.M(), f.K(), rate, time.Since(start).Round(time.Millisecond))
	return exitOK
}

type nixCheckFlags struct {
	json, confirm bool
	timeout       time.Duration
}

func (fl *nixCheckFlags) command(stdout, stderr io.Writer) *command {
	c := newCommand("nix check", "nix check [--json] [--confirm] CACHE [PATH...]", stdout, stderr)
	c.summary = nixHelp
	c.BoolVar(&fl.json, "json", false, "print one JSON object a path")
	c.BoolVar(&fl.confirm, "confirm", false, "ask the cache for the .narinfo of each possibly-present path")
	c.DurationVar(&fl.timeout, "timeout", 2*time.Minute, "give up on the cache after `DURATION` in all (0: never)")
	c.alias("j", "json")
	c.alias("c", "confirm")
	return c
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
	var fl nixCheckFlags
	c := fl.command(stdout, stderr)
	if ok, code := c.parse(args, 1, -1); !ok {
		return code
	}
	// Ctrl-C ends the check as it ends pkbf check: "interrupted", exit
	// 130; the timeout is a failure of the cache (exit 2).
	interrupt, release := cli.InterruptContext()
	defer release()
	ctx := interrupt
	if fl.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, fl.timeout)
		defer cancel()
	}
	cache, err := nixbloom.OpenCache(c.Arg(0), nil)
	if err != nil {
		return trouble(stderr, err)
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
		verdict, maybe, err := cache.Check(ctx, f, path, fl.confirm)
		v := nixVerdict{Source: source, Path: path, Verdict: verdict}
		switch {
		case verdict == "":
			v.Error = fmt.Sprintf("%s: %s", source, message(err))
		case err != nil && interrupt.Err() != nil:
			asked-- // not answered: the run ends as interrupted
			return
		case err != nil:
			v.Error = fmt.Sprintf("%s: confirming %s: %s", source, path, message(err))
			fallthrough
		default:
			v.PossiblyPresent = &maybe
		}
		switch {
		case verdict == nixbloom.Present || verdict == nixbloom.PossiblyPresent:
			found++
		case v.Error != "":
			failed++
			out.Flush()
			errorf(stderr, "%s", v.Error)
		}
		if fl.json {
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
