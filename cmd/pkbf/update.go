package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf/internal/cli"
	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/internal/text"
	"github.com/pkbf/pkbf/update"
)

// updateHeaderEnv names the environment variable that may hold request
// headers for update ("Name: value" lines): credentials, kept off the
// command line, where other users see them.
const updateHeaderEnv = "PKBF_UPDATE_HEADER"

type updateFlags struct {
	force, acceptRebuild, allowHTTP, replaceInvalid, quiet bool
	sha256, signature, signerKey, headerFile               string
	maxSize, minRate                                       sizeFlag
	maxFPRate                                              float64
	retries                                                int
	maxAge, stall, rateWindow, maxTime                     time.Duration
}

func (fl *updateFlags) command(stdout, stderr io.Writer) *command {
	c := newCommand("update", "update [--sha256 HEX|URL] [--signature URL --signer-key FILE] [--allow-http] [--accept-rebuild] [--header-file FILE] [flags] URL FILTER", stdout, stderr)
	fl.maxSize, fl.minRate = sizeFlag(update.DefaultMaxSize), sizeFlag(update.DefaultMinRate)
	c.BoolVar(&fl.acceptRebuild, "accept-rebuild", false, "this once, install the server's filter even if it is not newer than the installed one, or has fewer hashes, bits or entries, or lacks bits the installed one has set (a publisher's rebuild, or the way back from a filter with bits injected); every other check holds")
	c.Float64Var(&fl.maxFPRate, "max-fp-rate", update.DefaultMaxFPRate, "refuse a filter no pin vouches for whose false-positive rate, from its bits set, is above `P` and twice the installed filter's")
	c.BoolVar(&fl.force, "force", false, "install what --accept-rebuild does, and a filter whose time is in the future or that answers yes for too many keys (never one over --max-size, failing the fill check, --max-age or a pin)")
	c.StringVar(&fl.sha256, "sha256", "", "pin the filter to a SHA-256 digest: `HEX`, or the URL of a digest file published beside it (FILTER.sha256)")
	c.StringVar(&fl.signature, "signature", "", "pin the filter to the SSH signature at `URL` (ssh-keygen -Y sign -n pkbf FILTER makes FILTER.sig); needs --signer-key")
	c.StringVar(&fl.signerKey, "signer-key", "", "the public key(s) the signature must be made with: a .pub `FILE`, one key a line")
	c.BoolVar(&fl.allowHTTP, "allow-http", false, "allow plain http URLs and redirects (credentials are never sent over http); needs --sha256 HEX or --signature")
	c.DurationVar(&fl.maxAge, "max-age", 0, "refuse a filter whose header says it was updated more than `D` ago (0: no limit), installed already or not")
	c.BoolVar(&fl.replaceInvalid, "replace-invalid", false, "replace a file at FILTER that is not a readable filter (a directory, FIFO or device is never replaced)")
	c.StringVar(&fl.headerFile, "header-file", "", "read request headers (\"Name: value\" lines, credentials) from `FILE`; else from $"+updateHeaderEnv)
	c.Var(&fl.maxSize, "max-size", "refuse a filter larger than `SIZE` (bytes, or with KiB, MiB, GiB, TiB)")
	c.IntVar(&fl.retries, "retries", update.DefaultRetries, "retry a failed download `N` times (network errors, 429, 5xx, too slow), resuming it")
	c.DurationVar(&fl.stall, "stall", update.DefaultStall, "retry when no data arrives for `D`")
	c.Var(&fl.minRate, "min-rate", "retry when the body arrives slower than `SIZE` a second over --rate-window")
	c.DurationVar(&fl.rateWindow, "rate-window", update.DefaultRateWindow, "the window `D` over which --min-rate is measured")
	c.DurationVar(&fl.maxTime, "max-time", update.DefaultMaxTime, "give up after `D` in all, retries included (the download is kept for the next run)")
	c.BoolVar(&fl.quiet, "quiet", false, "print nothing when the filter is already current")
	c.alias("f", "force")
	c.alias("q", "quiet")
	return c
}

