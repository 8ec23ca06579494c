// Package doctest runs what pkbf's Markdown documents tell a user to run:
// every shell session is run and its output compared, every Go block is
// compiled (and run, where it has inputs). Tests call [Run]; a document
// that states a command nobody runs fails them.
//
// # What a document holds
//
// Every fenced block (``` or ~~~, indented or not) is one of:
//
//   - A shell session: its first non-blank line starts with "$ ". Each
//     "$ " line is a command (a line ending in "\" goes on), and the lines
//     up to the next command are the output it prints, standard output and
//     standard error together, compared line by line. In the output, "…"
//     within a line matches any text, and a line that is "…" alone
//     matches any number of lines (none included).
//   - A Go block (info string "go"): a whole file when it starts with
//     "package", else the body of func main, with the imports it uses (of
//     the standard library's and pkbf's packages; a leading import
//     declaration is kept as it is). It must compile.
//   - Anything else carries an info string saying what it is (text, toml,
//     json, ...) and is not run. A block with no info string and no "$ "
//     line is an error: commands without prompts would go untested.
//
// # Directives
//
// HTML comments just before a block, "<!-- doctest: WORD ... -->", one
// word each, change how it is run; GitHub and other renderers hide them:
//
//   - skip REASON: the commands are not run, for a REASON the test
//     logs (a network, a tool this machine lacks, a command that runs the
//     tests themselves). They are counted, never silently dropped.
//   - nocompare: the commands run and must succeed, the output shown is
//     not compared (timings, dates, a version).
//   - vectors: the block reads ../shared/vectors (the publisher's example
//     files); where the checkout has none beside it, the block is not run,
//     and counted so.
//   - exit N: every command of the block exits with status N (default 0).
//   - module DIR: the block is run by the tests of the nested module in
//     DIR (say, examples/beam), whose dependencies it needs; the others
//     count it as run there.
//   - prelude (Go): the comment's further lines are Go declarations put
//     before func main, for the names a fragment takes as given.
//   - run ARGS (Go): the program is also run, in the session's directory,
//     with ARGS (split at spaces); it must exit 0, and the comment's
//     further lines are its output, compared as a session's.
//   - file NAME: the block (json, toml, ...: not a session) is a file the
//     reader saves as NAME; it is written there, in the directory the
//     session before it ended in, as it stands.
//   - bench: the commands are benchmarks ("go test ... -bench PATTERN"):
//     each runs once, with "-benchtime 1x -count 1" in place of its own
//     (its timings are not compared), and must succeed and print a
//     result, or a skip, for every benchmark its pattern names (each
//     alternative, at each level of sub-benchmarks).
//
// # Commands in the text
//
// A code span in a paragraph or a table (not in a fenced block) that is
// a benchmark command, "go test" with -bench, is run as a block with the
// bench directive: the figures a document quotes come with the command
// that reproduces them, which must keep naming benchmarks that exist. In
// a table row, "\|" in a span is "|", as Markdown renders it.
//
// # Where commands run
//
// Each document gets its own copy of the repository (without .git), the
// directory its first session starts in. The blocks of a document run as a
// user pasting them in order into one shell would run them: each starts
// where the one before ended (its last "cd") and with the variables it
// exported, and files made last for the whole document. PATH starts with a directory holding
// pkbf built from the checkout; $PKBF is the copy's root, GOBIN a
// directory of the test's, standard input empty; for the main module's
// blocks GOFLAGS is -trimpath, so that the copies share the build cache.
// The shared test vectors are at ../shared/vectors beside the copy, as
// beside the checkout. Commands run in bash with
// pipefail, each block in one shell; a block still running after ten
// minutes (a hang: builds of a nested module take minutes on a loaded
// machine) is killed and fails. A process a block starts in the
// background (a server, with "&") may run on for the blocks after it, as
// in the reader's shell; whatever of them still runs when the document is
// done, or has failed, is killed (found, on Linux, by a variable in its
// environment).
package doctest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Block is one fenced block of a document.
type Block struct {
	File string // the document, as given to Parse
	Line int    // of the opening fence, from 1
	Info string // the info string's first word ("go", "console", "")
	Text []string
	// Commands are a shell session's commands with the output shown for
	// each; nil for other blocks.
	Commands []Command

	Skip      string // the skip directive's reason, or ""
	WriteFile string // the file directive's NAME: the block is saved there
	NoCompare bool
	Exit      int
	Module    string
	Vectors   bool
	Prelude   string   // Go declarations before func main
	Run       []string // the program's arguments, when it is to be run
	RunWant   []string // and its output
	Ran       bool     // Run was given
	// Bench: the commands are benchmarks, run once each (the bench
	// directive, or a benchmark command in the text: Info "inline").
	Bench bool
}

