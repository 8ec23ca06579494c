package pkbfssh_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/pkbfssh"
)

// requireOpenSSH skips without the OpenSSH tool, unless PKBF_REQUIRE_SSHD
// is set (as .ci/run sets it): there a missing tool fails.
func requireOpenSSH(t *testing.T, tools ...string) {
	t.Helper()
	for _, p := range tools {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("PKBF_REQUIRE_SSHD") != "" {
				t.Fatal(p, "is missing (apt-get install openssh-client openssh-server)")
			}
			t.Skip(p, "is missing")
		}
	}
}

// sshKey is a key made by ssh-keygen for the corpus.
type sshKey struct {
	name        string
	typ         string // the type name of its .pub line
	blob        []byte
	fingerprint string // as ssh-keygen -l prints it
	compromised bool   // in the filter (or, for a certificate, its CA)
}

func (k *sshKey) line() string { return k.typ + " " + base64.StdEncoding.EncodeToString(k.blob) }

// corpusKeys makes the corpus's keys with ssh-keygen, and a filter holding
// the compromised ones; security keys come from testdata (ssh-keygen
// needs the hardware to make one).
func corpusKeys(t *testing.T) ([]*sshKey, *pkbf.Writable) {
	dir := t.TempDir()
	run := func(args ...string) string {
		out, err := exec.Command("ssh-keygen", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh-keygen %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	w, err := pkbf.New(4, 20)
	if err != nil {
		t.Fatal(err)
	}
	var ks []*sshKey
	add := func(name, pub string, compromised bool) *sshKey {
		b, err := os.ReadFile(pub)
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b))
		blob, err := base64.StdEncoding.DecodeString(f[1])
		if err != nil {
			t.Fatal(err)
		}
		k := &sshKey{name: name, typ: f[0], blob: blob, compromised: compromised,
			fingerprint: strings.Fields(run("-l", "-f", pub))[1]}
		if compromised {
			if _, err := keycheck.AddKey(w, b); err != nil {
				t.Fatal(err)
			}
		}
		ks = append(ks, k)
		return k
	}
	gen := func(name string, compromised bool, args ...string) string {
		path := filepath.Join(dir, name)
		run(append([]string{"-q", "-N", "", "-C", name, "-f", path}, args...)...)
		add(name, path+".pub", compromised)
		return path
	}
	gen("ed25519-bad", true, "-t", "ed25519")
	gen("ed25519-ok", false, "-t", "ed25519")
	gen("p256-bad", true, "-t", "ecdsa", "-b", "256")
	gen("p384-ok", false, "-t", "ecdsa", "-b", "384")
	gen("p521-bad", true, "-t", "ecdsa", "-b", "521")
	gen("rsa-bad", true, "-t", "rsa", "-b", "1024")
	gen("rsa-ok", false, "-t", "rsa", "-b", "1024")
	gen("dsa-bad", true, "-t", "dsa")
	add("ed25519-sk-bad", "../testdata/keys/ed25519-sk.pub", true)
	add("p256-sk-ok", "../testdata/keys/p256-sk.pub", false)
	// Certificates: of a clean key by a clean CA, of a compromised key,
	// and of a clean key by a compromised CA (compromised too).
	caOK := gen("ca-ok", false, "-t", "ed25519")
	caBad := gen("ca-bad", true, "-t", "ecdsa", "-b", "256")
	cert := func(name, ca string, compromised bool, keyArgs ...string) {
		path := filepath.Join(dir, name)
		run(append([]string{"-q", "-N", "", "-C", name, "-f", path}, keyArgs...)...)
		if compromised && ca != caBad {
			b, _ := os.ReadFile(path + ".pub")
			keycheck.AddKey(w, b)
		}
		run("-q", "-s", ca, "-I", name, "-n", "root", path+".pub")
		add(name, path+"-cert.pub", compromised)
	}
	cert("cert-ok", caOK, false, "-t", "ed25519")
	cert("cert-key-bad", caOK, true, "-t", "rsa", "-b", "1024")
	cert("cert-ca-bad", caBad, true, "-t", "ecdsa", "-b", "384")
	return ks, w
}

// blobString replaces the first SSH string of a blob (its type name).
func withBlobName(blob []byte, name string) []byte {
	n := binary.BigEndian.Uint32(blob)
	out := binary.BigEndian.AppendUint32(nil, uint32(len(name)))
	return append(append(out, name...), blob[4+n:]...)
}

// padFirstMPInt puts zero bytes before the first multiple-precision
// integer after the type name (an RSA or DSA key's), which leaves the key
// as it is.
func padFirstMPInt(blob []byte, zeros int) []byte {
	n := binary.BigEndian.Uint32(blob)
	rest := blob[4+n:]
	m := binary.BigEndian.Uint32(rest)
	out := append([]byte(nil), blob[:4+n]...)
	out = binary.BigEndian.AppendUint32(out, m+uint32(zeros))
	out = append(out, make([]byte, zeros)...)
	return append(out, rest[4:]...)
}

