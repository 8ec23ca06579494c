package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/cli"
)

type mergeFlags struct{ force bool }

func (fl *mergeFlags) command(stdout, stderr io.Writer) *command {
	c := newCommand("merge", "merge [--force] OUT FILTER...", stdout, stderr)
	c.BoolVar(&fl.force, "force", false, "replace OUT if it exists (it may always be one of the FILTERs)")
	c.alias("f", "force")
	return c
}

func runMerge(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var fl mergeFlags
	c := fl.command(stdout, stderr)
	if ok, code := c.parse(args, 2, -1); !ok {
		return code
	}
	force := fl.force
	out, inputs := c.Arg(0), c.Args()[1:]
	if !force {
		if err := refuseExisting(out, inputs); err != nil {
			errorf(stderr, "%s", err)
			return exitTrouble
		}
	}
	// A first Ctrl-C stops between chunks (Merge removes its temporary
	// file); a second quits at once, even while an input blocks.
	ctx, release := cli.InterruptContext()
	defer release()
	start := time.Now()
	h, err := pkbf.Merge(ctx, out, inputs...)
	switch {
	case errors.Is(err, context.Canceled):
		errorf(stderr, "interrupted: %s was not written", out)
		return exitSignaled
	case err != nil:
		return trouble(stderr, err)
	}
	fmt.Fprintf(stdout, "merged %s into %s: revision %d, %d entries (a key in several filters counted once for each), hash count %d, hash length %d, %s, %s\n",
		plural(len(inputs), "filter", "filters"), out, h.Revision, h.EntryCount, h.HashCount, h.HashLength,
		sizeText(h.FileSize()), time.Since(start).Round(time.Millisecond))
	return exitOK
}

// refuseExisting refuses an existing out that is not one of the inputs,
// which would be a slip of the order of the arguments: "pkbf merge a b c"
// would replace the shard a by the union of b and c. The error says what
// out is. (A directory, FIFO or device is refused even with --force, by
// pkbf.Merge.)
func refuseExisting(out string, inputs []string) error {
	fo, err := os.Stat(out)
	if err != nil {
		return nil
	}
	for _, in := range inputs {
		if fi, err := os.Stat(in); err == nil && os.SameFile(fo, fi) {
			return nil
		}
	}
	what := "a filter that is not one of the filters merged"
	if f, err := pkbf.Open(out); err != nil {
		what = "not a readable filter (" + message(err) + ")"
	} else {
		f.Close()
	}
	return fmt.Errorf("%s exists and is %s: give --force to replace it (the first argument is the output)", out, what)
}
