package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Many keys, many batches, all cores: the output keeps the input order.
func TestCheckKeepsOrder(t *testing.T) {
	names := []string{"rsa2048.pub", "p384.pub", "ed25519.pub", "p521.pub", "p256-sk.pub", "rsa1024.pub", "p256.pub"}
	m := manifest(t)
	var input bytes.Buffer
	var want []string
	for i := range 3000 {
		name := names[(i*7+i/5)%len(names)]
		data, _ := os.ReadFile(key(name))
		input.Write(data)
		want = append(want, m[name])
	}
	r := runWith(t, &input, "check", exampleFilter)
	probably, fps, sources := parseText(t, r.stdout)
	if strings.Join(fps, " ") != strings.Join(want, " ") {
		t.Fatal("check reordered its output")
	}
	for i := range sources {
		if sources[i] != fmt.Sprintf("<stdin>: line %d", i+1) {
			t.Fatalf("key %d: source %q", i+1, sources[i])
		}
		if hit := inFilter[strings.Split(strings.TrimSuffix(names[(i*7+i/5)%len(names)], "-sk.pub"), ".")[0]]; probably[i] != hit {
			t.Fatalf("key %d: probably %v, want %v", i+1, probably[i], hit)
		}
	}
}
