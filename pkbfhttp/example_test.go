package pkbfhttp_test

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/pkbfhttp"
)

// Serve checks of a filter file over HTTP, and post a key to /v1/check.
// A real server listens through svc.Listener with svc.Server's timeouts.
func ExampleNew() {
	live, err := pkbf.OpenLive("../testdata/example.pkbf", pkbf.LiveOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer live.Close()
	svc, err := pkbfhttp.New(live, pkbfhttp.Options{})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	defer srv.Close()

	key, err := os.ReadFile("../testdata/keys/p256.pub")
	if err != nil {
		log.Fatal(err)
	}
	resp, err := http.Post(srv.URL+"/v1/check", "text/plain", bytes.NewReader(key))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s", resp.StatusCode, answer)
	// Output:
	// 200 {"source":"request: line 1","file":"request","line":1,"index":1,"offset":0,"ssh_fingerprint":"SHA256:EN1Y0pVuDJMmMxjHMcnedCPeSoIKrux8676onBqa64s","comment":"","fingerprint":"6069088c7559ff46eb976bb0307137decd72d458c7bf0789b85bbd7e3c652575","probably":true}
}
