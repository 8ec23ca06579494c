package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

// The command's manners: flags anywhere, --, empty input, prose, summary,
// hints, the filter from standard input, JSON offsets, block numbers and
// SSH fingerprints.
func TestFlagsAnywhere(t *testing.T) {
	for _, args := range [][]string{
		{"check", exampleFilter, key("p256.cert.pem"), "-json"},
		{"check", exampleFilter, key("p256.cert.pem"), "--json"},
		{"check", "-j", exampleFilter, key("p256.cert.pem")},
		{"check", exampleFilter, "--json", key("p256.cert.pem")},
	} {
		r := runWith(t, nil, args...)
		var v map[string]any
		if r.code != exitFound || json.Unmarshal([]byte(r.stdout), &v) != nil || v["probably"] != true {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	// After --, everything is a file, even what looks like a flag.
	r := runWith(t, nil, "check", exampleFilter, "--", "-json")
	if r.code != exitTrouble || !strings.Contains(r.stderr, "open -json: no such file") {
		t.Errorf("check F -- -json: %+v", r)
	}
	r = runWith(t, nil, "check", "--", exampleFilter, key("p256.pub"))
	if r.code != exitFound {
		t.Errorf("check -- F C: %+v", r)
	}
}

func TestEmptyInputAndProse(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		args        []string
		code        int
		stderr      string
	}{
		{"empty input", "", nil, exitTrouble, "no key, certificate or request in the input"},
		{"empty input allowed", "", []string{"--allow-empty"}, exitOK, "checked 0 keys"},
		{"prose only", "ssh-rsa keys are old\nuse ed25519\n", nil, exitTrouble, "no key"},
		{"prose and a key", "ssh-rsa keys are old\n" + string(testkit.ReadFile(t, key("p384.pub"))), nil, exitOK, "checked 1 key: 0 probably, 1 no\n"},
		{"unsupported key line", "ssh-xmss@openssh.com AAAAFHNzaC14bXNzQG9wZW5zc2guY29tAAAA\n" + string(testkit.ReadFile(t, key("p384.pub"))), nil, exitTrouble, "1 unsupported"},
		{"unsupported key line, strict", "ssh-xmss@openssh.com AAAAFHNzaC14bXNzQG9wZW5zc2guY29tAAAA\n" + string(testkit.ReadFile(t, key("p384.pub"))), []string{"--strict"}, exitTrouble, "pkbf: error:"},
		{"damaged key line", "ssh-ed25519 AAAAC3NzaC1lZDI1\n", nil, exitTrouble, "1 unreadable"},
		{"quiet", string(testkit.ReadFile(t, key("p384.pub"))), []string{"-q"}, exitOK, ""},
	} {
		r := runWith(t, strings.NewReader(tc.input), append(append([]string{"check"}, tc.args...), exampleFilter)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) || tc.stderr == "" && r.stderr != "" {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.name, r.code, r.stderr, tc.code, tc.stderr)
		}
	}
}

func TestHintsAndMessages(t *testing.T) {
	dir := t.TempDir()
	gz := filepath.Join(dir, "f.pkbf.gz")
	os.WriteFile(gz, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check", key("p256.cert.pem"), exampleFilter}, key("p256.cert.pem") + ": invalid filter file: magic is \"-----B\", want \"pkbfv1\": this looks like a key or certificate, not a filter (" + exampleFilter + " is a filter: the filter comes first, then the files to check)"},
		{[]string{"check", key("p256.cert.der"), exampleFilter}, "looks like a DER key or certificate"},
		{[]string{"info", gz}, gz + ": invalid filter file: magic is \"\\x1f\\x8b\\b\\x00\\x00\\x00\", want \"pkbfv1\": this is gzip-compressed: decompress it first"},
	} {
		r := runWith(t, nil, tc.args...)
		if r.code != exitTrouble || !strings.HasPrefix(r.stderr, "pkbf: error: ") || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "pkbf: error: pkbf:") {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	// One key, one entry: words agree with numbers.
	p := filepath.Join(dir, "f.pkbf")
	runWith(t, nil, "create", "-k", "3", "-l", "12", p)
	if r := runWith(t, nil, "add", p, key("rsa2048.pub")); !strings.Contains(r.stdout, "1 new entry from 1 key; 1 entry, revision 1") {
		t.Errorf("add: %q", r.stdout)
	}
	if r := runWith(t, nil, "create", "-k", "3", "-l", "30", filepath.Join(dir, "big.pkbf")); r.code == 0 && !strings.Contains(r.stdout, "128 MiB (134217752 bytes)") {
		t.Errorf("create: %q", r.stdout)
	}
}

// The filter may come from standard input where the command only reads it.
func TestFilterFromStdin(t *testing.T) {
	filter := testkit.ReadFile(t, exampleFilter)
	r := runWith(t, strings.NewReader(string(filter)), "info", "-")
	if r.code != exitOK || !strings.Contains(r.stdout, "hash count (k):      12") || strings.Contains(r.stdout, "fill ratio") {
		t.Errorf("info -: %+v", r)
	}
	r = runWith(t, strings.NewReader(string(filter)), "check", "-", key("p256.pub"))
	if r.code != exitFound {
		t.Errorf("check - FILE: %+v", r)
	}
	r = runWith(t, strings.NewReader(string(filter)), "check", "-")
	if r.code != exitTrouble || !strings.Contains(r.stderr, "name the key files") {
		t.Errorf("check - with keys from stdin too: %+v", r)
	}
}

func TestOutputDetails(t *testing.T) {
	// JSON byte offsets and PEM block numbers: in bundle.pem the third PEM
	// block is the Ed25519 key (text and an EC PARAMETERS block around).
	r := runWith(t, nil, "check", "--json", exampleFilter, key("bundle.pem"), key("bundle.der"))
	var objs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, v)
	}
	if len(objs) != 9 || objs[2]["block"] != float64(3) || !strings.HasSuffix(objs[2]["source"].(string), "block 3 (line 32)") && !strings.Contains(objs[2]["source"].(string), "block 3 (") {
		t.Errorf("bundle.pem third key: %v", objs[2])
	}
	der := testkit.ReadFile(t, key("bundle.der"))
	for i, off := range []int{0, 0, 0} {
		_ = off
		o := objs[6+i]
		at := int(o["offset"].(float64))
		if at >= len(der) || der[at] != 0x30 || (i == 0) != (at == 0) {
			t.Errorf("bundle.der object %d at offset %v", i+1, o["offset"])
		}
	}
	// SSH keys: the fingerprint ssh-keygen -l prints, and the comment.
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("no ssh-keygen here")
	}
	for _, name := range []string{"ed25519.pub", "rsa2048.pub"} {
		out, err := exec.Command("ssh-keygen", "-lf", key(name)).Output()
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Fields(string(out))[1] // "256 SHA256:... comment (ED25519)"
		r := runWith(t, nil, "check", exampleFilter, key(name))
		fields := strings.Split(strings.TrimSpace(r.stdout), "\t")
		if len(fields) < 4 || !strings.HasPrefix(fields[3], want) {
			t.Errorf("%s: check says %q, ssh-keygen -l says %s", name, r.stdout, want)
		}
	}
}
