// Command check is pkbf check --json in 29 lines of pkbf's public API:
// "check FILTER FILE..." prints one JSON verdict a key, as the command does.
package main

import (
	"bufio"
	"context"
	"log"
	"os"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
)

func main() {
	filter, err := pkbf.Open(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	defer filter.Close()
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	defer out.Flush()
	checker := keycheck.New(filter, keycheck.Options{Idle: func() { out.Flush() }}) // verdicts stream out
	var line []byte
	for v := range checker.Check(context.Background(), keycheck.Files(os.Args[2:]...)) {
		line = v.AppendJSON(line[:0])
		out.Write(line)
	}
}
