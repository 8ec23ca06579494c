package keycheck

import (
	"bytes"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/internal/testkit"
	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/weakkeys"
)

// weakChecker returns a weakkeys.Checker whose Debian lists cover RSA-2048
// and P-256 (with hashes of no real key), so that the project's RSA-2048
// and P-256 keys have no finding.
func weakChecker(t testing.TB) *weakkeys.Checker {
	t.Helper()
	var b weakkeys.Builder
	for _, l := range []weakkeys.List{
		{Name: "rsa", Key: "RSA-2048", Scheme: weakkeys.SHA256Modulus},
		{Name: "p256", Key: "P-256", Scheme: weakkeys.SHA256X},
	} {
		var hashes strings.Builder
		for i := range 100 {
			sum := sha256.Sum256([]byte(fmt.Sprint(l.Name, i)))
			hashes.WriteString(hex.EncodeToString(sum[:]) + "\n")
		}
		if err := b.ReadList(l, strings.NewReader(hashes.String())); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "debian.pkwk")
	if err := b.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	d, err := weakkeys.OpenDebian(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	w, err := weakkeys.New(weakkeys.WithDebian(d))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// evenRSA returns the SPKI of the project's RSA-2048 key with the low bit
// of its modulus cleared: an even modulus, a small-factor finding (2) and
// nothing else.
func evenRSA(t testing.TB) []byte {
	t.Helper()
	pub, err := x509.ParsePKIXPublicKey(readKey(t, "rsa2048.spki.der"))
	if err != nil {
		t.Fatal(err)
	}
	n := new(big.Int).Set(pub.(*rsa.PublicKey).N)
	spki, err := x509.MarshalPKIXPublicKey(&rsa.PublicKey{N: n.SetBit(n, 0, 0), E: 65537})
	if err != nil {
		t.Fatal(err)
	}
	return spki
}

// rules lists the rules of findings.
func rules(fs []weakkeys.Finding) string {
	var r []string
	for _, f := range fs {
		r = append(r, string(f.Rule)+"="+f.Detail)
	}
	return strings.Join(r, ",")
}

// TestCheckWeak: with Options.Weak, Check and CheckKey give every key the
// weak-key checks' findings beside the filter's answer, with or without a
// filter; Refuse, Status, Reason, the JSON and the text line say them;
// a clean key has none and is not refused.
func TestCheckWeak(t *testing.T) {
	weak := weakChecker(t)
	even, clean, ed := evenRSA(t), readKey(t, "rsa2048.spki.der"), readKey(t, "ed25519.spki.der")
	w := newFilter(t, 4, 16)
	mustAddKey(t, w, ed) // compromised, and an algorithm the BR do not allow
	inputs := [][]byte{even, clean, ed}
	res, err := weak.Check(even)
	if err != nil || !strings.HasPrefix(rules(res.Findings), "small-factor=2") {
		t.Fatalf("the even modulus: %v, %v", res, err)
	}
	want := []struct {
		rules, status string
		probably      bool
	}{
		{rules(res.Findings), "weak", false},
		{"", "no", false},
		{"algorithm=Ed25519", "probably", true},
	}
	for _, filter := range []bool{true, false} {
		c := New(nil, Options{Weak: weak})
		if filter {
			c = New(readOnly(t, w), Options{Weak: weak})
		}
		i := 0
		for v := range c.Check(t.Context(), derInput(inputs)) {
			one := c.CheckKey(inputs[i])
			wt := want[i]
			wantProbably := wt.probably && filter
			wantStatus := wt.status
			if wt.probably && !filter {
				wantStatus = "weak"
			}
			name := fmt.Sprintf("filter %v, key %d", filter, i)
			switch {
			case v.Err != nil || one.Err != nil:
				t.Fatalf("%s: %v, %v", name, v.Err, one.Err)
			case rules(v.Findings) != wt.rules || rules(one.Findings) != wt.rules:
				t.Errorf("%s: findings %s (CheckKey %s), want %s", name, rules(v.Findings), rules(one.Findings), wt.rules)
			case v.Probably != wantProbably || one.Probably != wantProbably:
				t.Errorf("%s: probably %v (CheckKey %v), want %v", name, v.Probably, one.Probably, wantProbably)
			case v.Status() != wantStatus:
				t.Errorf("%s: status %q, want %q", name, v.Status(), wantStatus)
			case v.Refuse() != (wt.rules != "" || wantProbably) || one.Refuse() != v.Refuse():
				t.Errorf("%s: Refuse %v (CheckKey %v)", name, v.Refuse(), one.Refuse())
			case v.Refuse() && (one.Key != v.Key || v.Key.Fingerprint == ""):
				t.Errorf("%s: a key to refuse is named %+v by CheckKey, %+v by Check", name, one.Key, v.Key)
			}
			reason := v.Reason()
			for _, f := range v.Findings {
				if !strings.Contains(reason, string(f.Rule)+": "+f.Reason) {
					t.Errorf("%s: Reason %q lacks %s", name, reason, f)
				}
			}
			if (reason == "") == v.Refuse() || strings.Contains(reason, "compromised") != wantProbably {
				t.Errorf("%s: Reason %q", name, reason)
			}
			var got struct {
				Probably *bool
				Findings []struct{ Rule, Detail, Reason string }
				Verdict  string
			}
			if err := json.Unmarshal(v.AppendJSON(nil), &got); err != nil {
				t.Fatalf("%s: %v: %s", name, err, v.AppendJSON(nil))
			}
			if got.Findings == nil || len(got.Findings) != len(v.Findings) || got.Verdict != wantStatus || (got.Probably != nil) != filter {
				t.Errorf("%s: JSON %s", name, v.AppendJSON(nil))
			}
			for j, f := range got.Findings {
				if f.Rule != string(v.Findings[j].Rule) || f.Detail != v.Findings[j].Detail || f.Reason != v.Findings[j].Reason {
					t.Errorf("%s: JSON finding %+v, want %+v", name, f, v.Findings[j])
				}
			}
			line := string(v.AppendText(nil, false))
			if fields := strings.Split(strings.TrimSuffix(line, "\n"), "\t"); fields[0] != wantStatus || fields[1] != v.Key.Fingerprint ||
				(len(v.Findings) > 0) != strings.HasPrefix(fields[len(fields)-1], string(wt.rules[:max(0, strings.IndexByte(wt.rules, '='))])+": ") {
				t.Errorf("%s: line %q", name, line)
			}
			i++
		}
		if i != len(inputs) {
			t.Fatalf("%d verdicts for %d keys", i, len(inputs))
		}
	}
}

// TestCheckWeakModulus: a bare RSA modulus (the ROCA authors' .txt form)
// gets the weak-key checks' findings, and, with a filter, the error that
// it was not looked up there; without the checks it is an unsupported
// key, as before.
func TestCheckWeakModulus(t *testing.T) {
	pub, err := x509.ParsePKIXPublicKey(evenRSA(t))
	if err != nil {
		t.Fatal(err)
	}
	text := []byte(fmt.Sprintf("0x%x\n", pub.(*rsa.PublicKey).N))
	weak := weakChecker(t)
	res, err := weak.CheckModulus(pub.(*rsa.PublicKey).N.Bytes())
	if err != nil || !strings.HasPrefix(rules(res.Findings), "small-factor=2") {
		t.Fatalf("the even modulus: %v, %v", res, err)
	}
	found := rules(res.Findings)
	filter := readOnly(t, newFilter(t, 4, 16))
	for _, tc := range []struct {
		name   string
		c      *Checker
		rules  string
		status string
		err    error
	}{
		{"weak, filter", New(filter, Options{Weak: weak}), found, "weak", errNotLookedUp},
		{"weak alone", New(nil, Options{Weak: weak}), found, "weak", nil},
		{"filter alone", New(filter, Options{}), "", "error", keys.ErrUnsupportedKey},
	} {
		for _, workers := range []int{1, 2} {
			tc.c.opts.Workers = workers
			var verdicts []Verdict
			for v := range tc.c.Check(t.Context(), Bytes("mod.txt", text)) {
				verdicts = append(verdicts, v)
			}
			one := tc.c.CheckKey(text)
			if len(verdicts) != 1 {
				t.Fatalf("%s: %d verdicts", tc.name, len(verdicts))
			}
			v := verdicts[0]
			if rules(v.Findings) != tc.rules || rules(one.Findings) != tc.rules || v.Status() != tc.status || one.Status() != tc.status ||
				!errors.Is(v.Err, tc.err) || !errors.Is(one.Err, tc.err) || (tc.err == nil) != (v.Err == nil) || v.Probably || v.Key.Fingerprint != "" {
				t.Errorf("%s, %d workers: Check %+v\nCheckKey %+v", tc.name, workers, v, one)
			}
			if v.Source.String() != "mod.txt: line 1" {
				t.Errorf("%s: source %q", tc.name, v.Source)
			}
			js := string(v.AppendJSON(nil))
			if strings.Contains(js, `"probably"`) || strings.Contains(js, `"fingerprint"`) || (tc.rules != "") != strings.Contains(js, `"rule":"small-factor"`) {
				t.Errorf("%s: JSON %s", tc.name, js)
			}
			if line := string(v.AppendText(nil, false)); (tc.rules != "") != strings.HasPrefix(line, "weak\t-\tmod.txt: line 1\tsmall-factor: ") {
				t.Errorf("%s: line %q", tc.name, line)
			}
		}
	}
}

// TestCheckWeakHitsOnly: FingerprintHitsOnly names the keys to refuse,
// weak ones too.
func TestCheckWeakHitsOnly(t *testing.T) {
	c := New(readOnly(t, newFilter(t, 4, 16)), Options{Weak: weakChecker(t), FingerprintHitsOnly: true})
	var got []string
	for v := range c.Check(t.Context(), derInput([][]byte{evenRSA(t), readKey(t, "rsa2048.spki.der")})) {
		got = append(got, v.Status()+" "+v.Key.Fingerprint)
	}
	if len(got) != 2 || got[0] != "weak "+keys.Fingerprint(evenRSA(t)) || got[1] != "no " {
		t.Errorf("verdicts %q", got)
	}
}

// TestCheckWeakWithoutDebian: without Debian lists, every RSA and EC key
// says it was not checked for them (a finding): no key passes as clean.
func TestCheckWeakWithoutDebian(t *testing.T) {
	w, err := weakkeys.New()
	if err != nil {
		t.Fatal(err)
	}
	v := New(nil, Options{Weak: w}).CheckKey(readKey(t, "p256.cert.pem"))
	if rules(v.Findings) != "debian-not-covered=P-256" || !v.Refuse() || v.Status() != "weak" {
		t.Errorf("verdict %+v", v)
	}
}

// TestCheckKeyWeakAllocs: the weak-key checks of a clean RSA-2048 key
// add no allocation to CheckKey's.
func TestCheckKeyWeakAllocs(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	weak := weakChecker(t)
	filter := readOnly(t, newFilter(t, 4, 16))
	for _, name := range []string{"rsa2048.spki.der", "rsa2048.cert.der"} {
		data := readKey(t, name)
		plain := testing.AllocsPerRun(100, func() { New(filter, Options{}).CheckKey(data) })
		c := New(filter, Options{Weak: weak})
		if v := c.CheckKey(data); v.Refuse() || v.Err != nil {
			t.Fatalf("%s: %+v", name, v)
		}
		if allocs := testing.AllocsPerRun(100, func() { c.CheckKey(data) }); allocs > plain {
			t.Errorf("CheckKey of %s with the weak-key checks: %v allocations, %v without", name, allocs, plain)
		}
	}
}

// TestNewWeakAlone: New without a filter is allowed with the weak-key
// checks alone (a CA without the pwnedkeys filter); a nil pointer to a
// filter type still panics, as an open whose error was ignored.
func TestNewWeakAlone(t *testing.T) {
	weak := weakChecker(t)
	c := New(nil, Options{Weak: weak})
	if c.Contains(readKey(t, "rsa2048.spki.der")) {
		t.Errorf("a Checker without a filter contains a key")
	}
	defer func() {
		if r := recover(); r == nil {
			t.Errorf("New((*pkbf.Filter)(nil), Options{Weak}) did not panic")
		}
	}()
	var f *pkbf.Filter
	New(f, Options{Weak: weak})
}

// A Verdict with no findings but from the weak-key checks, compared as a
// whole, is a "no" with nothing else.
func TestCheckKeyWeakNoCarriesNothing(t *testing.T) {
	v := New(readOnly(t, newFilter(t, 4, 16)), Options{Weak: weakChecker(t)}).CheckKey(readKey(t, "rsa2048.spki.der"))
	if !reflect.DeepEqual(v, Verdict{weakChecked: true, lookedUp: true, checks: checksWeak}) || !bytes.Equal(v.AppendText(nil, false), []byte("no\t-\t\n")) {
		t.Errorf("%+v: %q", v, v.AppendText(nil, false))
	}
}
