package pkbf

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pkbf/pkbf/keys"
)

// helpers are the other roles of the test binary, for tests that need a
// second process (a writer beside a reader, a crash): a test starts
// os.Args[0] with the helper's variable set to its argument, and TestMain
// runs the helper instead of the tests. Helpers are not tests, so a plain
// run lists no skipped stand-ins for them.
var helpers = map[string]func(arg string) error{}

func TestMain(m *testing.M) {
	for env, helper := range helpers {
		if arg, ok := os.LookupEnv(env); ok {
			if err := helper(arg); err != nil {
				fmt.Fprintf(os.Stderr, "%s helper: %v\n", env, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// TestHelperProcessesAreNotTests: the test binary lists no helper among its
// tests (issue 43, item 12: they showed as SKIP in every run, their
// reasons hidden by grep).
func TestHelperProcessesAreNotTests(t *testing.T) {
	out, err := exec.Command(os.Args[0], "-test.list", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for name := range strings.FieldsSeq(string(out)) {
		if strings.HasSuffix(name, "Helper") {
			t.Errorf("%s is a test: a helper process belongs in helpers, run by TestMain", name)
		}
	}
}

// addKey adds the key of data under every encoding, as keycheck.AddKey
// does (which the root's tests cannot import: it imports the root), and
// returns how many were new.
func addKey(w *Writable, data []byte) (int, error) {
	spki, err := keys.SPKI(data)
	if err != nil {
		return 0, err
	}
	encs, err := keys.Encodings(spki)
	if err != nil {
		return 0, err
	}
	added := 0
	for _, e := range encs {
		ok, err := w.Add(e)
		if err != nil {
			return added, err
		}
		if ok {
			added++
		}
	}
	return added, nil
}