// mutation is one way of writing a key's line differently.
type lineParts struct {
	lead, opts, typ, sep1, b64, sep2, comment, eol string
}

func (p lineParts) String() string {
	s := p.lead
	if p.opts != "" {
		s += p.opts + " "
	}
	return s + p.typ + p.sep1 + p.b64 + p.sep2 + p.comment + p.eol
}

var (
	seps      = []string{" ", "\t", "  ", " \t ", "\v", "\f", "\r", "", " \v"}
	spaces    = []string{" ", "\t", "\v", "\f", "\r", "\r\r", " \t"}
	aliases   = map[string][]string{"ssh-rsa": {"rsa-sha2-256", "rsa-sha2-512", "RSA", "rsa", "SSH-RSA", "ssh-rsa-cert-v01@openssh.com"}, "ssh-ed25519": {"ED25519", "ed25519", "ssh-ed25519-cert-v01@openssh.com", "sk-ssh-ed25519@openssh.com"}, "ecdsa-sha2-nistp256": {"ecdsa-sha2-nistp384", "ECDSA", "sk-ecdsa-sha2-nistp256@openssh.com"}, "ecdsa-sha2-nistp521": {"ecdsa-sha2-nistp256", "ECDSA"}, "ecdsa-sha2-nistp384": {"ecdsa-sha2-nistp521"}, "ssh-dss": {"DSA", "dsa", "ssh-dss-cert-v01@openssh.com"}, "sk-ecdsa-sha2-nistp256@openssh.com": {"webauthn-sk-ecdsa-sha2-nistp256@openssh.com", "ECDSA-SK", "ecdsa-sha2-nistp256"}, "sk-ssh-ed25519@openssh.com": {"ED25519-SK", "ed25519-sk", "ssh-ed25519"}, "ssh-rsa-cert-v01@openssh.com": {"rsa-sha2-256-cert-v01@openssh.com", "rsa-sha2-512-cert-v01@openssh.com", "ssh-rsa", "RSA-CERT"}, "ssh-ed25519-cert-v01@openssh.com": {"ssh-ed25519", "ED25519-CERT"}, "ecdsa-sha2-nistp384-cert-v01@openssh.com": {"ecdsa-sha2-nistp384", "ecdsa-sha2-nistp256-cert-v01@openssh.com"}}
	blobNames = []string{"%s\x00", "%s\x00\x00", "RSA", "rsa", "Ed25519", "ED25519-SK", "dsa", "ECDSA", "rsa-sha2-512", "webauthn-sk-ecdsa-sha2-nistp256@openssh.com", "x%s"}
	options   = []string{"no-pty", `command="echo hi"`, `command="a b c"`, `command="x \"y z\" w",no-pty`, `from="*.example.com",no-agent-forwarding`, `command="abc`, `a\"b`, `"a b"`, `restrict,cert-authority`, `principals="root"`, `environment="A=B C"`, `,`, `no-pty,`, `command="\\"`, `x="\\" y"`}
	comments  = []string{"", "x", "user@host", "# not a comment", "a\tb", "ünïcode", "PRIVATE KEY"}
	longs     = []int{1023, 65535, 65536, 65537, 70000, 200000}
)

