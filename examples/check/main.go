// Command check is pkbf check --json in 28 lines of pkbf's public API:
// "check FILTER FILE..." prints one JSON verdict a key, as the command does.
package main

import (
	"bufio"
	"context"
	"log"
	"os"

	"github.com/pkbf/pkbf"
)

func main() {
	filter, err := pkbf.Open(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	defer filter.Close()
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	defer out.Flush()
	opts := pkbf.CheckOptions{Idle: func() { out.Flush() }} // verdicts stream out
	var line []byte
	for v := range filter.Check(context.Background(), pkbf.Files(os.Args[2:]...), opts) {
		line = v.AppendJSON(line[:0])
		out.Write(line)
	}
}
