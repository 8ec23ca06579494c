package ct

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
)

// compressedSPKI returns a P-256 SPKI whose point is compressed: not the
// canonical encoding, so that a verdict names it "as given".
func compressedSPKI(t *testing.T) []byte {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	var spki struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if _, err := asn1.Unmarshal(der, &spki); err != nil {
		t.Fatal(err)
	}
	point := elliptic.MarshalCompressed(elliptic.P256(), k.X, k.Y) //lint:ignore SA1019 the test needs a compressed point's bytes
	spki.PublicKey = asn1.BitString{Bytes: point, BitLength: 8 * len(point)}
	out, err := asn1.Marshal(spki)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Issue 43, item 7: a hit is printed in one JSON shape wherever it is
// printed: pkbf check --json's object for the key (Verdict.AppendJSON:
// the same fields and values, fingerprint_as_given or
// fingerprint_named_curve, the trailing newline), followed by the
// entry's fields. ct printed fingerprint_other, and no newline.
func TestHitJSONIsCheckJSON(t *testing.T) {
	spki := compressedSPKI(t)
	w, err := pkbf.New(4, 16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keycheck.AddKey(w, spki); err != nil {
		t.Fatal(err)
	}
	v := keycheck.New(w, keycheck.Options{}).CheckKey(spki)
	if !v.Probably || v.Key.OtherLabel != "as given" {
		t.Fatalf("the verdict: %+v, want a hit named as given", v)
	}
	const log = "https://log.example/2026/"
	v.Source.Input = log
	h := Hit{Log: log, Index: 123456, Timestamp: time.UnixMilli(1764000000123).UTC(), Precert: true,
		Serial: "04a1", Subject: "CN=host.example", Issuer: "CN=<Example> CA", Verdict: v}
	line := h.AppendJSON([]byte("before"))
	if !bytes.HasPrefix(line, []byte("before")) {
		t.Fatalf("AppendJSON did not append: %q", line)
	}
	line = line[len("before"):]
	if !bytes.HasSuffix(line, []byte("}\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Errorf("%q: want one object and one newline, as Verdict.AppendJSON writes", line)
	}
	var got, check map[string]any
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if err := json.Unmarshal(v.AppendJSON(nil), &check); err != nil {
		t.Fatal(err)
	}
	for k, want := range check {
		if k == "source" { // the log's URL there; the entry's place here
			continue
		}
		if !reflect.DeepEqual(got[k], want) {
			t.Errorf("%s: %v, want pkbf check --json's %v", k, got[k], want)
		}
	}
	if got["fingerprint_as_given"] != v.Key.OtherFingerprint || got["fingerprint"] != v.Key.Fingerprint || got["source"] != h.Source() || got["file"] != log {
		t.Errorf("fingerprints or source: %s", line)
	}
	if !bytes.Contains(line, []byte(`"issuer":"CN=<Example> CA"`)) {
		t.Errorf("%s: strings escaped for HTML, which pkbf check --json does not do", line)
	}
	if _, ok := got["fingerprint_other"]; ok {
		t.Errorf("fingerprint_other, a name of ct's own: %s", line)
	}
	for k, want := range map[string]any{"log": log, "index": 123456.0, "timestamp": "2025-11-24T16:00:00.123Z", "precertificate": true,
		"serial": "04a1", "subject": "CN=host.example", "issuer": "CN=<Example> CA", "probably": true} {
		if !reflect.DeepEqual(got[k], want) {
			t.Errorf("%s: %v, want %v", k, got[k], want)
		}
	}
	if len(got) != len(check)+7 {
		t.Errorf("%d fields, want check's %d and the entry's 7: %s", len(got), len(check), line)
	}
}