// corpus writes hostile lines for each key: the attack report's lines,
// then mutations of white space, type names (on the line and in the
// blob), option quoting, encodings and lengths, and lines that hold two
// keys; seeded, so the same each run.
func corpus(ks []*sshKey) []string {
	rng := rand.New(rand.NewPCG(41, 2026))
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	var lines []string
	var bad, ok []*sshKey
	for _, k := range ks {
		if k.compromised {
			bad = append(bad, k)
		} else {
			ok = append(ok, k)
		}
	}
	for _, k := range ks {
		b64 := base64.StdEncoding.EncodeToString(k.blob)
		// The attack report's lines.
		if k.typ == "ssh-rsa" {
			lines = append(lines, "rsa-sha2-256 "+b64+" x", "rsa-sha2-512 "+b64+" x")
		}
		lines = append(lines, k.typ+" "+b64+" "+strings.Repeat("c", 70000),
			k.typ+" "+b64[:20]+"\v"+b64[20:]+" x", k.typ+" "+b64[:20]+"\f"+b64[20:]+" x")
		for range 260 {
			p := lineParts{typ: k.typ, sep1: " ", b64: b64, sep2: " ", comment: k.name}
			blob := k.blob
			for range 1 + rng.IntN(3) {
				switch rng.IntN(14) {
				case 0:
					p.lead = pick(spaces)
				case 1:
					p.sep1, p.sep2 = pick(seps), pick(seps)
				case 2:
					if a := aliases[k.typ]; a != nil {
						p.typ = pick(a)
					}
				case 3:
					name := pick(blobNames)
					if strings.Contains(name, "%s") {
						name = fmt.Sprintf(name, k.typ)
					}
					blob = withBlobName(blob, name)
				case 4:
					if strings.Contains(k.typ, "rsa") || strings.Contains(k.typ, "dss") {
						if !strings.Contains(k.typ, "cert") {
							blob = padFirstMPInt(blob, 1+rng.IntN(3))
						}
					}
				case 5:
					blob = append(append([]byte(nil), blob...), 0)
				case 6:
					p.opts = pick(options)
				case 7:
					p.comment = pick(comments)
				case 8:
					p.comment = strings.Repeat("c", longs[rng.IntN(len(longs))])
				case 9:
					p.eol = pick([]string{"\r", "\x00", "\x00 " + bad[rng.IntN(len(bad))].line(), " \r\r"})
				case 10: // another key after this one, or before it
					other := ks[rng.IntN(len(ks))].line()
					if rng.IntN(2) == 0 {
						p.comment = other
					} else {
						p.opts = other
					}
				case 11:
					p.lead = pick([]string{"host ", "@cert-authority host ", "1024 ", "#", "\x00", "command=\"" + ok[rng.IntN(len(ok))].line() + "\" "})
				case 12, 13:
					p.b64 = "" // re-encoded below, then mutated
				}
			}
			if p.b64 == "" || !bytes.Equal(blob, k.blob) {
				p.b64 = mutateBase64(rng, base64.StdEncoding.EncodeToString(blob))
			}
			lines = append(lines, p.String())
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, l := range lines {
		if !seen[l] && !strings.Contains(l, "\n") {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// mutateBase64 writes base64 as OpenSSH may or may not read it: white
// space inside, padding taken away or added, bits set after the last
// byte, text after the padding.
func mutateBase64(rng *rand.Rand, s string) string {
	switch rng.IntN(9) {
	case 0, 1: // white space inside
		for range 1 + rng.IntN(4) {
			i := rng.IntN(len(s) + 1)
			s = s[:i] + []string{"\v", "\f", "\r", " ", "\t", "\v\f"}[rng.IntN(6)] + s[i:]
		}
	case 2:
		s = strings.TrimRight(s, "=")
	case 3:
		s += "="
	case 4:
		if strings.HasSuffix(s, "=") {
			s = strings.TrimRight(s, "=")
			c := s[len(s)-1]
			if c != 'z' && c != '/' && c != '+' && c != '9' && c != 'Z' {
				s = s[:len(s)-1] + string(c+1) + strings.Repeat("=", (4-len(s)%4)%4)
			}
		}
	case 5:
		if strings.HasSuffix(s, "==") {
			s = s[:len(s)-1] + "\v="
		}
	case 6:
		s += "=A"
	case 7:
		i := rng.IntN(len(s))
		s = s[:i] + string("!-_.*"[rng.IntN(5)]) + s[i:]
	}
	return s
}

// TestDifferentialSSHKeygen reads a corpus of hostile authorized_keys
// lines with OpenSSH's own parser (ssh-keygen -l -f, which reads lines
// with sshd's sshkey_read and skips options as sshd does) and with
// pkbfssh: FilterLines never keeps a line whose key (by ssh-keygen) the
// filter holds, keeps every line whose key is clean, and the key ParseLine
// finds on a line is the one ssh-keygen finds.
func TestDifferentialSSHKeygen(t *testing.T) {
	requireOpenSSH(t, "/usr/bin/ssh-keygen")
	ks, filter := corpusKeys(t)
	byFP := map[string]*sshKey{}
	for _, k := range ks {
		byFP[k.fingerprint] = k
	}
	lines := corpus(ks)

	// One ssh-keygen run for the whole corpus: a marker key's line
	// (its own key, not in the corpus) before each corpus line says
	// which line the output that follows it belongs to.
	dir := t.TempDir()
	markerPath := filepath.Join(dir, "marker")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", markerPath).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	mb, _ := os.ReadFile(markerPath + ".pub")
	marker := strings.Join(strings.Fields(string(mb))[:2], " ")
	out, _ := exec.Command("ssh-keygen", "-l", "-f", markerPath+".pub").Output()
	markerFP := strings.Fields(string(out))[1]
	var file bytes.Buffer
	file.WriteString("# the corpus\n") // ssh-keygen reads a first line naming a PRIVATE KEY as one
	for i, l := range lines {
		fmt.Fprintf(&file, "%s marker-%d\n%s\n", marker, i, l)
	}
	path := filepath.Join(dir, "corpus")
	os.WriteFile(path, file.Bytes(), 0o644)
	out, err := exec.Command("ssh-keygen", "-l", "-f", path).Output()
	if err != nil {
		t.Fatalf("ssh-keygen -l -f corpus: %v", err)
	}
	oracle := make([]string, len(lines)) // line -> fingerprint ssh-keygen found, or ""
	cur := -1
	for _, o := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		f := strings.Fields(o)
		if len(f) >= 3 && f[1] == markerFP && strings.HasPrefix(f[2], "marker-") {
			fmt.Sscanf(f[2], "marker-%d", &cur)
			continue
		}
		if cur < 0 || len(f) < 2 || oracle[cur] != "" {
			t.Fatalf("ssh-keygen's output cannot be matched to the corpus: %.200q", o)
		}
		oracle[cur] = f[1]
	}

	// A clean key is offered (the marker's), so that cert-authority lines
	// are judged by their key too, as every other line.
	offered, err := pkbfssh.ParseKey(strings.Fields(marker)[0], strings.Fields(marker)[1])
	if err != nil {
		t.Fatal(err)
	}
	var kept bytes.Buffer
	if _, err := pkbfssh.FilterLines(&kept, keycheck.New(filter, keycheck.Options{}), []byte(strings.Join(lines, "\n")+"\n"), offered); err != nil {
		t.Fatal(err)
	}
	keptSet := map[string]bool{}
	for _, l := range strings.Split(kept.String(), "\n") {
		keptSet[l] = true
	}
	var stats struct {
		bad, clean, none, pkbfOnly int
		why                        map[string]int
	}
	stats.why = map[string]int{}
	for i, l := range lines {
		fp, k := oracle[i], byFP[oracle[i]]
		pk, _, perr := pkbfssh.ParseLine([]byte(l))
		switch {
		case fp != "" && k == nil:
			t.Errorf("line %d: ssh-keygen finds a key of no corpus key, %s: %.200q", i, fp, l)
		case fp != "" && (pk == nil || pk.Fingerprint != fp):
			t.Errorf("line %d: ssh-keygen finds %s (%s), pkbfssh %v (%v): %.300q", i, fp, k.name, pk, perr, l)
		case fp != "" && k.compromised:
			stats.bad++
			if keptSet[l] {
				t.Errorf("line %d: kept, and ssh-keygen reads a compromised key (%s) on it: %.300q", i, k.name, l)
			}
		case fp != "":
			stats.clean++
			if !keptSet[l] {
				t.Errorf("line %d: left out, and ssh-keygen reads a clean key (%s) on it: %.300q", i, k.name, l)
			}
		case pk != nil:
			stats.pkbfOnly++
			if why := sshKeygenMisses(l, pk); why == "" {
				t.Errorf("line %d: pkbfssh finds %s (%s), ssh-keygen no key: %.300q", i, pk.Fingerprint, byFP[pk.Fingerprint].name, l)
			} else {
				stats.why[why]++
			}
		default:
			stats.none++
		}
	}
	t.Logf("%d lines: ssh-keygen finds a compromised key on %d, a clean key on %d, no key on %d; pkbfssh alone finds a key on %d: %v",
		len(lines), stats.bad, stats.clean, stats.none, stats.pkbfOnly, stats.why)
}

// sshKeygenMisses says why ssh-keygen finds no key on a line where
// pkbfssh (as sshd) finds one, for the differences known to be
// harmless, or "". In all of them sshd would refuse the line anyway
// (options it does not know, a signature that does not verify).
func sshKeygenMisses(line string, k *pkbfssh.Key) string {
	if k.CA != nil {
		// pkbfssh does not check a certificate's signature; sshd and
		// ssh-keygen refuse a certificate whose blob was changed.
		return "certificate signature"
	}
	l := strings.TrimLeft(strings.SplitN(line, "\x00", 2)[0], " \t")
	opts := firstField(l)
	if strings.TrimLeft(opts, "0123456789") == "" {
		// ssh-keygen does not skip a leading number (an SSH1 key's
		// bits) as options; sshd does, then refuses the options.
		return "leading number"
	}
	if rest := l[len(opts):]; len(rest) > 1 && (rest[1] == ' ' || rest[1] == '\t') {
		// ssh-keygen reads the key right after one blank past the
		// options; sshd skips every blank, then refuses the options.
		return "blanks after options"
	}
	return ""
}

// firstField returns the options field of a line: up to the first blank
// outside quotes.
func firstField(s string) string {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '"':
			i++
		case s[i] == '"':
			quoted = !quoted
		case !quoted && (s[i] == ' ' || s[i] == '\t'):
			return s[:i]
		}
	}
	return s
}
