package pkbfssh

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/weakkeys"
)

// F2 of the sshd gate review: a cert-authority line lets in every
// certificate its CA key signed, so without the key offered FilterLines
// leaves it out (Report.CertAuthority); with a clean key offered it is
// judged by its key as any line; with a compromised one offered nothing is
// written. Options are read as sshd's sshauthopt_parse reads them.
func TestFilterLinesCertAuthority(t *testing.T) {
	caPriv, _, _ := newSSHKey(t)
	_, cleanPub, _ := newSSHKey(t)
	_, badPub, badSPKI := newSSHKey(t)
	typ, b64 := testLine(t, "p256.pub")
	ca := typ + " " + b64 + " ca"
	w, err := pkbf.New(4, 16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keycheck.AddKey(w, badSPKI); err != nil {
		t.Fatal(err)
	}
	cleanCert, badCert := certKey(t, cleanPub, caPriv), certKey(t, badPub, caPriv)
	for _, c := range []struct {
		name, line string
		ca         bool // read as a cert-authority line
	}{
		{"plain key", ca, false},
		{"cert-authority", "cert-authority " + ca, true},
		{"upper case, as sshd matches names", "CERT-Authority " + ca, true},
		{"after another option", "restrict,cert-authority " + ca, true},
		{"after a quoted value holding a comma", `command="a,b",cert-authority ` + ca, true},
		{"inside a quoted value only", `from="127.0.0.1,cert-authority" ` + ca, false},
		{"after an escaped quote", `environment="A=\",cert-authority",no-pty ` + ca, false},
		{"name with more after it (sshd refuses the line)", "cert-authorityx " + ca, true},
	} {
		l := []byte(c.line)
		var out bytes.Buffer
		r, err := FilterLines(&out, keycheck.New(w, keycheck.Options{}), l, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if left := len(r.CertAuthority) == 1; left != c.ca || (out.Len() == 0) != c.ca {
			t.Errorf("%s, no key offered: left out as cert-authority %v, printed %q; want left out %v", c.name, left, out.String(), c.ca)
		}
		out.Reset()
		if r, err := FilterLines(&out, keycheck.New(w, keycheck.Options{}), l, cleanCert); err != nil || out.String() != c.line+"\n" || len(r.CertAuthority) != 0 {
			t.Errorf("%s, a clean certificate offered: printed %q, %v; want the line", c.name, out.String(), err)
		}
		out.Reset()
		if _, err := FilterLines(&out, keycheck.New(w, keycheck.Options{}), l, badCert); !errors.Is(err, ErrCompromised) || out.Len() != 0 {
			t.Errorf("%s, a compromised certificate offered: printed %q, %v; want nothing and ErrCompromised", c.name, out.String(), err)
		}
	}
}

// TestFilterLinesWeak: with a KeyChecker that makes the weak-key checks,
// FilterLines leaves out a line whose key they refuse (an Ed25519 key: the
// Baseline Requirements allow RSA and ECDSA only), saying why, and refuses
// such a key offered; without the checks the line stays.
func TestFilterLinesWeak(t *testing.T) {
	w, err := pkbf.New(4, 16)
	if err != nil {
		t.Fatal(err)
	}
	weak, err := weakkeys.New()
	if err != nil {
		t.Fatal(err)
	}
	kc := keycheck.New(w, keycheck.Options{Weak: weak})
	typ, b64 := testLine(t, "ed25519.pub")
	line := typ + " " + b64 + " alice"
	var out bytes.Buffer
	r, err := FilterLines(&out, kc, []byte(line+"\n"), nil)
	if err != nil || out.Len() != 0 || len(r.Compromised) != 1 || r.Compromised[0].why != "algorithm: Ed25519 keys are not allowed (BR 6.1.5 allows RSA and ECDSA keys)" {
		t.Fatalf("FilterLines: %q, %+v, %v", out.String(), r, err)
	}
	offered, err := ParseKey(typ, b64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FilterLines(&out, kc, []byte(line+"\n"), offered); !errors.Is(err, ErrCompromised) || !strings.Contains(err.Error(), ": algorithm: Ed25519 keys are not allowed") {
		t.Errorf("FilterLines, the key offered: %v", err)
	}
	// Without the weak-key checks the line stays.
	if _, err := FilterLines(&out, keycheck.New(w, keycheck.Options{}), []byte(line+"\n"), nil); err != nil || out.String() != line+"\n" {
		t.Errorf("without the weak-key checks: %q, %v", out.String(), err)
	}
}