func runUpdate(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var fl updateFlags
	c := fl.command(stdout, stderr)
	if ok, code := c.parse(args, 2, 2); !ok {
		return code
	}
	for _, f := range []struct {
		name  string
		value any
		bad   bool
	}{
		{"max-size", &fl.maxSize, fl.maxSize < 1},
		{"max-age", fl.maxAge, fl.maxAge < 0},
		{"retries", fl.retries, fl.retries < 0},
		{"stall", fl.stall, fl.stall <= 0},
		{"min-rate", &fl.minRate, fl.minRate < 1},
		{"rate-window", fl.rateWindow, fl.rateWindow <= 0},
		{"max-time", fl.maxTime, fl.maxTime <= 0},
		{"max-fp-rate", fl.maxFPRate, !(fl.maxFPRate > 0 && fl.maxFPRate < 1)}, // NaN too
	} {
		if f.bad {
			what := "positive"
			switch f.name {
			case "retries", "max-age":
				what = "0 or more"
			case "max-fp-rate":
				what = "between 0 and 1"
			}
			return c.fail(fmt.Sprintf("--%s %v: must be %s", f.name, f.value, what))
		}
	}
	rawURL, path := c.Arg(0), c.Arg(1)
	header, err := requestHeader(fl.headerFile)
	if err != nil {
		return trouble(stderr, err)
	}
	pin, sigURL, keyFile := fl.sha256, fl.signature, fl.signerKey
	if (sigURL == "") != (keyFile == "") {
		return c.fail("--signature and --signer-key go together: the signature's URL and the key it must be made with")
	}
	var signers []ssh.PublicKey
	if keyFile != "" {
		b, err := os.ReadFile(keyFile)
		if err == nil {
			signers, err = update.ParseSignerKeys(b)
			if err != nil {
				err = perr.Errorf("--signer-key %s: %w", keyFile, err)
			}
		}
		if err != nil {
			return trouble(stderr, err)
		}
	}
	var sha256Hex, sha256URL string
	if strings.HasPrefix(pin, "https://") || strings.HasPrefix(pin, "http://") {
		sha256URL = pin
	} else {
		sha256Hex = pin
	}
	retries := fl.retries
	if retries == 0 {
		retries = -1 // none; the library's 0 is its default
	}
	scr := newScreen(stdout, stderr)
	var done, total atomic.Int64
	prog := startProgress(scr, nil, func(p *progress) {
		p.line = func(elapsed time.Duration) string { return downloadProgress(done.Load(), total.Load(), elapsed) }
	})
	opts := update.Options{
		Client: updateClient, Header: header, Force: fl.force, AcceptRebuild: fl.acceptRebuild, MaxFPRate: fl.maxFPRate, ReplaceInvalid: fl.replaceInvalid,
		AllowHTTP: fl.allowHTTP, SHA256: sha256Hex, SHA256URL: sha256URL, SignatureURL: sigURL, SignerKeys: signers,
		MaxSize: int64(fl.maxSize), MaxAge: fl.maxAge, Retries: retries, Stall: fl.stall,
		MinRate: int64(fl.minRate), RateWindow: fl.rateWindow, MaxTime: fl.maxTime,
		Progress: func(d, t int64) { done.Store(d); total.Store(t) },
		Logf:     func(format string, args ...any) { scr.warnf("%s", message(perr.Errorf(format, args...))) },
	}
	// A first Ctrl-C stops the download (kept, to be resumed); a second
	// quits at once. Either way the installed filter is untouched.
	ctx, release := cli.InterruptContext()
	defer release()
	start := time.Now()
	res, err := update.Update(ctx, rawURL, path, opts)
	prog.stop()
	switch {
	case errors.Is(err, context.Canceled):
		kept := ""
		if res.Received > 0 {
			kept = "; the download so far is kept, and the next update resumes it"
		}
		scr.errorf("interrupted: %s was not changed%s", path, kept)
		return exitSignaled
	case errors.Is(err, update.ErrPlainHTTP) && !fl.allowHTTP && len(header) == 0 && !strings.Contains(rawURL, "@"):
		scr.errorf("%s (--allow-http with --sha256 HEX or --signature)", message(err))
		return exitTrouble
	case errors.Is(err, update.ErrNotFilter):
		scr.errorf("%s; give --replace-invalid to replace it", message(err))
		return exitTrouble
	case update.Refused(err):
		scr.errorf("refused: %s", message(err))
		return exitTrouble
	case err != nil:
		scr.errorf("%s", message(err))
		return exitTrouble
	case !res.Updated:
		if !fl.quiet {
			fmt.Fprintf(stdout, "up to date: %s, revision %d, updated %s\n", path, res.New.Revision, text.Updated(res.New.Updated))
		}
		return exitOK
	}
	from := "none"
	if res.Old != nil {
		from = fmt.Sprint(res.Old.Revision)
	}
	resumed := ""
	if res.Resumed {
		resumed = fmt.Sprintf(", %d received (resumed)", res.Received)
	}
	fmt.Fprintf(stdout, "updated: %s, revision %s -> %d, %s bytes%s%s, %s\n", path, from, res.New.Revision,
		cli.Group(res.Size), resumed, pinned(res), time.Since(start).Round(100*time.Millisecond))
	return exitOK
}

// updateClient, if set, makes update's requests: tests set it to trust
// their servers' certificates.
var updateClient *http.Client

// pinned words what verified an installed filter: ", sha256 matches,
// signed by ssh-ed25519 SHA256:...".
func pinned(res update.Result) string {
	s := ""
	if res.SHA256 != nil {
		s += ", sha256 matches"
	}
	if k := res.SignedBy; k != nil {
		s += fmt.Sprintf(", signed by %s %s", k.Type(), ssh.FingerprintSHA256(k))
	}
	return s
}

// downloadProgress is update's progress line: "12.3 MiB of 256 MiB (5%),
// 45.6 MiB/s, 5 s left".
func downloadProgress(done, total int64, elapsed time.Duration) string {
	rate := float64(done) / max(elapsed.Seconds(), 1e-3)
	line := binarySize(uint64(done))
	if total > 0 {
		line += fmt.Sprintf(" of %s (%.0f%%)", binarySize(uint64(total)), 100*float64(done)/float64(total))
	}
	line += fmt.Sprintf(", %s/s", binarySize(uint64(rate)))
	if total > 0 && rate > 0 {
		line += fmt.Sprintf(", %s left", (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second))
	}
	return line
}

// requestHeader reads request headers from the file, or else from the
// environment variable (update.ParseHeader).
func requestHeader(file string) (http.Header, error) {
	text, from := []byte(os.Getenv(updateHeaderEnv)), "$"+updateHeaderEnv
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		text, from = b, file
	}
	return update.ParseHeader(text, from)
}