// Command is one "$ " line of a session (with its continuation lines) and
// the output shown after it.
type Command struct {
	Line int // of the "$ " line, from 1
	Text string
	Want []string
}

// Session reports whether b is a shell session.
func (b *Block) Session() bool { return b.Commands != nil }

// Where names the block's place, "docs/command.md:41".
func (b *Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// ErrUnmarked is Parse's error for a block with neither an info string
// nor a "$ " line.
var ErrUnmarked = errors.New("doctest: a fenced block with no info string and no \"$ \" line: give it prompts, or an info string (text, toml, ...) saying what it is")

var fenceRE = regexp.MustCompile("^( {0,3})(```+|~~~+)\\s*([^\\s`]*)")

// Parse finds the fenced blocks of a Markdown document and their
// directives. It fails on a block it cannot classify, an unknown
// directive, or a fence left open.
func Parse(name string, src []byte) ([]Block, error) {
	lines := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	var blocks []Block
	var pending []directive // the comments just before the next fence
	var errs []error
	var para []string // the text lines since the last blank line, fence or directive
	paraLine := 0
	endPara := func() {
		blocks = append(blocks, inlineBenchmarks(name, paraLine, para)...)
		para = nil
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if m := fenceRE.FindStringSubmatch(line); m != nil || trimmed == "" || strings.HasPrefix(trimmed, "<!--") {
			endPara()
		} else {
			if para == nil {
				paraLine = i + 1
			}
			para = append(para, line)
		}
		if rest, ok := strings.CutPrefix(trimmed, "<!-- doctest:"); ok {
			body := []string{}
			first := rest
			for !strings.Contains(lines[i], "-->") && i+1 < len(lines) {
				i++
				body = append(body, lines[i])
			}
			if len(body) == 0 {
				first, _, _ = strings.Cut(first, "-->")
			} else {
				last := body[len(body)-1]
				before, _, _ := strings.Cut(last, "-->")
				if strings.TrimSpace(before) == "" {
					body = body[:len(body)-1]
				} else {
					body[len(body)-1] = before
				}
			}
			pending = append(pending, directive{line: i + 1 - len(body), words: strings.Fields(first), body: body})
			continue
		}
		m := fenceRE.FindStringSubmatch(line)
		if m == nil {
			if trimmed != "" {
				pending = nil
			}
			continue
		}
		indent, fence, info := len(m[1]), m[2], m[3]
		b := Block{File: name, Line: i + 1, Info: info}
		closed := false
		for i++; i < len(lines); i++ {
			l := lines[i]
			if t := strings.TrimSpace(l); len(t) >= len(fence) && t[0] == fence[0] && strings.Trim(t, fence[:1]) == "" {
				closed = true
				break
			}
			for k := 0; k < indent && strings.HasPrefix(l, " "); k++ {
				l = l[1:]
			}
			b.Text = append(b.Text, l)
		}
		if !closed {
			errs = append(errs, fmt.Errorf("%s: the fence is never closed", b.Where()))
			break
		}
		for _, d := range pending {
			if err := d.apply(&b); err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %w", name, d.line, err))
			}
		}
		pending = nil
		b.parseSession()
		if !b.Session() && b.Info == "" {
			errs = append(errs, fmt.Errorf("%s: %w", b.Where(), ErrUnmarked))
		}
		if b.Bench && !b.Session() {
			errs = append(errs, fmt.Errorf("%s: doctest: bench on a block with no commands", b.Where()))
		}
		if b.WriteFile != "" && (b.Session() || b.Info == "go") {
			errs = append(errs, fmt.Errorf("%s: doctest: file on a shell session or a Go block: it is for a file the reader saves", b.Where()))
		}
		blocks = append(blocks, b)
	}
	endPara()
	return blocks, errors.Join(errs...)
}

var codeSpanRE = regexp.MustCompile("`([^`]+)`")

