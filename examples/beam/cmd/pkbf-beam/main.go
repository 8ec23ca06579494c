// Command pkbf-beam runs pkbf's check or build on Apache Beam, on the
// runner the --runner flag names (prism, in this process, by default;
// dataflow, flink, spark, or universal with a job server's --endpoint).
//
//	pkbf-beam --mode check --input 'keys/*.pem' --filter f.pkbf --output verdicts.jsonl
//	pkbf-beam --mode build --input 'keys/*' --hashes 3 --length 24 --output f.pkbf
//	pkbf-beam --mode build --input 'keys/*' --entries 1000000 --fp-rate 0.001 --output f.pkbf
//	pkbf-beam --mode ct --log https://MONITORING_URL/ --key BASE64 --filter f.pkbf --output hits.jsonl
//
// Paths may be on any file system Beam has (gs://, s3://, local).
package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/pkbf/pkbf"
	pkbfbeam "github.com/pkbf/pkbf/examples/beam"
)

var (
	mode    = flag.String("mode", "", "check, build or ct")
	input   = flag.String("input", "", "key files to read: a glob on any Beam file system")
	filter  = flag.String("filter", "", "check: the filter to look keys up in")
	output  = flag.String("output", "", "check: the file of JSON verdict lines; build: the filter file")
	hashes  = flag.Int("hashes", 0, "build: hash count K (with --length)")
	length  = flag.Int("length", 0, "build: hash length L (with --hashes)")
	entries = flag.Uint64("entries", 0, "build: expected keys N (with --fp-rate)")
	fpRate  = flag.Float64("fp-rate", 0, "build: false-positive rate P (with --entries)")
	ctLog   = flag.String("log", "", "ct: the Static CT log's monitoring prefix")
	ctKey   = flag.String("key", "", "ct: the log's public key, base64 DER (as log lists give it): its checkpoint's signature is verified")
	ctFrom  = flag.Int64("from", 0, "ct: the first entry to scan")
	ctRange = flag.Int64("range", 1<<16, "ct: entries a unit of work")
)

func main() {
	flag.Parse()
	beam.Init() // a worker process that a runner started serves from here, and never returns
	if *mode != "check" && *mode != "build" && *mode != "ct" {
		fmt.Fprintln(os.Stderr, "usage: pkbf-beam --mode check|build|ct [flags] (pkbf-beam -h for the flags)")
		os.Exit(2)
	}
	if err := run(context.Background(), *mode); err != nil {
		fmt.Fprintln(os.Stderr, "pkbf-beam:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, mode string) error {
	if mode == "ct" {
		if *ctLog == "" || *filter == "" || *output == "" {
			return fmt.Errorf("ct needs --log, --filter and --output")
		}
		key, err := base64.StdEncoding.DecodeString(*ctKey)
		if err != nil {
			return fmt.Errorf("--key: %w", err)
		}
		p, s := beam.NewPipelineWithRoot()
		ranges, err := pkbfbeam.CTRanges(ctx, s, pkbfbeam.CTLog{Prefix: *ctLog, Key: key}, *ctFrom, *ctRange)
		if err != nil {
			return err
		}
		pkbfbeam.WriteLines(s, *output, pkbfbeam.CTCheck(s, *filter, ranges))
		return beamx.Run(ctx, p)
	}
	if *input == "" || *output == "" {
		return fmt.Errorf("%s needs --input and --output", mode)
	}
	p, s := beam.NewPipelineWithRoot()
	files := pkbfbeam.Files(s, *input)
	switch mode {
	case "check":
		if *filter == "" {
			return fmt.Errorf("check needs --filter")
		}
		pkbfbeam.WriteLines(s, *output, pkbfbeam.Check(s, *filter, files))
	case "build":
		k, l := *hashes, *length
		if *entries != 0 || *fpRate != 0 {
			var err error
			if k, l, err = pkbf.Parameters(*entries, *fpRate); err != nil {
				return err
			}
		}
		if k < 1 || k > 255 || l < 3 || l > 40 { // as pkbf.New: refused here, not on a worker
			return fmt.Errorf("build needs --hashes 1 to 255 and --length 3 to 40, or --entries and --fp-rate")
		}
		pkbfbeam.Build(s, k, l, *output, files)
	}
	return beamx.Run(ctx, p)
}
