package pkbfbeam

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/pkbf/pkbf/ct/cttest"
)

// CTCheck on the local runner, over ranges of a Static CT log served on
// 127.0.0.1, reports the hits pkbf-ct reports on the same log: every
// planted certificate and precertificate, once, with the same details.
func TestCTCheckMatchesPkbfCT(t *testing.T) {
	fx := cttest.NewFixture(t, 3000, 300, 97)
	dir := t.TempDir()
	fx.WriteStatic(t, filepath.Join(dir, "log"), len(fx.Entries))
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(dir, "log"))))
	defer srv.Close()

	out := filepath.Join(dir, "hits.jsonl")
	p, s := beam.NewPipelineWithRoot()
	ranges, err := CTRanges(context.Background(), s, CTLog{Prefix: srv.URL}, 0, 700)
	if err != nil {
		t.Fatal(err)
	}
	WriteLines(s, out, CTCheck(s, fx.Filter, ranges))
	r := runPipeline(t, p)

	ctCommand := filepath.Join(dir, "pkbf-ct")
	if b, err := exec.Command("go", "build", "-o", ctCommand, "github.com/pkbf/pkbf/ct/cmd/pkbf-ct").CombinedOutput(); err != nil {
		t.Fatalf("building pkbf-ct: %v\n%s", err, b)
	}
	cmd := exec.Command(ctCommand, "--json", "--quiet", "--state", filepath.Join(dir, "state.json"), fx.Filter, srv.URL)
	want, err := cmd.Output()
	if cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("pkbf-ct: %v", err)
	}
	lines := func(b []byte) []string {
		l := strings.Split(strings.TrimSpace(string(b)), "\n")
		slices.Sort(l)
		return l
	}
	got, wantLines := lines(readFile(t, out)), lines(want)
	if !slices.Equal(got, wantLines) {
		t.Errorf("pipeline:\n%s\npkbf-ct:\n%s", strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
	}
	var indexes []int64
	for _, l := range got {
		var h struct{ Index int64 }
		json.Unmarshal([]byte(l), &h)
		indexes = append(indexes, h.Index)
	}
	slices.Sort(indexes)
	var planted []int64
	for i := range fx.Planted {
		planted = append(planted, i)
	}
	slices.Sort(planted)
	if !slices.Equal(indexes, planted) {
		t.Errorf("hits at %v, planted at %v", indexes, planted)
	}
	if c := counter(r, "ct_entries"); c != 3000 {
		t.Errorf("ct_entries %d, want 3000", c)
	}
	if c := counter(r, "ct_hits"); c != int64(len(planted)) {
		t.Errorf("ct_hits %d, want %d", c, len(planted))
	}
}

// Issue 43, item 4: CTRanges asks the log its kind (ct.Open, as pkbf-ct
// does) instead of taking every URL for a Static CT log; an RFC 6962 log
// is refused with an error that says what it is and what scans it.
func TestCTRangesKnowsRFC6962(t *testing.T) {
	fx := cttest.NewFixture(t, 100, 10, 7)
	srv := httptest.NewServer(cttest.NewRFC6962Server(t, fx))
	defer srv.Close()
	_, s := beam.NewPipelineWithRoot()
	_, err := CTRanges(context.Background(), s, CTLog{Prefix: srv.URL}, 0, 0)
	if err == nil || !strings.Contains(err.Error(), srv.URL+" is an RFC 6962 log") || !strings.Contains(err.Error(), "pkbf-ct") {
		t.Errorf("CTRanges on an RFC 6962 log: %v", err)
	}
}