// inlineBenchmarks returns the benchmark commands among the code spans of
// a paragraph (its lines, the first numbered first), each a one-command
// block with the bench directive.
func inlineBenchmarks(name string, first int, para []string) []Block {
	var blocks []Block
	text := strings.Join(para, "\n")
	for _, m := range codeSpanRE.FindAllStringSubmatchIndex(text, -1) {
		span := strings.Join(strings.Fields(text[m[2]:m[3]]), " ")
		if !strings.HasPrefix(span, "go test ") || !strings.Contains(span, " -bench") {
			continue
		}
		line := first + strings.Count(text[:m[0]], "\n")
		if row := para[line-first]; strings.HasPrefix(strings.TrimSpace(row), "|") {
			span = strings.ReplaceAll(span, `\|`, "|") // a table cell's escaped pipe
		}
		blocks = append(blocks, Block{File: name, Line: line, Info: "inline", Text: []string{span},
			Commands: []Command{{Line: line, Text: span}}, Bench: true, NoCompare: true})
	}
	return blocks
}

// directive is one "<!-- doctest: ... -->" comment.
type directive struct {
	line  int
	words []string
	body  []string
}

func (d directive) apply(b *Block) error {
	if len(d.words) == 0 {
		return errors.New("doctest: an empty directive")
	}
	args := d.words[1:]
	switch d.words[0] {
	case "skip":
		if len(args) == 0 {
			return errors.New("doctest: skip without a reason")
		}
		b.Skip = strings.Join(args, " ")
	case "nocompare":
		b.NoCompare = true
	case "vectors":
		b.Vectors = true
	case "exit":
		n, err := strconv.Atoi(strings.Join(args, ""))
		if err != nil || len(args) != 1 {
			return fmt.Errorf("doctest: exit wants one number, not %q", strings.Join(args, " "))
		}
		b.Exit = n
	case "module":
		if len(args) != 1 {
			return errors.New("doctest: module wants one directory")
		}
		b.Module = args[0]
	case "prelude":
		b.Prelude = strings.Join(d.body, "\n")
	case "run":
		b.Ran, b.Run, b.RunWant = true, args, d.body
	case "bench":
		b.Bench, b.NoCompare = true, true
	case "file":
		if len(args) != 1 {
			return errors.New("doctest: file wants one file name")
		}
		b.WriteFile = args[0]
	default:
		return fmt.Errorf("doctest: unknown directive %q (skip, nocompare, vectors, exit, module, prelude, run, bench, file)", d.words[0])
	}
	return nil
}

// parseSession splits a session into its commands and their output.
func (b *Block) parseSession() {
	first := slices.IndexFunc(b.Text, func(l string) bool { return strings.TrimSpace(l) != "" })
	if first < 0 || !strings.HasPrefix(b.Text[first], "$ ") || b.Info == "go" {
		return
	}
	b.Commands = []Command{}
	for i := first; i < len(b.Text); i++ {
		l := b.Text[i]
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			c := Command{Line: b.Line + 1 + i, Text: cmd}
			for strings.HasSuffix(c.Text, "\\") && i+1 < len(b.Text) {
				i++
				c.Text += "\n" + b.Text[i]
			}
			b.Commands = append(b.Commands, c)
			continue
		}
		last := &b.Commands[len(b.Commands)-1]
		last.Want = append(last.Want, l)
	}
	for i := range b.Commands {
		w := b.Commands[i].Want
		for len(w) > 0 && strings.TrimSpace(w[len(w)-1]) == "" {
			w = w[:len(w)-1]
		}
		b.Commands[i].Want = w
	}
}

