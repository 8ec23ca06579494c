package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/pkbf/pkbf/weakkeys"
)

// pkbf weak builds and inspects the Debian weak-key file that the
// Baseline Requirements' weak-key checks (package weakkeys) read: the
// published lists and key trees, in one file the checks map into memory.

var weakHelp = helpFile("weak")

// runWeak runs when no subcommand was named: the table's subs dispatch
// build and info.
func runWeak(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return runGroup("weak", args, stdout, stderr)
}

type weakBuildFlags struct {
	name  string
	force bool
}

func (fl *weakBuildFlags) command(stdout, stderr io.Writer) *command {
	c := newCommand("weak build", "weak build [--name NAME] [--force] OUT SOURCE...", stdout, stderr)
	c.summary = weakHelp
	c.StringVar(&fl.name, "name", "", "the list `NAME` for the keys of a directory SOURCE (default: the directory's name)")
	c.BoolVar(&fl.force, "force", false, "replace OUT if it exists and is not a Debian weak-key file (one is always replaced)")
	c.alias("n", "name")
	c.alias("f", "force")
	return c
}

func runWeakBuild(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var fl weakBuildFlags
	c := fl.command(stdout, stderr)
	if ok, code := c.parse(args, 2, -1); !ok {
		return code
	}
	out, sources := c.Arg(0), c.Args()[1:]
	if !fl.force {
		if err := refuseExistingWeak(out); err != nil {
			errorf(stderr, "%s", err)
			return exitTrouble
		}
	}
	start := time.Now()
	var current atomic.Int64
	prog := startProgress(newScreen(stdout, stderr), nil, func(p *progress) {
		p.line = func(elapsed time.Duration) string {
			i := int(current.Load())
			if i == len(sources) {
				return fmt.Sprintf("writing %s, %s", out, elapsed.Round(time.Second))
			}
			return fmt.Sprintf("reading %s (%d of %d), %s", sources[i], i+1, len(sources), elapsed.Round(time.Second))
		}
	})
	var b weakkeys.Builder
	for i, source := range sources {
		current.Store(int64(i))
		if err := b.AddSource(source, fl.name); err != nil {
			prog.stop()
			errorf(stderr, "%s; nothing written", message(err))
			return exitTrouble
		}
	}
	current.Store(int64(len(sources)))
	err := b.WriteFile(out)
	prog.stop()
	if err != nil {
		return trouble(stderr, err)
	}
	d, err := weakkeys.OpenDebian(out)
	if err != nil {
		return trouble(stderr, err)
	}
	defer d.Close()
	lists := d.Lists()
	fmt.Fprintf(stdout, "wrote %s: %s, %s, from %s, %s\n", out, plural(len(lists), "list", "lists"),
		plural(weakEntries(lists), "entry", "entries"), plural(len(sources), "source", "sources"), time.Since(start).Round(time.Millisecond))
	printWeakLists(stdout, lists)
	return exitOK
}

// refuseExistingWeak refuses an existing out that is not a Debian
// weak-key file: "pkbf weak build LIST..." without OUT would replace the
// first list.
func refuseExistingWeak(out string) error {
	if _, err := os.Stat(out); err != nil {
		return nil
	}
	d, err := weakkeys.OpenDebian(out)
	if err != nil {
		return fmt.Errorf("%s; it exists, and is no Debian weak-key file to rebuild: give --force to replace it (the first argument is the output)", message(err))
	}
	return d.Close()
}

type weakInfoFlags struct{ json bool }

func (fl *weakInfoFlags) command(stdout, stderr io.Writer) *command {
	c := newCommand("weak info", "weak info [--json] FILE", stdout, stderr)
	c.summary = weakHelp
	c.BoolVar(&fl.json, "json", false, "print one JSON object")
	c.alias("j", "json")
	return c
}

func runWeakInfo(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var fl weakInfoFlags
	c := fl.command(stdout, stderr)
	if ok, code := c.parse(args, 1, 1); !ok {
		return code
	}
	path := c.Arg(0)
	d, err := weakkeys.OpenDebian(path) // checks all of it: the checksum, every list's order
	if err != nil {
		return trouble(stderr, err)
	}
	defer d.Close()
	fi, err := os.Stat(path)
	if err != nil {
		return trouble(stderr, err)
	}
	lists := d.Lists()
	if fl.json {
		b, _ := json.Marshal(struct {
			File    string          `json:"file"`
			Size    int64           `json:"size"`
			Entries int             `json:"entries"`
			Lists   []weakkeys.List `json:"lists"`
		}{path, fi.Size(), weakEntries(lists), lists})
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	fmt.Fprintf(stdout, "file:    %s\nsize:    %s\nentries: %d in %s\n", path, sizeText(uint64(fi.Size())), weakEntries(lists), plural(len(lists), "list", "lists"))
	printWeakLists(stdout, lists)
	return exitOK
}

// printWeakLists prints a table of the lists, in the file's order.
func printWeakLists(w io.Writer, lists []weakkeys.List) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "key\tscheme\tentries\tname")
	for _, l := range lists {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", l.Key, l.Scheme, l.Entries, l.Name)
	}
	tw.Flush()
}

func weakEntries(lists []weakkeys.List) int {
	n := 0
	for _, l := range lists {
		n += l.Entries
	}
	return n
}
