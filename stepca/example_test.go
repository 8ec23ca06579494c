package stepca_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/stepca"
)

// Answer step-ca's webhook calls from a filter file. A real server
// verifies step-ca's client certificate (tls.Config.ClientAuth and
// ClientCAs); this example calls the handler directly, without TLS.
func ExampleNewHandler() {
	live, err := pkbf.OpenLive("../testdata/example.pkbf", pkbf.LiveOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer live.Close()
	h := stepca.NewHandler(keycheck.New(live, keycheck.Options{}), stepca.Options{Unauthenticated: true})

	for _, name := range []string{"p256.spki.der", "p384.spki.der"} {
		spki, err := os.ReadFile("../testdata/keys/" + name)
		if err != nil {
			log.Fatal(err)
		}
		// What step-ca posts before it signs an X.509 certificate.
		body, _ := json.Marshal(map[string]any{"x509Certificate": map[string]any{"publicKey": spki}})
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/step-ca/authorize", bytes.NewReader(body)))
		fmt.Printf("%s: %s", name, w.Body)
	}
	// Output:
	// p256.spki.der: {"allow":false,"error":{"code":"pkbf-compromised-key","message":"pkbf: the certificate's public key is reported as compromised (pwnedkeys fingerprint 6069088c7559ff46eb976bb0307137decd72d458c7bf0789b85bbd7e3c652575): make a new key"}}
	// p384.spki.der: {"allow":true}
}