// Match reports whether got (output lines) is what want shows: "…" in a
// line matches any text, a line "…" any number of lines.
func Match(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "…" {
		for n := 0; n <= len(got); n++ {
			if Match(want[1:], got[n:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && lineMatch(want[0], got[0]) && Match(want[1:], got[1:])
}

func lineMatch(want, got string) bool {
	if !strings.Contains(want, "…") {
		return want == got
	}
	parts := strings.Split(want, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got)
}

// Config says which documents a test runs, and for which module.
type Config struct {
	// Root is the repository's root, where README.md is.
	Root string
	// Files are the documents, relative to Root.
	Files []string
	// Module is the nested module whose blocks this test runs ("" for
	// the main module): only blocks with its module directive are run,
	// the others are counted as another module's.
	Module string
	// Modules are the nested modules a block may name; a block naming
	// another fails.
	Modules []string
}

// Run runs the documents' sessions and Go blocks as subtests, one per
// document, and logs what each ran, and what it did not and why.
//
// It skips under -short, under the race detector (which sees nothing of
// processes the test starts), and for a GOARCH other than the machine's:
// the documents are run once, natively.
func Run(t *testing.T, cfg Config) {
	switch {
	case testing.Short():
		t.Skip("-short: the documents' commands are not run")
	case raceEnabled:
		t.Skip("-race: the documents' commands are run without it")
	}
	host, err := exec.Command("go", "env", "GOHOSTARCH").Output()
	if err != nil {
		t.Fatal("go env:", err)
	}
	if h := strings.TrimSpace(string(host)); h != runtime.GOARCH {
		t.Skipf("a %s test on %s: the documents' commands are run natively", runtime.GOARCH, h)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("doctest runs sessions with bash:", err)
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	build := exec.Command("go", "build", "-trimpath", "-o", bin+"/", "./cmd/pkbf")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building pkbf: %v\n%s", err, out)
	}
	for _, file := range cfg.Files {
		t.Run(file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := Parse(file, src)
			if err != nil {
				t.Fatal(err)
			}
			d := &doc{t: t, cfg: cfg, root: root, bin: bin, dir: t.TempDir()}
			d.mark = fmt.Sprintf("PKBF_DOCTEST=%d-%d", os.Getpid(), time.Now().UnixNano())
			t.Cleanup(func() { killMarked(d.mark) })
			d.run(blocks)
		})
	}
}

// doc runs one document's blocks.
type doc struct {
	t                    *testing.T
	cfg                  Config
	root, bin, dir, copy string
	ran, skipped, other  int
	skips                []string
	mark                 string // NAME=VALUE in the environment of every process the blocks start
}

func (d *doc) run(blocks []Block) {
	t := d.t
	for i := range blocks {
		b := &blocks[i]
		if b.Module != "" && !slices.Contains(d.cfg.Modules, b.Module) && b.Module != d.cfg.Module {
			t.Errorf("%s: module %s is not one of %v", b.Where(), b.Module, d.cfg.Modules)
			continue
		}
		n := len(b.Commands)
		if b.Info == "go" || b.WriteFile != "" {
			n = 1
		}
		switch {
		case n == 0:
			continue
		case b.Module != d.cfg.Module:
			d.other += n
		case b.Skip != "":
			d.skipped += n
			d.skips = append(d.skips, fmt.Sprintf("%s: %d not run: %s", b.Where(), n, b.Skip))
		case b.Vectors && !d.vectors():
			d.skipped += n
			d.skips = append(d.skips, fmt.Sprintf("%s: %d not run: no ../shared/vectors beside the checkout", b.Where(), n))
		case b.WriteFile != "":
			d.writeFile(b)
			d.ran++
		case b.Info == "go":
			d.goBlock(b)
			d.ran++
		default:
			d.session(b)
			d.ran += n
		}
	}
	t.Logf("%d commands and Go blocks run, %d not run, %d run by another module's test", d.ran, d.skipped, d.other)
	for _, s := range d.skips {
		t.Log(s)
	}
}

// vectors reports whether the checkout has ../shared/vectors beside it,
// and links the copy's to it.
func (d *doc) vectors() bool {
	shared := filepath.Join(filepath.Dir(d.root), "shared")
	if _, err := os.Stat(filepath.Join(shared, "vectors")); err != nil {
		return false
	}
	link := filepath.Join(d.dir, "shared")
	if _, err := os.Lstat(link); err != nil {
		if err := os.Symlink(shared, link); err != nil {
			d.t.Fatal(err)
		}
	}
	return true
}

// workdir is the document's copy of the repository, made on first use.
func (d *doc) workdir() string {
	if d.copy != "" {
		return d.copy
	}
	d.copy = filepath.Join(d.dir, "pkbf")
	if err := copyTree(d.root, d.copy); err != nil {
		d.t.Fatal(err)
	}
	return d.copy
}

func (d *doc) env() []string {
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "GOBIN", "PKBF", "PKBF_PASSPHRASE", "PKBF_UPDATE_HEADER", "TERM", "GOFLAGS", "PKBF_DOCTEST":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "PATH="+d.bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GOBIN="+filepath.Join(d.dir, "gobin"), "PKBF="+d.workdir(), "TERM=dumb", d.mark)
	if d.cfg.Module == "" {
		// The main module's packages, compiled in each document's copy,
		// share the build cache only without the directory in their
		// action IDs. (A nested module's heavy dependencies are cached
		// from its own tests' builds, which -trimpath would not reuse.)
		env = append(env, "GOFLAGS=-trimpath")
	}
	return env
}

// session runs a block's commands in one shell, each followed by a line
// with a mark and its exit status.
func (d *doc) session(b *Block) {
	t := d.t
	mark := fmt.Sprintf("@@doctest-%d-%d@@", os.Getpid(), b.Line)
	var script strings.Builder
	for _, c := range b.Commands {
		text := c.Text
		if b.Bench {
			text = BenchOnce(text)
		}
		fmt.Fprintf(&script, "%s\nprintf '\\n%%s %%d\\n' %q $?\n", text, mark)
	}
	out, err := d.shell(d.inSession(script.String()))
	chunks := strings.Split(out, "\n"+mark+" ")
	for i, c := range b.Commands {
		if i+1 >= len(chunks) {
			t.Errorf("%s:%d: $ %s\ndid not finish (%v); output:\n%s", b.File, c.Line, c.Text, err, chunks[len(chunks)-1])
			return
		}
		got := chunks[i]
		if i > 0 { // the rest of the previous mark's line
			_, got, _ = strings.Cut(chunks[i], "\n")
		}
		status, _, _ := strings.Cut(chunks[i+1], "\n")
		code, _ := strconv.Atoi(status)
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if got == "" || got == "\n" {
			lines = nil
		}
		switch {
		case code == 127 && b.Exit != 127:
			t.Errorf("%s:%d: $ %s\nexit status 127: a command this machine lacks? mark the block <!-- doctest: skip REASON --> if the test cannot have it\n%s", b.File, c.Line, c.Text, got)
		case code != b.Exit:
			t.Errorf("%s:%d: $ %s\nexit status %d, want %d; output:\n%s", b.File, c.Line, c.Text, code, b.Exit, got)
		case !b.NoCompare && !Match(c.Want, lines):
			t.Errorf("%s:%d: $ %s\nprinted:\n%s\nthe document shows:\n%s", b.File, c.Line, c.Text, got, strings.Join(c.Want, "\n"))
		case b.Bench:
			missing, skipped, err := BenchmarksRun(c.Text, lines)
			switch {
			case err != nil:
				t.Errorf("%s:%d: $ %s\n%v", b.File, c.Line, c.Text, err)
			case len(missing) > 0:
				t.Errorf("%s:%d: $ %s\nno benchmark ran for %q; printed:\n%s", b.File, c.Line, c.Text, missing, got)
			case len(skipped) > 0:
				d.skips = append(d.skips, fmt.Sprintf("%s:%d: benchmarks skipped (named, not run): %s", b.File, c.Line, strings.Join(skipped, "; ")))
			}
		}
	}
}

// inSession wraps script to run where the block before it ended and with
// what it exported, and to leave the same for the next: a user pastes a
// document's blocks into one shell.
func (d *doc) inSession(script string) string {
	state := filepath.Join(d.dir, "session.state")
	return fmt.Sprintf("set -o pipefail\n[ -f %[1]q ] && . %[1]q\n%[2]s{ printf 'cd %%q\\n' \"$PWD\"; export -p; } >%[1]q\n", state, script)
}

// writeFile saves a block with the file directive, in the directory the
// session is in.
func (d *doc) writeFile(b *Block) {
	eof := fmt.Sprintf("@@doctest-eof-%d@@", os.Getpid())
	text := strings.Join(b.Text, "\n")
	script := fmt.Sprintf("cat >%q <<'%s'\n%s\n%s\n", b.WriteFile, eof, text, eof)
	if out, err := d.shell(d.inSession(script)); err != nil {
		d.t.Errorf("%s: saving the block as %s: %v\n%s", b.Where(), b.WriteFile, err, out)
	}
}

// shell runs script with bash in the document's copy, and returns its
// output.
func (d *doc) shell(script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-c", script)
	cmd.Dir = d.workdir()
	cmd.Env = d.env()
	killGroupOnCancel(cmd)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// goBlock compiles a Go block in the module it names, and runs it where
// the block says so.
func (d *doc) goBlock(b *Block) {
	t := d.t
	src, err := GoFile(b)
	if err != nil {
		t.Errorf("%s: %v", b.Where(), err)
		return
	}
	name := fmt.Sprintf("doctest_%s_%d", strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(b.File), b.Line)
	dir := filepath.Join(d.workdir(), d.cfg.Module, "internal", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(d.dir, name)
	build := exec.Command("go", "build", "-o", exe, ".")
	build.Dir = dir
	build.Env = d.env()
	if out, err := build.CombinedOutput(); err != nil {
		t.Errorf("%s: the Go block does not compile: %v\n%s\nas compiled:\n%s", b.Where(), err, out, numbered(src))
		return
	}
	if !b.Ran {
		return
	}
	args := make([]string, len(b.Run))
	for i, a := range b.Run {
		args[i] = strconv.Quote(a)
	}
	out, err := d.shell(exe + " " + strings.Join(args, " "))
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "" {
		got = nil
	}
	if err != nil || !Match(b.RunWant, got) {
		t.Errorf("%s: the program, run with %v: %v; printed:\n%s\nthe document's directive shows:\n%s", b.Where(), b.Run, err, out, strings.Join(b.RunWant, "\n"))
	}
}

// packages are the import paths a Go fragment may use by their name
// without importing them.
var packages = map[string]string{
	"bufio": "bufio", "bytes": "bytes", "context": "context", "errors": "errors", "fmt": "fmt",
	"io": "io", "log": "log", "os": "os", "signal": "os/signal", "strings": "strings", "time": "time", "http": "net/http", "net": "net",
	"pkbf": "github.com/pkbf/pkbf", "keys": "github.com/pkbf/pkbf/keys", "keycheck": "github.com/pkbf/pkbf/keycheck",
	"pwnedkeys": "github.com/pkbf/pkbf/pwnedkeys", "update": "github.com/pkbf/pkbf/update",
	"nixbloom": "github.com/pkbf/pkbf/nixbloom",
	"pkbfssh":  "github.com/pkbf/pkbf/pkbfssh", "pkbftls": "github.com/pkbf/pkbf/pkbftls", "pkbfhttp": "github.com/pkbf/pkbf/pkbfhttp",
	"stepca": "github.com/pkbf/pkbf/stepca", "ssh": "golang.org/x/crypto/ssh", "tls": "crypto/tls",
}

// GoFile is the Go source a Go block compiles as: the block itself when it
// is a whole file (its first token, after any comments, is "package"), else the fragment as func main's body, after its own
// imports, those it uses by name, and the prelude.
func GoFile(b *Block) ([]byte, error) {
	text := strings.Join(b.Text, "\n") + "\n"
	var s scanner.Scanner
	s.Init(token.NewFileSet().AddFile("", -1, len(text)), []byte(text), nil, 0)
	if _, tok, _ := s.Scan(); tok == token.PACKAGE {
		return []byte(text), nil
	}
	ownImports, body := splitImports(text)
	used := map[string]bool{}
	for _, src := range []string{b.Prelude, body} {
		var s scanner.Scanner
		fset := token.NewFileSet()
		s.Init(fset.AddFile("", -1, len(src)), []byte(src), nil, 0)
		prev := ""
		for {
			_, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok == token.PERIOD && packages[prev] != "" && !strings.Contains(ownImports, strconv.Quote(packages[prev])) {
				used[prev] = true
			}
			prev = ""
			if tok == token.IDENT {
				prev = lit
			}
		}
	}
	var f strings.Builder
	f.WriteString("package main\n\n")
	if ownImports != "" {
		f.WriteString(ownImports + "\n")
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range used {
			if !yield(n) {
				return
			}
		}
	}) {
		fmt.Fprintf(&f, "import %q\n", packages[name])
	}
	fmt.Fprintf(&f, "\n%s\n\nfunc main() {\n%s}\n", b.Prelude, body)
	return []byte(f.String()), nil
}

// splitImports cuts a fragment's leading import declarations from the
// rest.
func splitImports(text string) (imports, rest string) {
	var s scanner.Scanner
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(text))
	s.Init(file, []byte(text), nil, scanner.ScanComments)
	end, depth, inImport := 0, 0, false
	for {
		pos, tok, _ := s.Scan()
		switch {
		case tok == token.EOF:
			return strings.TrimSpace(text[:end]), text[end:]
		case tok == token.COMMENT:
			continue
		case tok == token.IMPORT && depth == 0:
			inImport = true
			continue
		case inImport && tok == token.LPAREN:
			depth++
		case inImport && tok == token.RPAREN:
			depth--
		case inImport && tok == token.SEMICOLON && depth == 0:
			inImport, end = false, file.Offset(pos)+1
			continue
		case inImport:
			continue
		}
		if !inImport && tok != token.IMPORT {
			break
		}
	}
	end = min(end, len(text))
	return strings.TrimSpace(text[:end]), text[end:]
}

func numbered(src []byte) string {
	var b strings.Builder
	for i, l := range strings.Split(string(src), "\n") {
		fmt.Fprintf(&b, "%4d  %s\n", i+1, l)
	}
	return b.String()
}

// copyTree copies the directory tree at src to dst, leaving out .git.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if e.IsDir() && e.Name() == ".git" {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(target, 0o755)
		case e.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case !e.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
}
